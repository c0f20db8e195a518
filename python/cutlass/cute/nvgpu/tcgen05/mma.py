"""`cute.nvgpu.tcgen05.mma`: Blackwell's tensor-core MMA operations (tcgen05.mma). The atoms'
tables, the instruction and shared-memory descriptors and every check are C++
(`cpp/src/cute/atom/mma_sm100.cpp`); an invalid combination, or a target without tcgen05, raises
DSLUserCodeError when the op is made."""
import enum

from .... import _core
from ...._dsl.numeric import Float4E2M1FN, Float8E8M0FNU, Float32, Int32, TFloat32
from ...mma import MmaOp as _MmaOpBase, register_operand_enums
from ..common import OperandMajorMode

_C = _core.cute


class CtaGroup(enum.Enum):
    """How many CTAs one tcgen05 instruction spans: ONE, or TWO (a CTA pair of a cluster)."""
    ONE = 1
    TWO = 2


class OperandSource(enum.Enum):
    """Where operand A of a tcgen05 MMA comes from: shared memory (a descriptor) or tensor memory."""
    SMEM = "smem"
    TMEM = "tmem"


register_operand_enums("tcgen05", OperandSource, OperandMajorMode, CtaGroup)


class Field(enum.Enum):
    """Runtime fields of an MMA atom; `tiled_mma.set(Field.ACCUMULATE, b)` makes the following
    cute.gemm compute D = A*B + D (True) or D = A*B (False)."""
    NEGATE_A = "neg_a"
    NEGATE_B = "neg_b"
    ACCUMULATE = "accum_c"
    SFA = "sf_a"
    SFB = "sf_b"


class SmemLayoutAtomKind(enum.Enum):
    """The canonical shared-memory layout atoms of tcgen05 operands (as wgmma's)."""
    MN_INTER = 0
    MN_SW32 = 1
    MN_SW64 = 2
    MN_SW128 = 3
    K_INTER = 4
    K_SW32 = 5
    K_SW64 = 6
    K_SW128 = 7


_KIND_F16, _KIND_TF32, _KIND_F8F6F4, _KIND_I8 = 0, 1, 2, 3


def _group(cta_group):
    if isinstance(cta_group, CtaGroup):
        return cta_group.value
    raise TypeError(f"cta_group must be a tcgen05.CtaGroup, got {cta_group!r}")


def _source(a_src):
    if isinstance(a_src, OperandSource):
        return int(_C.OperandSource[a_src.name])
    raise TypeError(f"a_src must be a tcgen05.OperandSource, got {a_src!r}")


def _major(mode, which):
    if isinstance(mode, OperandMajorMode):
        return int(_C.OperandMajor[mode.name])
    raise TypeError(f"{which} must be an OperandMajorMode, got {mode!r}")


class MmaOp(_MmaOpBase):
    """Base of the tcgen05 MMA operations."""
    def _build(self, kind, a_dtype, b_dtype, acc_dtype, instruction_shape, cta_group, a_src, a_major_mode,
               b_major_mode):
        self.a_dtype, self.b_dtype, self.acc_dtype = a_dtype, b_dtype, acc_dtype
        self.cta_group, self.a_src = cta_group, a_src
        self.a_major_mode, self.b_major_mode = a_major_mode, b_major_mode
        self._atom = _C.make_tcgen05_mma(kind, a_dtype, b_dtype, acc_dtype, tuple(instruction_shape),
                                         _group(cta_group), _source(a_src), _major(a_major_mode, "a_major_mode"),
                                         _major(b_major_mode, "b_major_mode"))
        self.shape_mnk = tuple(self._atom.shape_mnk)

    def _key(self):
        return (self.a_dtype, self.b_dtype, self.acc_dtype, self.shape_mnk, self.cta_group, self.a_src,
                self.a_major_mode, self.b_major_mode)


class MmaF16BF16Op(MmaOp):
    """tcgen05.mma .kind::f16: Float16/BFloat16 A and B, Float32 (or Float16) accumulators in
    tensor memory; shape (M, N[, 16])."""

    def __init__(self, ab_dtype, acc_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM,
                 a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
        self.ab_dtype = ab_dtype
        self._build(_KIND_F16, ab_dtype, ab_dtype, acc_dtype, instruction_shape, cta_group, a_src, a_major_mode,
                    b_major_mode)


class MmaTF32Op(MmaOp):
    """tcgen05.mma .kind::tf32: TFloat32 (Float32 storage) A and B, Float32 accumulators; shape (M, N[, 8])."""

    def __init__(self, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM,
                 a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
        self._build(_KIND_TF32, TFloat32, TFloat32, Float32, instruction_shape, cta_group, a_src, a_major_mode,
                    b_major_mode)


class MmaI8Op(MmaOp):
    """tcgen05.mma .kind::i8: Int8/Uint8 A and B, Int32 accumulators; shape (M, N[, 32])."""

    def __init__(self, ab_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM,
                 a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
        self.ab_dtype = ab_dtype
        self._build(_KIND_I8, ab_dtype, ab_dtype, Int32, instruction_shape, cta_group, a_src, a_major_mode,
                    b_major_mode)


class MmaFP8Op(MmaOp):
    """tcgen05.mma .kind::f8f6f4 with 8-bit floats: Float8E4M3FN/Float8E5M2 A and B, Float32 (or
    Float16) accumulators; shape (M, N[, 32])."""

    def __init__(self, ab_dtype, acc_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM,
                 a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
        self.ab_dtype = ab_dtype
        self._build(_KIND_F8F6F4, ab_dtype, ab_dtype, acc_dtype, instruction_shape, cta_group, a_src, a_major_mode,
                    b_major_mode)


class MmaF8F6F4Op(MmaOp):
    """tcgen05.mma .kind::f8f6f4 with A and B each its own 8-bit float type."""

    def __init__(self, a_dtype, b_dtype, acc_dtype, instruction_shape, cta_group=CtaGroup.ONE,
                 a_src=OperandSource.SMEM, a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
        self._build(_KIND_F8F6F4, a_dtype, b_dtype, acc_dtype, instruction_shape, cta_group, a_src, a_major_mode,
                    b_major_mode)


_KIND_MXF8F6F4, _KIND_MXF4, _KIND_MXF4NVF4 = 4, 5, 6


class BlockScaledMmaOp(MmaOp):
    """Base of the block-scaled tcgen05 MMAs: D (Float32) += (A * SFA)(B * SFB), one scale factor
    per `sf_vec_size` K elements of a row of A / column of B, the factors in tensor memory at the
    pointers `tiled_mma.set(Field.SFA / Field.SFB, ptr)` names."""
    def _build_scaled(self, kind, a_dtype, b_dtype, sf_dtype, sf_vec_size, instruction_shape, cta_group, a_src,
                      a_major_mode, b_major_mode):
        self.a_dtype, self.b_dtype, self.acc_dtype = a_dtype, b_dtype, Float32
        self.sf_dtype, self.sf_vec_size = sf_dtype, sf_vec_size
        self.cta_group, self.a_src = cta_group, a_src
        self.a_major_mode, self.b_major_mode = a_major_mode, b_major_mode
        self._atom = _C.make_tcgen05_block_scaled_mma(kind, a_dtype, b_dtype, sf_dtype, sf_vec_size,
                                                      tuple(instruction_shape), _group(cta_group), _source(a_src),
                                                      _major(a_major_mode, "a_major_mode"),
                                                      _major(b_major_mode, "b_major_mode"))
        self.shape_mnk = tuple(self._atom.shape_mnk)

    def _key(self):
        return super()._key() + (self.sf_dtype, self.sf_vec_size)


class MmaMXF8Op(BlockScaledMmaOp):
    """tcgen05.mma .kind::mxf8f6f4.block_scale (scale_vec::1X): Float8E4M3FN/Float8E5M2 A and B
    (`ab_dtype`, or `b_dtype` for B), Float8E8M0FNU factors per 32 K elements; shape (128|256, N[, 32])."""

    def __init__(self, ab_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM,
                 a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K, b_dtype=None):
        self.ab_dtype = ab_dtype
        self._build_scaled(_KIND_MXF8F6F4, ab_dtype, b_dtype or ab_dtype, Float8E8M0FNU, 32, instruction_shape,
                           cta_group, a_src, a_major_mode, b_major_mode)


class MmaMXF4Op(BlockScaledMmaOp):
    """tcgen05.mma .kind::mxf4.block_scale (scale_vec::2X): Float4E2M1FN A and B (K-major),
    Float8E8M0FNU factors per 32 K elements; shape (128|256, N[, 64])."""

    def __init__(self, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM):
        self.ab_dtype = Float4E2M1FN
        self._build_scaled(_KIND_MXF4, Float4E2M1FN, Float4E2M1FN, Float8E8M0FNU, 32, instruction_shape, cta_group,
                           a_src, OperandMajorMode.K, OperandMajorMode.K)


class MmaMXF4NVF4Op(BlockScaledMmaOp):
    """tcgen05.mma .kind::mxf4nvf4.block_scale (scale_vec::4X): Float4E2M1FN A and B (K-major),
    `sf_dtype` (Float8E8M0FNU or Float8E4M3FN) factors per 16 K elements; shape (128|256, N[, 64])."""

    def __init__(self, sf_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM):
        self.ab_dtype = Float4E2M1FN
        self._build_scaled(_KIND_MXF4NVF4, Float4E2M1FN, Float4E2M1FN, sf_dtype, 16, instruction_shape, cta_group,
                           a_src, OperandMajorMode.K, OperandMajorMode.K)


class _SM103BlockScaledMmaOp(BlockScaledMmaOp):
    """sm_103's K = 96 fp4 MMAs (cpp/src/cute/atom/mma_sm103.h): .kind::mxf4nvf4.block_scale with
    bit 31 of the instruction descriptor; A and B K-major Float4E2M1FN, read through descriptors
    that continue in a next buffer (make_umma_smem_desc's next_src)."""
    def _build_sm103(self, sf_dtype, sf_vec_size, instruction_shape, cta_group, a_src):
        self.ab_dtype = self.a_dtype = self.b_dtype = Float4E2M1FN
        self.acc_dtype, self.sf_dtype, self.sf_vec_size = Float32, sf_dtype, sf_vec_size
        self.cta_group, self.a_src = cta_group, a_src
        self.a_major_mode = self.b_major_mode = OperandMajorMode.K
        self._atom = _C.make_sm103_block_scaled_mma(sf_dtype, sf_vec_size, tuple(instruction_shape),
                                                    _group(cta_group), _source(a_src))
        self.shape_mnk = tuple(self._atom.shape_mnk)


class SM103MmaMXF4Op(_SM103BlockScaledMmaOp):
    """sm_103's tcgen05.mma .kind::mxf4nvf4.block_scale.scale_vec::2X with K = 96: Float4E2M1FN A and
    B, Float8E8M0FNU factors per 32 K elements (3 per row); shape (128|256, N[, 96])."""

    def __init__(self, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM):
        self._build_sm103(Float8E8M0FNU, 32, instruction_shape, cta_group, a_src)


class SM103MmaMXF4NVF4Op(_SM103BlockScaledMmaOp):
    """sm_103's tcgen05.mma .kind::mxf4nvf4.block_scale.scale_vec::4X with K = 96: Float4E2M1FN A and
    B, `sf_dtype` (Float8E8M0FNU or Float8E4M3FN) factors per 16 K elements (6 per row); shape
    (128|256, N[, 96])."""

    def __init__(self, sf_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM):
        self._build_sm103(sf_dtype, 16, instruction_shape, cta_group, a_src)


def make_umma_smem_desc(src, layout, major, next_src=None, *, loc=None, ip=None):
    """The tcgen05 shared-memory descriptor of the (MN, K) tile `layout` at the smem pointer `src`
    (`major` "k" / "mn" or an OperandMajorMode); `next_src`: the buffer a K = 96 block continues in
    (sm_103, the descriptor's absolute LBO mode). View it with cute.make_tensor(desc, layout) and
    pass that to cute.mma_atom_call as operand A or B."""
    if isinstance(major, OperandMajorMode):
        major = major.name
    if not isinstance(major, str) or major.lower() not in ("k", "mn"):
        raise ValueError(f"make_umma_smem_desc: major must be 'k' or 'mn', got {major!r}")
    m = int(_C.OperandMajor["K" if major.lower() == "k" else "MN"])
    return _C.make_umma_smem_desc(src, layout, m, next_src)


class SM100MmaPeerBitMask(enum.IntEnum):
    ONE = 1
    TWO = 2
