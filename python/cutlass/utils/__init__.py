"""`cutlass.utils`: helpers written with DSL operations (shared-memory allocation, layouts, printing)."""
from .print_latex import print_latex, print_latex_tv  # noqa: F401
from .smem_allocator import SmemAllocator, SmemPartition, get_smem_capacity_in_bytes  # noqa: F401
