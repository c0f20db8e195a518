"""cpasync.CopyBulkG2SOp, the non-tensor bulk copy (cp.async.bulk.shared::cluster.global.mbarrier::
complete_tx::bytes, as FlashAttention-4's SM100 backward loads its LSE and dPsum rows): one elected
thread copies a contiguous global run into shared memory and the bytes complete the mbarrier's
transaction count. On the IR emulator and the PTX executor, against numpy; its PTX is linked to an
sm_90a and an sm_100a cubin; the refusals name what is wrong."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._dsl.errors import DSLUserCodeError
from cutlass.cute.nvgpu import cpasync

import toolchain
from ptx_target import needs_libnvvm, run_on_both_targets

ROWS, COLS = 128, 3


@cute.kernel
def _bulk_kernel(g: cute.Tensor, out: cute.Tensor, column: cutlass.Constexpr):
    tidx = cute.arch.thread_idx()[0]
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(cutlass.Int64, 1)
    s = smem.allocate_tensor(cutlass.Float32, cute.make_layout(ROWS), 128)
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if cute.arch.warp_idx() == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bar, ROWS * 4)
            atom = cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32)
            cute.copy(atom, cute.local_tile(g[None, column], (ROWS,), (0,)), s, mbar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    out[tidx] = s[tidx] * 2.0


@cute.jit
def _bulk(g: cute.Tensor, out: cute.Tensor, column: cutlass.Constexpr):
    _bulk_kernel(g, out, column).launch(grid=(1, 1, 1), block=(ROWS, 1, 1))


def _column_major():
    return np.asfortranarray(np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) / 7)


@needs_libnvvm
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_bulk_copy_of_a_column_on_both_targets(arch):
    g = _column_major()
    emu, ptx = run_on_both_targets(_bulk, [g, np.zeros(ROWS, np.float32)], extra_args=(2,),
                                   options=f"--gpu-arch {arch}")
    np.testing.assert_array_equal(emu[1], g[:, 2] * 2)
    np.testing.assert_array_equal(ptx[1], g[:, 2] * 2)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_bulk_copy_links_to_a_cubin(monkeypatch, arch):
    toolchain.require_cubin()
    monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")
    g, out = _column_major(), np.zeros(ROWS, np.float32)
    compiled = cute.compile(_bulk, g, out, 1, options=f"--target cpu --gpu-arch {arch}")
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in toolchain.ptx_of(compiled)
    compiled(g, out)
    np.testing.assert_array_equal(out, g[:, 1] * 2)


@cute.kernel
def _bad_kernel(g: cute.Tensor, what: cutlass.Constexpr):
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(cutlass.Int64, 1)
    s = smem.allocate_tensor(cutlass.Float32, cute.make_layout(ROWS), 128)
    atom = cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32)
    if cutlass.const_expr(what == "row"):
        cute.copy(atom, cute.local_tile(g[0, None], (COLS,), (0,)), s, mbar_ptr=bar)  # strided
    elif cutlass.const_expr(what == "no barrier"):
        cute.copy(atom, cute.local_tile(g[None, 0], (ROWS,), (0,)), s)
    else:  # 12 bytes
        cute.copy(atom, cute.make_tensor(g.iterator, cute.make_layout(3)),
                  cute.make_tensor(s.iterator, cute.make_layout(3)), mbar_ptr=bar)


@cute.jit
def _bad(g: cute.Tensor, what: cutlass.Constexpr):
    _bad_kernel(g, what).launch(grid=(1, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("what,message", [
    ("row", "copies one contiguous run"),
    ("no barrier", "needs mbar_ptr="),
    ("size", "a multiple of 16 bytes"),
])
def test_bulk_copy_refusals(what, message):
    with pytest.raises(DSLUserCodeError, match=message):
        cute.compile(_bad, _column_major(), what, options="--target cpu --gpu-arch sm_90a")
