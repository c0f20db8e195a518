"""Copy and MMA operations of NVIDIA GPUs (`cute.nvgpu`)."""
from ..tensor import CopyUniversalOp
from . import cpasync, warp
from .cpasync import LoadCacheMode

__all__ = ["CopyUniversalOp", "LoadCacheMode", "cpasync", "warp"]
