"""cute.arch.warp_redux_sync (PTX redux.sync: 32-bit integer add / min / max / and / or / xor from
sm_80, Float32 min / max with .abs and .NaN on sm_100a), cute.arch.atomic_fmax of non-negative
values (the amax block-scaled GEMM's epilogue) and `_mlir` math.absf of a TensorSSA. Kernels run on
the CPU emulator and are checked against numpy; the PTX for sm_100a goes through the toolchain."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import math as mlir_math

import toolchain

EMU = "--target cpu --gpu-arch sm_100a"
KINDS = ["add", "min", "max", "and", "or", "xor"]


@cute.kernel
def _int_kernel(a: cute.Tensor, u: cute.Tensor, out: cute.Tensor, uout: cute.Tensor, odd: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    for j in cutlass.range_constexpr(len(KINDS)):
        out[tidx, j] = cute.arch.warp_redux_sync(a[tidx], KINDS[j])
    uout[tidx] = cute.arch.warp_redux_sync(u[tidx], "min")  # unsigned order
    if tidx % 2 == 1:
        odd[tidx] = cute.arch.warp_redux_sync(a[tidx], "add", 0xAAAAAAAA)  # the odd lanes among themselves


@cute.kernel
def _float_kernel(x: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    v = x[tidx]
    out[tidx, 0] = cute.arch.warp_redux_sync(v, "fmax")
    out[tidx, 1] = cute.arch.warp_redux_sync(v, "fmin")
    out[tidx, 2] = cute.arch.warp_redux_sync(v, "fmax", abs=True)
    out[tidx, 3] = cute.arch.warp_redux_sync(v, "fmax", nan=True)


@cute.jit
def _ints(a: cute.Tensor, u: cute.Tensor, out: cute.Tensor, uout: cute.Tensor, odd: cute.Tensor):
    _int_kernel(a, u, out, uout, odd).launch(grid=(1, 1, 1), block=(64, 1, 1))


@cute.jit
def _floats(x: cute.Tensor, out: cute.Tensor):
    _float_kernel(x, out).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_integer_redux_over_each_warp():
    rng = np.random.default_rng(2)
    a = rng.integers(-1000, 1000, 64).astype(np.int32)
    u = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    u[5] = 0xFFFFFFFF  # the largest unsigned, -1 if read signed
    out, uout, odd = np.zeros((64, 6), np.int32), np.zeros(64, np.uint32), np.zeros(64, np.int32)
    cute.compile(_ints, a, u, out, uout, odd, options=EMU)(a, u, out, uout, odd)
    for w in range(2):
        lanes = a[32 * w:32 * w + 32]
        want = [lanes.sum(), lanes.min(), lanes.max(), np.bitwise_and.reduce(lanes), np.bitwise_or.reduce(lanes),
                np.bitwise_xor.reduce(lanes)]
        np.testing.assert_array_equal(out[32 * w:32 * w + 32], np.tile(np.array(want, np.int32), (32, 1)))
        assert (uout[32 * w:32 * w + 32] == u[32 * w:32 * w + 32].min()).all()
        assert (odd[32 * w + 1:32 * w + 32:2] == lanes[1::2].sum()).all()


def test_float_redux_min_max_abs_and_nan():
    x = np.linspace(-9, 5, 32).astype(np.float32)
    x[3] = np.nan
    out = np.zeros((32, 4), np.float32)
    cute.compile(_floats, x, out, options=EMU)(x, out)
    finite = x[~np.isnan(x)]
    np.testing.assert_array_equal(out[:, 0], finite.max())  # NaN ignored without .NaN
    np.testing.assert_array_equal(out[:, 1], finite.min())
    np.testing.assert_array_equal(out[:, 2], np.abs(finite).max())
    assert np.isnan(out[:, 3]).all()


def test_redux_ptx_for_sm100a():
    x, out = np.zeros(32, np.float32), np.zeros((32, 4), np.float32)
    f = cute.compile(_floats, x, out, options="--gpu-arch sm_100a")
    ptx = toolchain.ptx_of(f)
    for insn in ("redux.sync.max.f32", "redux.sync.min.f32", "redux.sync.max.abs.f32", "redux.sync.max.NaN.f32"):
        assert insn in ptx, insn
    toolchain.require_cubin()
    assert f.__cubin__


def test_float_redux_needs_sm100a():
    x, out = np.zeros(32, np.float32), np.zeros((32, 4), np.float32)
    with pytest.raises(cutlass.DSLUserCodeError, match=r"redux.sync .f32\) needs sm_100a"):
        cute.compile(_floats, x, out, options="--target cpu --gpu-arch sm_90a")


# ---- atomic_fmax and absf: a block's amax of |x| -------------------------------------------------

@cute.kernel
def _amax_kernel(x: cute.Tensor, amax: cute.Tensor):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    frag = cute.make_rmem_tensor((4,), cutlass.Float32)
    for j in cutlass.range_constexpr(4):
        frag[j] = x[(bidx * 128 + tidx) * 4 + j]
    vals = frag.load()
    mags = type(vals)(mlir_math.absf(vals.ir_value()), vals.shape, vals.dtype)  # as the amax example does
    m = mags.reduce(cute.ReductionOp.MAX, cutlass.Float32(0.0), 0)
    cute.arch.atomic_fmax(amax.iterator, m, sign_bit=False)


@cute.jit
def _amax(x: cute.Tensor, amax: cute.Tensor):
    _amax_kernel(x, amax).launch(grid=(cute.size(x) // 512, 1, 1), block=(128, 1, 1))


def test_atomic_fmax_of_absolute_values():
    x = np.random.default_rng(4).normal(size=4 * 512).astype(np.float32)
    amax = np.zeros(1, np.float32)
    cute.compile(_amax, x, amax, options=EMU)(x, amax)
    assert amax[0] == np.abs(x).max()


def test_atomic_fmax_ptx():
    x, amax = np.zeros(512, np.float32), np.zeros(1, np.float32)
    f = cute.compile(_amax, x, amax, options="--gpu-arch sm_100a")
    assert "atom.relaxed.gpu.max.s32" in toolchain.ptx_of(f)
    toolchain.require_cubin()
    assert f.__cubin__


@cute.kernel
def _signed_max_kernel(x: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    cute.arch.atomic_fmax(out.iterator, x[tidx])


@cute.jit
def _signed_max(x: cute.Tensor, out: cute.Tensor):
    _signed_max_kernel(x, out).launch(grid=(1, 1, 1), block=(64, 1, 1))


@pytest.mark.parametrize("shift", [0.0, -10.0])  # mixed signs; all negative
def test_atomic_fmax_of_values_of_either_sign(shift):
    # As NVIDIA's mixed-input decode keeps a column max of scores (initialised to -inf).
    x = (np.random.default_rng(5).normal(size=64) + shift).astype(np.float32)
    out = np.full(1, -np.inf, np.float32)
    cute.compile(_signed_max, x, out, options=EMU)(x, out)
    assert out[0] == x.max()
    f = cute.compile(_signed_max, x, out, options="--gpu-arch sm_100a")
    ptx = toolchain.ptx_of(f)
    assert "atom.relaxed.gpu.max.s32" in ptx and "atom.relaxed.gpu.min.u32" in ptx
