"""The integer operations of FA4's causal mask in the NVVM lowering: shifts by a run-time amount,
`//` by a power of two, and single-bit tests.

A 32-bit shift by a variable amount is PTX's own shl.b32 / shr.s32 / shr.u32, which clamp the
amount (read as unsigned) to 32, as OpenCuTe's integer semantics ask: 0 for `<<` and a logical
`>>`, the sign for an arithmetic one. LLVM's shifts are poison there, and the compare and select
that guarded them stayed in the SASS of FA4's causal mask (`(1 << limit) - 1`). A signed `//` by
a positive power of two is an arithmetic shift right, where sdiv / srem / select left five
instructions. A test `Boolean(x & (1 << k))` stays and.b32 + setp.ne, which ptxas turns into R2P
(seven bits at once), where LLVM's own forms of the bit-0 and bit-15 tests cost two instructions
each in the SASS. Each kernel runs on the PTX executor and on the IR emulator, both checked against
numpy, and its PTX has the expected shape."""
import re

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from ptx_target import assert_same_on_both_targets, needs_libnvvm, run_on_both_targets

pytestmark = needs_libnvvm

N = 32
# In range, the width itself, past it, and negative amounts (huge when read as unsigned).
AMOUNTS = [0, 1, 5, 23, 24, 31, 32, 33, 40, 64, 1000, -1, -24, -32, np.iinfo(np.int32).min, 3, 7, 30]


@cute.kernel
def shift_kernel(x: cute.Tensor, s: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    v = x[tidx]
    amount = s[tidx]
    out[tidx, 0] = v << amount
    out[tidx, 1] = v >> amount
    out[tidx, 2] = (1 << amount) - 1  # FA4's mask_r2p bit mask


@cute.jit
def shift(x: cute.Tensor, s: cute.Tensor, out: cute.Tensor):
    shift_kernel(x, s, out).launch(grid=(1, 1, 1), block=(N, 1, 1))


def shift_model(x, s, dtype):
    """OpenCuTe's rule: an amount outside [0, width) gives 0, or the sign for an arithmetic >>."""
    bits = np.iinfo(dtype).bits
    signed = np.iinfo(dtype).min < 0
    out = np.zeros((N, 3), dtype)
    for i, (v, a) in enumerate(zip(x.tolist(), s.tolist())):
        in_range = 0 <= a < bits
        mask = (1 << bits) - 1
        shl = (v << a) & mask if in_range else 0
        if signed:
            shr = v >> a if in_range else (-1 if v < 0 else 0)
        else:
            shr = v >> a if in_range else 0
        ones = ((1 << a) - 1) & mask if in_range else mask
        out[i] = [np.array(w & mask, np.uint64).astype(dtype) for w in (shl, shr, ones)]
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_shifts_by_run_time_amounts_clamp_on_both_targets(dtype):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    x[:4] = [info.min, info.max, 1, 0]
    s = np.array([AMOUNTS[i % len(AMOUNTS)] for i in range(N)], np.int64)
    if info.min == 0:
        s = s.astype(np.uint64).astype(dtype)  # the same bits, read as unsigned
    s = s.astype(dtype)
    out = np.zeros((N, 3), dtype)
    emulated, executed = run_on_both_targets(shift, [x, s, out])
    np.testing.assert_array_equal(executed[2], shift_model(x, s.astype(np.int64) if info.min < 0 else s, dtype))
    assert_same_on_both_targets(emulated, executed)


def test_a_32_bit_shift_by_a_variable_amount_is_one_ptx_shift_without_a_guard():
    x = np.zeros(N, np.int32)
    s = np.zeros(N, np.int32)
    out = np.zeros((N, 3), np.int32)
    ptx = cute.compile(shift, x, s, out, options="--target ptx").__ptx__
    body = ptx[ptx.index(".entry"):]
    assert re.search(r"shl\.b32\s+%r\d+, %r\d+, %r\d+;", body), body
    assert re.search(r"shr\.s32\s+%r\d+, %r\d+, %r\d+;", body), body
    assert "setp.lt.u32" not in body and "selp" not in body, body  # no amount-in-range guard


@cute.kernel
def floordiv_kernel(x: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    v = x[tidx]
    out[tidx, 0] = v // 8
    out[tidx, 1] = v // 2
    out[tidx, 2] = v // 1
    out[tidx, 3] = v // 1024
    out[tidx, 4] = v // -8  # a negative power of two keeps the general path
    out[tidx, 5] = v // 6


@cute.jit
def floordiv(x: cute.Tensor, out: cute.Tensor):
    floordiv_kernel(x, out).launch(grid=(1, 1, 1), block=(N, 1, 1))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_floor_division_by_powers_of_two_on_both_targets(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(11)
    x = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    x[:12] = [info.min, info.min + 1, -1025, -1024, -9, -8, -7, -1, 0, 7, 8, info.max]
    out = np.zeros((N, 6), dtype)
    emulated, executed = run_on_both_targets(floordiv, [x, out])
    want = np.stack([np.floor_divide(x, dtype(d)) for d in (8, 2, 1, 1024, -8, 6)], axis=1)
    np.testing.assert_array_equal(executed[1], want)
    assert_same_on_both_targets(emulated, executed)


def test_signed_floor_division_by_a_power_of_two_is_an_arithmetic_shift():
    x = np.zeros(N, np.int32)
    out = np.zeros((N, 6), np.int32)
    ptx = cute.compile(floordiv, x, out, options="--target ptx").__ptx__
    body = ptx[ptx.index(".entry"):]
    # From the load of v to the store of `v // 1024`: three shifts (`v // 1` is v), nothing else.
    pow2_part = body[body.index("ld.global.u32"):body.index("+12]")]
    assert [k for k in (3, 1, 10) if re.search(rf"shr\.s32\s+%r\d+, %r\d+, {k};", pow2_part)] == [3, 1, 10], body
    assert len(re.findall(r"\bshr\.s32\b", pow2_part)) == 3, pow2_part
    assert not re.search(r"\b(and|sub|setp|selp|div|rem)\.", pow2_part), pow2_part


@cute.kernel
def bit_test_kernel(m: cute.Tensor, x: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    mask = m[tidx]
    for i in cutlass.range_constexpr(32):  # FA4's mask_r2p: one bit of a run-time mask per column
        out[tidx, i] = x[tidx, i] if cutlass.Boolean(mask & (1 << i)) else -cutlass.Float32.inf


@cute.jit
def bit_test(m: cute.Tensor, x: cute.Tensor, out: cute.Tensor):
    bit_test_kernel(m, x, out).launch(grid=(1, 1, 1), block=(N, 1, 1))


def bit_test_arrays():
    rng = np.random.default_rng(5)
    m = rng.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max, N, dtype=np.int32, endpoint=True)
    m[:4] = [0, -1, 1 << 15, np.iinfo(np.int32).min]
    x = rng.standard_normal((N, 32)).astype(np.float32)
    return m, x, np.zeros((N, 32), np.float32)


def test_single_bit_tests_select_on_both_targets():
    m, x, out = bit_test_arrays()
    emulated, executed = run_on_both_targets(bit_test, [m, x, out])
    bits = (m.view(np.uint32)[:, None] >> np.arange(32, dtype=np.uint32)) & 1
    np.testing.assert_array_equal(executed[2], np.where(bits == 1, x, -np.inf).astype(np.float32))
    assert_same_on_both_targets(emulated, executed)


def test_every_single_bit_test_is_an_and_and_a_setp_ne():
    ptx = cute.compile(bit_test, *bit_test_arrays(), options="--target ptx").__ptx__
    body = ptx[ptx.index(".entry"):]
    tested = re.findall(r"and\.b32\s+(%r\d+), %r\d+, 0x([0-9a-f]{8});", body)
    # Bits 0 to 30 (bit 31 of an Int32 is its sign, tested by one setp either way).
    assert sorted(int(b, 16) for _, b in tested) == [1 << i for i in range(31)], body
    for reg, _ in tested:
        assert re.search(rf"setp\.(ne|eq)\.s32\s+%p\d+, {reg}, 0;", body), (reg, body)
    # LLVM's forms of the bit-0 and bit-15 tests, which ptxas does not make R2P of
    assert not re.search(r"setp\.eq\.b32\s+%p\d+, %r\d+, 1;|setp\.lt\.s16", body), body
