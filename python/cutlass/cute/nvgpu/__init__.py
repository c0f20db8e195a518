"""Copy and MMA operations of NVIDIA GPUs (`cute.nvgpu`)."""
from ..tensor import CopyUniversalOp
from ..mma import MmaUniversalOp
from . import cpasync, warp

__all__ = ["CopyUniversalOp", "MmaUniversalOp", "cpasync", "warp"]
