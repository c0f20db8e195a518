"""`break` and `continue` in dynamic loops (beyond the CuTe DSL, which forbids them): lowered to
structured control flow with flags, checked against the same loops run by Python, in host code
and in kernels on the emulator."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import toolchain


@cute.jit
def first_above(t: cute.Tensor, threshold: cutlass.Float32):
    found = -1
    for i in range(t.shape[0]):
        if t[i] > threshold:
            found = i
            break
    return cutlass.Int32(found)


@cute.jit
def sum_skipping_negatives(t: cute.Tensor):
    acc = cutlass.Float32(0)
    for i in range(t.shape[0]):
        if t[i] < 0:
            continue
        acc = acc + t[i]
    return acc


@cute.jit
def while_with_both(t: cute.Tensor, limit: cutlass.Float32):
    # Adds elements until the sum passes `limit`, skipping odd positions.
    i = cutlass.Int32(0)
    acc = cutlass.Float32(0)
    while i < t.shape[0]:
        i += 1
        if (i - 1) % 2 == 1:
            continue
        acc = acc + t[i - 1]
        if acc > limit:
            break
    return i, acc


@cute.jit
def nested(t: cute.Tensor, rows: cutlass.Int32, cols: cutlass.Int32):
    # For each row, count leading positive entries; stop at the first row that starts with 0.
    total = cutlass.Int32(0)
    for r in range(rows):
        if t[r * cols] == 0:
            break
        for c in range(cols):
            if t[r * cols + c] <= 0:
                break
            total += 1
    return total


def model_first_above(x, th):
    for i, v in enumerate(x):
        if v > th:
            return i
    return -1


def model_while(x, limit):
    i, acc = 0, np.float32(0)
    while i < len(x):
        i += 1
        if (i - 1) % 2 == 1:
            continue
        acc = np.float32(acc + x[i - 1])
        if acc > limit:
            break
    return i, acc


def model_nested(x, rows, cols):
    total = 0
    for r in range(rows):
        if x[r * cols] == 0:
            break
        for c in range(cols):
            if x[r * cols + c] <= 0:
                break
            total += 1
    return total


@pytest.mark.parametrize("seed", range(4))
def test_break_for_matches_python(seed):
    x = np.random.default_rng(seed).standard_normal(20).astype(np.float32)
    for th in (-5.0, 0.5, 1.5, 9.0):
        assert first_above(x, th) == model_first_above(x, np.float32(th))


@pytest.mark.parametrize("seed", range(4))
def test_continue_for_matches_python(seed):
    x = np.random.default_rng(seed).standard_normal(17).astype(np.float32)
    expected = np.float32(0)
    for v in x:
        if v >= 0:
            expected = np.float32(expected + v)
    assert sum_skipping_negatives(x) == pytest.approx(float(expected), rel=1e-6)


@pytest.mark.parametrize("limit", [-1.0, 0.5, 2.0, 100.0])
def test_while_with_break_and_continue(limit):
    x = np.random.default_rng(7).uniform(0, 1, 12).astype(np.float32)
    i, acc = while_with_both(x, limit)
    mi, macc = model_while(x, np.float32(limit))
    assert i == mi
    assert acc == pytest.approx(float(macc), rel=1e-6)


def test_break_leaves_only_the_innermost_loop():
    x = np.array([3, 1, -1, 4,
                  2, 2, 2, 2,
                  5, 0, 1, 1,
                  0, 9, 9, 9,
                  7, 7, 7, 7], np.int32)
    for rows in (1, 2, 3, 5):
        assert nested(x, rows, 4) == model_nested(x, rows, 4)


@cute.kernel
def _count_until_zero(src: cute.Tensor, out: cute.Tensor, width: cutlass.Int32):
    row = cute.arch.thread_idx()[0]
    n = cutlass.Int32(0)
    for c in range(width):
        v = src[row * width + c]
        if v == 0:
            break
        if v < 0:
            continue
        n += 1
    out[row] = n


@cute.jit
def count_until_zero(src: cute.Tensor, out: cute.Tensor, width: cutlass.Int32):
    _count_until_zero(src, out, width).launch(grid=(1, 1, 1), block=(out.shape[0], 1, 1))


def test_break_and_continue_in_a_kernel_on_the_emulator():
    rng = np.random.default_rng(3)
    rows, width = 8, 10
    src = rng.integers(-2, 4, rows * width).astype(np.int32)
    out = np.full(rows, -7, np.int32)
    f = cute.compile(count_until_zero, src, out, width, options="--target cpu")
    f(src, out, width)
    expected = []
    for r in range(rows):
        n = 0
        for v in src[r * width:(r + 1) * width]:
            if v == 0:
                break
            if v < 0:
                continue
            n += 1
        expected.append(n)
    np.testing.assert_array_equal(out, expected)


def test_the_kernel_compiles_to_ptx_for_the_gpu():
    src, out = np.zeros(16, np.int32), np.zeros(2, np.int32)
    compiled = cute.compile(count_until_zero, src, out, 8, options="--target gpu")
    toolchain.ptx_of(compiled)
    assert ".entry" in compiled.__ptx__


@pytest.mark.gpu
def test_break_and_continue_in_a_kernel_on_the_gpu():
    import torch
    rng = np.random.default_rng(5)
    rows, width = 32, 12
    host = rng.integers(-2, 4, rows * width).astype(np.int32)
    src = torch.from_numpy(host).cuda()
    out = torch.full((rows,), -7, dtype=torch.int32, device="cuda")
    count_until_zero(src, out, width)
    torch.cuda.synchronize()
    expected = []
    for r in range(rows):
        n = 0
        for v in host[r * width:(r + 1) * width]:
            if v == 0:
                break
            if v < 0:
                continue
            n += 1
        expected.append(n)
    assert out.cpu().tolist() == expected
