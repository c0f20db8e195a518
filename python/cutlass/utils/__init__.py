"""cutlass.utils: helpers written with DSL operations (shared-memory allocation, ...)."""
from .smem_allocator import SmemAllocator, SmemPartition, get_smem_capacity_in_bytes
