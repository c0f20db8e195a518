"""`cutlass.utils.gemm`: GEMM building blocks shared by NVIDIA's kernels, by architecture (`sm100`)."""
from . import sm100

__all__ = ["sm100"]
