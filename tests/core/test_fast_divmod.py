"""cute.FastDivmodDivisor: `//`, `%` and `divmod` by a run-time divisor prepared once (where it is
made, in host code or in the kernel) give Python's floor division for every Int32 dividend —
negative ones, INT_MIN and INT_MAX included — against numpy, on the emulator and on the PTX
executor; a divisor divides without a division instruction; and a divisor is one value to code
that takes a structure apart, also after it has been replaced in a dynamic loop."""
import re

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass.cute.runtime import from_dlpack

import toolchain

THREADS = 128


@cute.kernel
def divisor_made_in_kernel(x: cute.Tensor, q: cute.Tensor, r: cute.Tensor, d: Int32):
    i = cute.arch.thread_idx()[0] + cute.arch.block_idx()[0] * THREADS
    q[i], r[i] = divmod(x[i], cute.FastDivmodDivisor(d))


@cute.kernel
def divisor_passed_in(x: cute.Tensor, q: cute.Tensor, r: cute.Tensor, divisor: cute.FastDivmodDivisor):
    i = cute.arch.thread_idx()[0] + cute.arch.block_idx()[0] * THREADS
    q[i] = x[i] // divisor
    r[i] = x[i] % divisor


@cute.jit
def divide(x: cute.Tensor, q: cute.Tensor, r: cute.Tensor, d: Int32, made_in_kernel: cutlass.Constexpr):
    grid = (x.shape[0] // THREADS, 1, 1)
    if cutlass.const_expr(made_in_kernel):
        divisor_made_in_kernel(x, q, r, d).launch(grid=grid, block=(THREADS, 1, 1))
    else:
        divisor_passed_in(x, q, r, cute.FastDivmodDivisor(d)).launch(grid=grid, block=(THREADS, 1, 1))


def dividends():
    edges = [0, 1, -1, 2**31 - 1, -2**31, -2**31 + 1, 2**30, -2**30, 2**30 - 1, 12345, -7, -49]
    rest = np.random.default_rng(0).integers(-2**31, 2**31, 4 * THREADS - len(edges), dtype=np.int64)
    return np.concatenate([np.array(edges, np.int64), rest]).astype(np.int32)


# Powers of two and their neighbours bound the shift; 2**25 and 2**31 - 1 have a d - 1 that f32
# would round up to the next power of two (the shift is read off d - 1 converted to f64).
DIVISORS = [1, 2, 3, 5, 7, 8, 49, 100, 65535, 65536, 65537, 1000003, 2**24 + 1, 2**25, 2**30 - 1, 2**30,
            2**30 + 1, 2**31 - 2, 2**31 - 1]


@pytest.mark.parametrize("target", ["cpu", "ptx"])
@pytest.mark.parametrize("made_in_kernel", [True, False])
def test_floor_division_for_every_int32(target, made_in_kernel):
    if target == "ptx":
        toolchain.require_libnvvm()
    x = dividends()
    q, r = np.zeros_like(x), np.zeros_like(x)
    args = [from_dlpack(a) for a in (x, q, r)]
    compiled = cute.compile(divide, *args, Int32(1), made_in_kernel, options=f"--target {target}")
    for d in DIVISORS:  # one compiled function: the divisor is a run-time value
        compiled(*args, Int32(d))
        np.testing.assert_array_equal(q, x.astype(np.int64) // d, err_msg=f"quotients by {d}")
        np.testing.assert_array_equal(r, x.astype(np.int64) % d, err_msg=f"remainders by {d}")


def test_a_divisor_divides_without_a_division_instruction():
    """The multiplier is prepared where the divisor is made: in the host program the kernel has no
    division at all; made in the kernel, one 64-bit division prepares it. The dividends' `//` and
    `%` are a multiply-high, an add and shifts (on the GPU a 32-bit division is some 35
    instructions with a float reciprocal)."""
    x = dividends()
    args = [from_dlpack(a) for a in (x, np.zeros_like(x), np.zeros_like(x))]
    prepared = toolchain.ptx_of(cute.compile(divide, *args, Int32(7), False, options="--target ptx"))
    made_in_kernel = toolchain.ptx_of(cute.compile(divide, *args, Int32(7), True, options="--target ptx"))
    assert not re.search(r"\b(div|rem)\.", prepared), prepared
    assert re.findall(r"\b(?:div|rem)\.[su]\d+", made_in_kernel).count("div.u64") == 1, made_in_kernel
    assert not re.search(r"\b(div|rem)\.s32", made_in_kernel), made_in_kernel


def test_a_divisor_is_one_value_to_code_that_takes_it_apart():
    """NVIDIA's MLA helpers rebuild their scheduler parameters from a flat value list, one value per
    FastDivmodDivisor (`new_from_mlir_values(self.split_kv_fdd, (values[5],))`)."""

    @cute.jit
    def count(d: Int32):
        values = cutlass.extract_mlir_values(cute.FastDivmodDivisor(d))
        assert len(values) == 1, values
        again = cutlass.new_from_mlir_values(cute.FastDivmodDivisor(d), values)
        assert isinstance(again, cute.FastDivmodDivisor)

    cute.compile(count, Int32(3), options="--target cpu")


@cute.kernel
def divisor_replaced_in_a_loop(x: cute.Tensor, q: cute.Tensor, divisor: cute.FastDivmodDivisor, d: Int32,
                               times: Int32):
    i = cute.arch.thread_idx()[0] + cute.arch.block_idx()[0] * THREADS
    for _ in cutlass.range(times, unroll=1):
        divisor = cute.FastDivmodDivisor(d)  # FA4's varlen tile loop remakes its divisors like this
    q[i] = x[i] // divisor


@cute.jit
def divide_after_the_loop(x: cute.Tensor, q: cute.Tensor, d_host: Int32, d: Int32, times: Int32):
    divisor_replaced_in_a_loop(x, q, cute.FastDivmodDivisor(d_host), d, times).launch(
        grid=(x.shape[0] // THREADS, 1, 1), block=(THREADS, 1, 1))


@pytest.mark.parametrize("target", ["cpu", "ptx"])
def test_a_divisor_made_in_the_host_program_can_be_replaced_by_one_made_in_the_kernel(target):
    if target == "ptx":
        toolchain.require_libnvvm()
    x = dividends()
    q = np.zeros_like(x)
    args = [from_dlpack(a) for a in (x, q)]
    compiled = cute.compile(divide_after_the_loop, *args, Int32(1), Int32(1), Int32(0), options=f"--target {target}")
    for times, expected in [(0, 7), (2, 1000003)]:
        compiled(*args, Int32(7), Int32(1000003), Int32(times))
        np.testing.assert_array_equal(q, x.astype(np.int64) // expected, err_msg=f"{times} replacements")


def test_a_static_divisor_must_be_positive():
    with pytest.raises(ValueError, match="must be positive, got 0"):
        cute.FastDivmodDivisor(0)
