"""Copy and MMA operations of NVIDIA GPUs (`cute.nvgpu`)."""
from ..tensor import CopyUniversalOp
from . import cpasync, warp

__all__ = ["CopyUniversalOp", "cpasync", "warp"]
