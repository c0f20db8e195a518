"""Blackwell tensor memory on the PTX executor ("--target ptx"): tcgen05.alloc / dealloc /
relinquish_alloc_permit and tcgen05.st then tcgen05.ld in each shape (32x32b, 16x64b, 16x128b,
16x256b, 16x32bx2, with .pack::16b / .unpack::16b). The kernels are test_tmem_sm100.py's round
trips: each result is checked against numpy (the values come back where they started) and
against the IR emulator's.

These are the tests that fail when the NVVM lowering binds tcgen05.ld's destination registers in
the wrong order or passes the wrong tensor-memory address: the IR emulator never sees the
lowering."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05
from ptx_target import assert_same_on_both_targets, needs_libnvvm, run_on_both_targets
from test_tmem_sm100 import COLS, run_alloc, run_overrun, run_roundtrip

pytestmark = needs_libnvvm
SM100 = "--gpu-arch sm_100a"
PTX = "--target ptx --gpu-arch sm_100a"
R = tcgen05.Repetition


@pytest.mark.parametrize("first,second,expected", [(128, 32, [0, 128]), (32, 256, [0, 256])])
def test_ptx_tmem_alloc_writes_the_column_to_shared_memory(first, second, expected):
    emulated, executed = run_on_both_targets(run_alloc, [np.full(2, -1, np.int32)], (first, second), options=SM100)
    assert list(executed[0]) == expected
    assert_same_on_both_targets(emulated, executed)


@pytest.mark.parametrize("st,ld", [
    (tcgen05.St32x32bOp(R.x8), tcgen05.Ld32x32bOp(R.x16)),
    (tcgen05.St16x64bOp(R.x4), tcgen05.Ld32x32bOp(R.x8)),
    (tcgen05.St32x32bOp(R.x16), tcgen05.Ld16x128bOp(R.x4)),
    (tcgen05.St16x256bOp(R.x2), tcgen05.Ld16x64bOp(R.x8)),
    (tcgen05.St16x128bOp(R.x1), tcgen05.Ld16x256bOp(R.x1)),
    (tcgen05.St16x32bx2Op(R.x4), tcgen05.Ld32x32bOp(R.x64)),
    (tcgen05.St32x32bOp(R.x64), tcgen05.Ld16x32bx2Op(R.x8)),
], ids=["32x32b", "16x64b-32x32b", "32x32b-16x128b", "16x256b-16x64b", "16x128b-16x256b", "16x32bx2-32x32b",
        "32x32b-16x32bx2"])
def test_ptx_tmem_store_then_load_each_shape(st, ld):
    # Different shapes on either side: each lays the same (lane, column) cells out differently.
    gin = np.arange(128 * COLS, dtype=np.float32).reshape(128, COLS)
    emulated, executed = run_on_both_targets(run_roundtrip, [gin, np.zeros_like(gin)], (st, ld, cutlass.Float32),
                                             options=SM100)
    np.testing.assert_array_equal(executed[1], gin)
    assert_same_on_both_targets(emulated, executed)


@pytest.mark.parametrize("st,ld", [
    (tcgen05.St32x32bOp(R.x16, unpack=tcgen05.Unpack.UNPACK_32b_IN_16b),
     tcgen05.Ld16x128bOp(R.x4, tcgen05.Pack.PACK_16b_IN_32b)),
    (tcgen05.St32x32bOp(R.x16), tcgen05.Ld16x64bOp(R.x8)),  # dense: two 16-bit values to a column
], ids=["packed", "dense"])
def test_ptx_tmem_store_then_load_16_bit_values(st, ld):
    gin = (np.arange(128 * COLS) % 2000).astype(np.float16).reshape(128, COLS)
    emulated, executed = run_on_both_targets(run_roundtrip, [gin, np.zeros_like(gin)], (st, ld, cutlass.Float16),
                                             options=SM100)
    np.testing.assert_array_equal(executed[1], gin)
    assert_same_on_both_targets(emulated, executed)


@pytest.mark.parametrize("first,second,relinquish,message", [
    (256, 512, False, "tcgen05.alloc of 512 columns cannot be satisfied"),
    (64, 32, True, "tcgen05.alloc after tcgen05.relinquish_alloc_permit"),
])
def test_ptx_tmem_allocator_misuse_is_reported(first, second, relinquish, message):
    out = np.zeros(2, np.int32)
    with pytest.raises(cutlass.DSLRuntimeError, match=message):
        cute.compile(run_alloc, out, first, second, True, relinquish, options=PTX)(out)


def test_ptx_tmem_load_outside_the_allocation_is_reported():
    # 64 columns read from a 32-column allocation.
    g = np.zeros((128, 64), np.float32)
    with pytest.raises(cutlass.DSLRuntimeError, match="column 32 of tensor memory is not allocated"):
        cute.compile(run_overrun, g, options=PTX)(g)
