"""cutlass.pipeline: synchronisation objects of NVIDIA's kernels."""
from .named_barrier import NamedBarrier

__all__ = ["NamedBarrier"]
