"""A Python list whose items a dynamic `if` or loop stores (`stats[stage] = (row_sum, ...)`,
`acc[i] += x`) carries those items out of the region as an assigned variable would, and keeps
its identity; `min` / `max` passed as functions take dynamic numbers (FA4's split-KV forward
and its combine kernel). Kernels run on the CPU emulator against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32


@cute.kernel
def stats_kernel(x: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    # As FA4's correction loop: defaults (Python numbers), replaced per stage on one path only.
    stats = [(0.0, True)] * 2
    alias = stats
    if x[t] > 0:
        for s in cutlass.range_constexpr(2):
            stats[s] = (x[t] * (s + 1), x[t] > 5)
    for s in cutlass.range_constexpr(2):
        total, flag = alias[s]
        out[t, s] = total if not flag else Float32(-1.0)


@cute.jit
def stats_host(x: cute.Tensor, out: cute.Tensor):
    stats_kernel(x, out).launch(grid=(1, 1, 1), block=(x.shape[0], 1, 1))


def test_list_items_stored_on_one_path_of_a_dynamic_if():
    x = np.array([-2, 1, 3, 7], np.float32)
    out = np.zeros((4, 2), np.float32)
    cute.compile(stats_host, x, out, options="--target cpu")(x, out)
    # x <= 0 keeps the defaults, whose flag is set, as x > 5 sets it: both read -1.
    flagged = (x <= 0) | (x > 5)
    want = np.where(flagged[:, None], -1.0, x[:, None] * np.array([1, 2])).astype(np.float32)
    np.testing.assert_array_equal(out, want)


@cute.kernel
def sums_kernel(x: cute.Tensor, out: cute.Tensor, n: Int32):
    t, _, _ = cute.arch.thread_idx()
    acc = [Float32(0), Float32(0)]
    for k in range(n):
        for s in cutlass.range_constexpr(2):
            acc[s] += x[t] * (k + s)
    k = Int32(0)
    while k < n:
        if k % 2 == 0:
            acc[1] = acc[1] + Float32(100)
        k += 1
    out[t, 0] = acc[0]
    out[t, 1] = acc[1]


@cute.jit
def sums_host(x: cute.Tensor, out: cute.Tensor, n: Int32):
    sums_kernel(x, out, n).launch(grid=(1, 1, 1), block=(x.shape[0], 1, 1))


def test_list_items_stored_in_dynamic_loops():
    x = np.array([-2, 1, 3, 7], np.float32)
    out = np.zeros((4, 2), np.float32)
    n = 5
    cute.compile(sums_host, x, out, n, options="--target cpu")(x, out, n)
    want = np.stack([x * sum(range(n)), x * sum(k + 1 for k in range(n)) + 100 * len(range(0, n, 2))], axis=1)
    np.testing.assert_array_equal(out, want)


@cute.kernel
def unstable_kernel(x: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    items = [Float32(0)]
    if x[t] > 0:
        items[0] = x


@cute.jit
def unstable_host(x: cute.Tensor):
    unstable_kernel(x).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_list_item_changing_type_in_a_dynamic_if_is_an_error():
    x = np.zeros(4, np.float32)
    with pytest.raises(cutlass.DSLUserCodeError) as e:
        cute.compile(unstable_host, x, options="--target cpu")
    assert e.value.code == "TYPE_UNSTABLE_JOIN" and "variable 'items'" in str(e.value)


@cute.jit
def reduce_with(op, a, b):
    return op(a, b)


@cute.kernel
def min_max_kernel(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    out[t, 0] = reduce_with(max, a[t], b[t])
    out[t, 1] = reduce_with(min, a[t], b[t])


@cute.jit
def min_max_host(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor):
    min_max_kernel(a, b, out).launch(grid=(1, 1, 1), block=(a.shape[0], 1, 1))


def test_min_and_max_passed_as_functions_take_dynamic_numbers():
    a = np.array([3, -1, 7, 0], np.int32)
    b = np.array([2, 4, 7, -5], np.int32)
    out = np.zeros((4, 2), np.int32)
    cute.compile(min_max_host, a, b, out, options="--target cpu")(a, b, out)
    np.testing.assert_array_equal(out, np.stack([np.maximum(a, b), np.minimum(a, b)], axis=1))
