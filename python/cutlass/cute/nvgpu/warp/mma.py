"""Warp-level MMA atoms (mma.sync, SM80/SM89): `warp.MmaF16BF16Op`, `warp.MmaFP8Op`; and the
block-scaled ones of SM120 (GeForce Blackwell): `warp.MmaMXF4NVF4Op`, `MmaMXF4Op`, `MmaMXF8Op`,
`MmaMXF8F6F4Op`, called as cute.gemm(mma, d, [a, sfa], [b, sfb], c).
The constraints and the atoms' thread-value layouts are C++ (`cpp/src/cute/atom/mma_sm80.cpp`,
`mma_sm120.cpp`); an invalid combination raises DSLUserCodeError when the op is made."""
from ...._dsl.numeric import Float4E2M1FN, Float8E4M3FN, Float8E5M2
from ...mma import MmaOp, _C


class MmaF16BF16Op(MmaOp):
    """mma.sync with Float16/BFloat16 inputs and Float16/Float32 accumulators, shape (16,8,8) or (16,8,16)."""

    def __init__(self, ab_dtype, acc_dtype, shape_mnk):
        self.ab_dtype, self.acc_dtype, self.shape_mnk = ab_dtype, acc_dtype, tuple(shape_mnk)
        self._atom = _C.make_mma_f16bf16(ab_dtype, acc_dtype, self.shape_mnk)

    def _key(self):
        return (self.ab_dtype, self.acc_dtype, self.shape_mnk)


class MmaFP8Op(MmaOp):
    """mma.sync (SM89+) with Float8E4M3FN/Float8E5M2 inputs and Float32 accumulators, shape (16,8,32)."""

    def __init__(self, ab_dtype, acc_dtype, shape_mnk):
        self.ab_dtype, self.acc_dtype, self.shape_mnk = ab_dtype, acc_dtype, tuple(shape_mnk)
        self._atom = _C.make_mma_fp8(ab_dtype, acc_dtype, self.shape_mnk)

    def _key(self):
        return (self.ab_dtype, self.acc_dtype, self.shape_mnk)


# ir::Tcgen05Kind codes of the block-scaled kinds (mma_sm120.h).
_MXF8F6F4, _MXF4, _MXF4NVF4 = 4, 5, 6

# The mixed A/B pairs of MmaMXF8F6F4Op: an fp4 operand with an fp8 one (held a value to a byte).
MXF8F6F4_SUPPORTED_PAIRS = frozenset({(Float4E2M1FN, Float8E4M3FN), (Float4E2M1FN, Float8E5M2),
                                      (Float8E4M3FN, Float4E2M1FN), (Float8E5M2, Float4E2M1FN)})


class _BlockScaledSyncOp(MmaOp):
    _kind = 0

    def __init__(self, a_dtype, b_dtype, acc_dtype, sf_dtype):
        self.a_dtype, self.b_dtype, self.acc_dtype, self.sf_dtype = a_dtype, b_dtype, acc_dtype, sf_dtype
        self._atom = _C.make_mma_block_scaled_sync(self._kind, a_dtype, b_dtype, acc_dtype, sf_dtype, type(self).__name__)
        self.shape_mnk = tuple(self._atom.shape_mnk)
        self.sf_vec_size = self._atom.sf_vec_size

    def _key(self):
        return (type(self).__name__, self.a_dtype, self.b_dtype, self.acc_dtype, self.sf_dtype)


class MmaMXF4NVF4Op(_BlockScaledSyncOp):
    """mma.sync .kind::mxf4nvf4 .scale_vec::4X (sm_120a): Float4E2M1FN inputs, Float32 accumulators,
    a Float8E4M3FN (NVFP4) or Float8E8M0FNU factor per 16 K elements, shape (16,8,64)."""
    _kind = _MXF4NVF4

    def __init__(self, ab_dtype, acc_dtype, sf_dtype):
        super().__init__(ab_dtype, ab_dtype, acc_dtype, sf_dtype)


class MmaMXF4Op(_BlockScaledSyncOp):
    """mma.sync .kind::mxf4 .scale_vec::2X (sm_120a): Float4E2M1FN inputs, a Float8E8M0FNU factor per
    32 K elements, shape (16,8,64)."""
    _kind = _MXF4

    def __init__(self, ab_dtype, acc_dtype, sf_dtype):
        super().__init__(ab_dtype, ab_dtype, acc_dtype, sf_dtype)


class MmaMXF8Op(_BlockScaledSyncOp):
    """mma.sync .kind::mxf8f6f4 .scale_vec::1X (sm_120a) with one 8-bit float type for A and B, a
    Float8E8M0FNU factor per 32 K elements, shape (16,8,32)."""
    _kind = _MXF8F6F4

    def __init__(self, ab_dtype, acc_dtype, sf_dtype):
        super().__init__(ab_dtype, ab_dtype, acc_dtype, sf_dtype)


class MmaMXF8F6F4Op(_BlockScaledSyncOp):
    """mma.sync .kind::mxf8f6f4 .scale_vec::1X (sm_120a) with A and B types of their own (an fp4
    operand is held one value to a byte, in bits 2..5), shape (16,8,32)."""
    _kind = _MXF8F6F4


__all__ = ["MmaF16BF16Op", "MmaFP8Op", "MmaMXF4NVF4Op", "MmaMXF4Op", "MmaMXF8Op", "MmaMXF8F6F4Op",
           "MXF8F6F4_SUPPORTED_PAIRS"]
