"""Copy and MMA operations of NVIDIA GPUs (`cute.nvgpu`)."""
from ..tensor import CopyUniversalOp

__all__ = ["CopyUniversalOp"]
