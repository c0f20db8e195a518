"""warpgroup.MmaI8Op (Int8/Uint8 wgmma with Int32 accumulators): its shape and type rules, and through
make_trivial_tiled_mma the integer GEMM of NVIDIA's dense_gemm.py (tests/examples/test_hopper_gemm_examples.py
runs it on the emulator against numpy and checks its PTX)."""
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup
from cutlass.cute import DSLUserCodeError

K_MAJOR, MN_MAJOR = OperandMajorMode.K, OperandMajorMode.MN


def test_int8_op_constraints_raise():
    with pytest.raises(DSLUserCodeError, match="acc_dtype must be Int32"):
        warpgroup.MmaI8Op(cutlass.Int8, cutlass.Int8, cutlass.Float32, (64, 64))
    with pytest.raises(DSLUserCodeError, match="a_dtype must be Int8 or Uint8"):
        warpgroup.MmaI8Op(cutlass.Float16, cutlass.Int8, cutlass.Int32, (64, 64))
    # PTX's integer wgmma shapes: N = 8, 24 or a multiple of 16.
    with pytest.raises(DSLUserCodeError, match="N must be 8, 24 or a multiple of 16"):
        warpgroup.MmaI8Op(cutlass.Int8, cutlass.Uint8, cutlass.Int32, (64, 40))
    with pytest.raises(DSLUserCodeError, match="8-bit operands must be K-major"):
        warpgroup.MmaI8Op(cutlass.Int8, cutlass.Int8, cutlass.Int32, (64, 64), b_major_mode=MN_MAJOR)
    for n in (8, 24, 48, 256):
        assert warpgroup.MmaI8Op(cutlass.Uint8, cutlass.Int8, cutlass.Int32, (64, n)).shape_mnk == (64, n, 32)


def test_trivial_tiled_mma_picks_the_integer_op():
    mma = sm90_utils.make_trivial_tiled_mma(cutlass.Int8, cutlass.Uint8, K_MAJOR, K_MAJOR, cutlass.Int32, (2, 1, 1),
                                            (64, 128))
    assert cute.size(mma.shape_mnk, mode=[2]) == 32
    assert cute.size(mma.shape_mnk, mode=[1]) == 128
