"""Defects that running quack's kernels (issue 23) exposed, each as a small kernel of the same
construct, checked against numpy on the CPU emulator."""
import numpy as np

import cutlass
import cutlass.cute as cute
from cutlass import Int32, const_expr


# ---- a @cute.jit function that calls itself (quack's bitonic_sort) ---------------------------------

@cute.jit
def reverse_range(t: cute.Tensor, lo: cutlass.Constexpr, hi: cutlass.Constexpr):
    """Reverses t[lo:hi] by swapping the ends and recursing on the middle."""
    if const_expr(hi - lo > 1):
        x = t[lo]
        t[lo] = t[hi - 1]
        t[hi - 1] = x
        reverse_range(t, lo + 1, hi - 1)


@cute.kernel
def reverse_kernel(a: cute.Tensor):
    reverse_range(a, 0, 7)


@cute.jit
def reverse_host(a: cute.Tensor):
    reverse_kernel(a).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_recursive_jit_function_calls_itself():
    a = np.arange(8, dtype=np.int32)
    cute.compile(reverse_host, a, options="--target cpu")(a)
    np.testing.assert_array_equal(a, [6, 5, 4, 3, 2, 1, 0, 7])


# ---- a name bound to None, used only under const_expr, inside a dynamic loop (quack's RMSNorm
# backward keeps optional fragments as None) ------------------------------------------------------

@cute.kernel
def optional_fragment_kernel(a: cute.Tensor, out: cute.Tensor, n: Int32, with_sum: cutlass.Constexpr):
    acc = None
    if const_expr(with_sum):
        acc = cute.make_fragment(1, cutlass.Float32)
        acc.fill(0.0)
    for i in cutlass.range(n):
        out[i] = a[i] * 2
        if const_expr(acc is not None):
            acc.fill(acc[0] + a[i])
    if const_expr(acc is not None):
        out[n] = acc[0]


@cute.jit
def optional_fragment_host(a: cute.Tensor, out: cute.Tensor, n: Int32, with_sum: cutlass.Constexpr):
    optional_fragment_kernel(a, out, n, with_sum).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_none_value_passes_through_dynamic_loop():
    for with_sum in (False, True):
        a = np.arange(8, dtype=np.float32)
        out = np.zeros(9, np.float32)
        cute.compile(optional_fragment_host, a, out, Int32(8), with_sum, options="--target cpu")(a, out, Int32(8))
        np.testing.assert_array_equal(out[:8], a * 2)
        assert out[8] == (a.sum() if with_sum else 0)
