"""Copy and MMA operations of NVIDIA GPUs (`cute.nvgpu`)."""
from ..tensor import CopyUniversalOp
from ..mma import MmaUniversalOp
from . import cpasync, tcgen05, warp, warpgroup
from .cache_hints import CacheEvictionPriority
from .common import OperandMajorMode
from .cpasync import LoadCacheMode
from .operand_tma import make_tiled_tma_atom_A, make_tiled_tma_atom_B

__all__ = ["CopyUniversalOp", "MmaUniversalOp", "LoadCacheMode", "CacheEvictionPriority", "OperandMajorMode", "cpasync", "tcgen05", "warp", "warpgroup",
           "make_tiled_tma_atom_A", "make_tiled_tma_atom_B"]
