"""Warp-level MMA atoms (mma.sync, SM80/SM89): `warp.MmaF16BF16Op`, `warp.MmaFP8Op`.
The constraints and the atoms' thread-value layouts are C++ (`cpp/src/cute/atom/mma_sm80.cpp`);
an invalid combination raises DSLUserCodeError when the op is made."""
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


__all__ = ["MmaF16BF16Op", "MmaFP8Op"]
