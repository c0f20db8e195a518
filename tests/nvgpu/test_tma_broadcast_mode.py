"""TMA loads of a tensor whose layout has a broadcast (stride-0) mode, as block-scale factors do
(tile_atom_to_shape_SF's vector mode): one scale factor stands for 16 elements along K, in global
and in shared memory. The atom's box skips the broadcast leaf (CuTe C++ drops stride-0 modes from
the smem layout's inverse): a (64, (16, 8)) tile with K = (16, 8):(0, 1) moves 64 x 8 elements.
Run on the CPU emulator for sm_100a against numpy; the PTX for sm_100a goes through the toolchain."""
import numpy as np

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Int64
from cutlass.cute.nvgpu import cpasync

import toolchain

EMU = "--target cpu --gpu-arch sm_100a"
TM, VEC, KB = 64, 16, 8  # tile rows; elements per broadcast value; stored values per row


def _layout(m):
    # (M, (vec, K blocks)): row-major values, each repeated over vec positions of K.
    return cute.make_layout((m, (VEC, KB)), stride=(KB, (0, 1)))


@cute.kernel
def load_kernel(load: cute.CopyAtom, src: cute.Tensor, out: cute.Tensor, smem_layout: cute.Layout):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(Int64, 1)
    s = smem.allocate_tensor(Float16, smem_layout, 128)
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    g = cute.local_tile(src, (TM, VEC * KB), (bidx, 0))
    if tidx == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, TM * KB * 2)  # the stored values only
    if tidx < 32:
        cute.copy(load, g, s, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    for i in cutlass.range(tidx, TM * VEC * KB, 128):
        r = i // (VEC * KB)
        c = i % (VEC * KB)
        out[bidx * TM + r, c] = s[r, (c % VEC, c // VEC)]


@cute.jit
def broadcast_load(a: cute.Tensor, out: cute.Tensor):
    m = cute.size(a, mode=[0])
    src = cute.make_tensor(a.iterator, _layout(m))
    smem_layout = _layout(TM)
    load, tma_src = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem_layout, (TM, VEC * KB))
    load_kernel(load, tma_src, out, smem_layout).launch(grid=(m // TM, 1, 1), block=(128, 1, 1))


def _inputs():
    a = (np.arange(2 * TM * KB) % 1021).astype(np.float16).reshape(2 * TM, KB)
    return a, np.zeros((2 * TM, VEC * KB), np.float16)


def test_tma_load_of_a_broadcast_mode_moves_the_stored_values_once():
    a, out = _inputs()
    f = cute.compile(broadcast_load, a, out, options=EMU)
    f(a, out)
    np.testing.assert_array_equal(out, np.repeat(a, VEC, axis=1))
    assert f.nvvm_ir.count("cp.async.bulk.tensor.2d") == 1  # one box: (8, 64), the broadcast leaf left out


def test_ptx_for_sm100a_of_a_broadcast_mode_load():
    a, out = _inputs()
    f = cute.compile(broadcast_load, a, out, options="--gpu-arch sm_100a")
    ptx = toolchain.ptx_of(f)
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx
    toolchain.require_cubin()
    assert f.__cubin__
