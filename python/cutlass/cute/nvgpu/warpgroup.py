"""Warpgroup MMA (`cute.nvgpu.warpgroup`, SM90 wgmma): the atoms, the shared-memory layout atoms
their operands use, and the wgmma fence / commit / wait. The atoms' tables, the descriptor
construction and every check are C++ (`cpp/src/cute/atom/mma_sm90.cpp`); an invalid combination,
or a target other than sm_90a, raises DSLUserCodeError when the op is made."""
import enum

from ..mma import MmaOp, _C, register_operand_enums
from .common import OperandMajorMode


class OperandSource(enum.Enum):
    """Where operand A of a warpgroup MMA comes from: shared memory (a descriptor) or registers."""
    SMEM = "smem"
    RMEM = "rmem"


register_operand_enums("warpgroup", OperandSource, OperandMajorMode)


class Field(enum.Enum):
    """Runtime fields of an MMA atom: `tiled_mma.set(Field.ACCUMULATE, b)` makes the following
    `cute.gemm` compute D = A*B + D (True) or D = A*B (False)."""
    ACCUMULATE = "accum_c"


class SmemLayoutAtomKind(enum.Enum):
    """The canonical shared-memory layout atoms of wgmma operands: MN- or K-major, with no swizzle
    (INTER) or a 32 / 64 / 128-byte swizzle."""
    MN_INTER = 0
    MN_SW32 = 1
    MN_SW64 = 2
    MN_SW128 = 3
    K_INTER = 4
    K_SW32 = 5
    K_SW64 = 6
    K_SW128 = 7


def _source(a_src):
    if isinstance(a_src, OperandSource):
        return int(_C.OperandSource[a_src.name])
    raise TypeError(f"a_src must be a warpgroup.OperandSource, got {a_src!r}")


def _major(mode, which):
    if isinstance(mode, OperandMajorMode):
        return int(_C.OperandMajor[mode.name])
    raise TypeError(f"{which} must be an OperandMajorMode, got {mode!r}")


class MmaF16BF16Op(MmaOp):
    """wgmma with Float16/BFloat16 inputs and Float16/Float32 accumulators, instruction shape
    (64, N) or (64, N, 16), N a multiple of 8 in [8, 256]."""

    def __init__(self, ab_dtype, acc_dtype, instruction_shape, a_src=OperandSource.SMEM,
                 a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
        self.ab_dtype, self.acc_dtype = ab_dtype, acc_dtype
        self.shape_mnk = tuple(instruction_shape) if len(instruction_shape) == 3 else (*instruction_shape, 16)
        self.a_src, self.a_major_mode, self.b_major_mode = a_src, a_major_mode, b_major_mode
        self._atom = _C.make_wgmma_f16bf16(ab_dtype, acc_dtype, tuple(instruction_shape), _source(a_src),
                                           _major(a_major_mode, "a_major_mode"), _major(b_major_mode, "b_major_mode"))

    def _key(self):
        return (self.ab_dtype, self.acc_dtype, self.shape_mnk, self.a_src, self.a_major_mode, self.b_major_mode)


class MmaF8Op(MmaOp):
    """wgmma with Float8E4M3FN/Float8E5M2 inputs (A and B each its own) and Float32/Float16
    accumulators, instruction shape (64, N) or (64, N, 32); K-major operands."""

    def __init__(self, a_dtype, b_dtype, acc_dtype, instruction_shape, a_src=OperandSource.SMEM,
                 a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
        self.a_dtype, self.b_dtype, self.acc_dtype = a_dtype, b_dtype, acc_dtype
        self.shape_mnk = tuple(instruction_shape) if len(instruction_shape) == 3 else (*instruction_shape, 32)
        self.a_src, self.a_major_mode, self.b_major_mode = a_src, a_major_mode, b_major_mode
        self._atom = _C.make_wgmma_f8(a_dtype, b_dtype, acc_dtype, tuple(instruction_shape), _source(a_src),
                                      _major(a_major_mode, "a_major_mode"), _major(b_major_mode, "b_major_mode"))

    def _key(self):
        return (self.a_dtype, self.b_dtype, self.acc_dtype, self.shape_mnk, self.a_src, self.a_major_mode,
                self.b_major_mode)


class MmaI8Op(MmaOp):
    """wgmma with Int8/Uint8 inputs (A and B each its own) and Int32 accumulators, instruction shape
    (64, N) or (64, N, 32), N = 8, 24 or a multiple of 16 up to 256; K-major operands."""

    def __init__(self, a_dtype, b_dtype, acc_dtype, instruction_shape, a_src=OperandSource.SMEM,
                 a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
        self.a_dtype, self.b_dtype, self.acc_dtype = a_dtype, b_dtype, acc_dtype
        self.shape_mnk = tuple(instruction_shape) if len(instruction_shape) == 3 else (*instruction_shape, 32)
        self.a_src, self.a_major_mode, self.b_major_mode = a_src, a_major_mode, b_major_mode
        self._atom = _C.make_wgmma_i8(a_dtype, b_dtype, acc_dtype, tuple(instruction_shape), _source(a_src),
                                      _major(a_major_mode, "a_major_mode"), _major(b_major_mode, "b_major_mode"))

    def _key(self):
        return (self.a_dtype, self.b_dtype, self.acc_dtype, self.shape_mnk, self.a_src, self.a_major_mode,
                self.b_major_mode)


def make_smem_layout_atom(kind, element_type, *, loc=None, ip=None):
    """The swizzle atom `S<B,4,3> o 0 o (C,8):(1,C)` (MN kinds) or `(8,C):(C,1)` (K kinds), C being
    128 << B bits of `element_type`. The swizzle acts on byte addresses: give it to the smem
    tensor's pointer (`get_tensor(layout.outer, swizzle=layout.inner)`)."""
    if not isinstance(kind, SmemLayoutAtomKind):
        raise TypeError(f"make_smem_layout_atom: expected a SmemLayoutAtomKind, got {kind!r}")
    return _C.make_smem_layout_atom(int(_C.SmemLayoutAtomKind[kind.name]), element_type)


def fence(*, loc=None, ip=None):
    """wgmma.fence: register accesses before it are ordered before the following wgmma."""
    _C.warpgroup_fence()


def commit_group(*, loc=None, ip=None):
    """wgmma.commit_group: the wgmma issued since the last commit form one group."""
    _C.warpgroup_commit_group()


def wait_group(group, *, loc=None, ip=None):
    """wgmma.wait_group N: waits until at most `group` committed groups are still pending."""
    try:
        count = int(group)
    except TypeError:
        raise TypeError(f"wait_group needs a static int number of groups, got {type(group).__name__}") from None
    _C.warpgroup_wait_group(count)


__all__ = ["OperandMajorMode", "OperandSource", "Field", "SmemLayoutAtomKind", "MmaF16BF16Op", "MmaF8Op", "MmaI8Op",
           "make_smem_layout_atom", "fence", "commit_group", "wait_group"]
