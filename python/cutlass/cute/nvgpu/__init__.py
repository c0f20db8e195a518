"""Copy and MMA operations of NVIDIA GPUs (`cute.nvgpu`)."""
from ..tensor import CopyUniversalOp
from ..mma import MmaUniversalOp
from . import cpasync, tcgen05, warp, warpgroup
from .common import OperandMajorMode
from .cpasync import LoadCacheMode

__all__ = ["CopyUniversalOp", "MmaUniversalOp", "LoadCacheMode", "OperandMajorMode", "cpasync", "tcgen05", "warp", "warpgroup"]
