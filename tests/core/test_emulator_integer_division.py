"""Integer `%` (C's truncating remainder, as CUDA's) and `//` (floor division) on the emulator, for
Int32, Uint32 and Int64: the emulator runs them on a fast path chosen once per warp instruction by
type and op (scalar_ops.cpp), and falls back to the general evaluation for a zero divisor (which it
reports). Checked against numpy for static and run-time divisors, divisors that differ between
lanes, negative ones, on dividends with both signs and the type's extremes."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute

N = 64  # two warps


@cute.kernel
def divide_kernel(a: cute.Tensor, d: cute.Tensor, p: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    x = a[tidx]
    y = d[tidx]
    q = p[0]  # the same run-time power of two in every lane
    out[tidx, 0] = x % 8
    out[tidx, 1] = x // 8
    out[tidx, 2] = x % q
    out[tidx, 3] = x // q
    out[tidx, 4] = x % y
    out[tidx, 5] = x // y


@cute.jit
def divide(a: cute.Tensor, d: cute.Tensor, p: cute.Tensor, out: cute.Tensor):
    divide_kernel(a, d, p, out).launch(grid=(1, 1, 1), block=(N, 1, 1))


def trunc_rem(x, y):
    return np.fmod(x, y)  # the remainder's sign is the dividend's, as C's %


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_rem_and_floordiv_match_numpy(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    special = [info.min, info.min + 1, -9, -8, -7, -1, 0, 1, 7, 8, 9, info.max - 1, info.max]
    a = np.array([v for v in special if info.min <= v <= info.max] * 2, dtype=dtype)
    a = np.concatenate([a, rng.integers(info.min, info.max, N - a.size, dtype=dtype, endpoint=True)])
    divisors = [1, 2, 3, 4, 5, 8, 16, 1 << 20, 7, 1000] + ([] if info.min == 0 else [-1, -2, -8, -3, -7])
    d = np.array([divisors[i % len(divisors)] for i in range(N)], dtype=dtype)
    if info.min < 0:
        d[(a == info.min) & (d == -1)] = 3  # INT_MIN / -1 overflows
    p = np.array([16], dtype=dtype)
    out = np.zeros((N, 6), dtype=dtype)
    cute.compile(divide, a, d, p, out, options="--target cpu")(a, d, p, out)
    with np.errstate(over="ignore"):
        want = np.stack([trunc_rem(a, dtype(8)), np.floor_divide(a, dtype(8)),
                         trunc_rem(a, p[0]), np.floor_divide(a, p[0]),
                         trunc_rem(a, d), np.floor_divide(a, d)], axis=1).astype(dtype)
    np.testing.assert_array_equal(out, want)


def test_division_by_zero_is_still_reported():
    a = np.arange(N, dtype=np.int32)
    d = np.ones(N, dtype=np.int32)
    d[37] = 0
    p = np.array([16], dtype=np.int32)
    out = np.zeros((N, 6), dtype=np.int32)
    with pytest.raises(Exception, match="division by zero"):
        cute.compile(divide, a, d, p, out, options="--target cpu")(a, d, p, out)
