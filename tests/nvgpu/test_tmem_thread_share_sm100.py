"""tcgen05.ld / st whose tensor-memory operand is one thread's share of the atom: a tensor-memory
tensor partitioned with the register side of a tcgen05 tiled copy (partition_D of a load), as
NVIDIA's mixed-input FMHA prefill (head dim 512) swaps S and O through tensor memory. Each thread
then names only the cells its own registers hold; the warp's instruction moves the whole region
from lane 0's address (tcgen05.ld / st take one address for the warp). The kernels swap two
column blocks of tensor memory that way; the reference is numpy's column swap."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05

EMU = "--gpu-arch sm_100a --target cpu"
R = tcgen05.Repetition
COLS = 32  # each block; tensor memory holds two


@cute.kernel
def swap_kernel(gin: cute.Tensor, gout: cute.Tensor, ld_op: cutlass.Constexpr, st_op: cutlass.Constexpr):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    if warp == 0:
        cute.arch.alloc_tmem(2 * COLS, holder)
    cute.arch.sync_threads()
    ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    whole = cute.make_tensor(ptr, cute.make_layout((128, 2 * COLS), stride=(65536, 1)))
    a = cute.make_tensor(ptr, cute.make_layout((128, COLS), stride=(65536, 1)))
    b = cute.make_tensor(ptr + COLS, cute.make_layout((128, COLS), stride=(65536, 1)))
    gi = cute.make_tensor(gin.iterator, cute.make_layout((128, 2 * COLS), stride=(2 * COLS, 1)))
    go = cute.make_tensor(gout.iterator, cute.make_layout((128, 2 * COLS), stride=(2 * COLS, 1)))
    # Fill tensor memory the usual way (registers -> the atom's whole region).
    fill = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.St32x32bOp(R.x16), cutlass.Float32), whole)
    tf = fill.get_slice(tidx)
    src = tf.partition_S(gi)
    frag = cute.make_rmem_tensor(src.shape, cutlass.Float32)
    cute.autovec_copy(src, frag)
    cute.copy(fill, frag, tf.partition_D(whole))
    cute.arch.fence_view_async_tmem_store()
    cute.arch.sync_threads()
    # Block a through a thread's share (partition_D of the load over tensor memory), block b the
    # usual way; then each is stored into the other, a's destination again a thread's share.
    ld = tcgen05.make_tmem_copy(cute.make_copy_atom(ld_op, cutlass.Float32), a)
    tl = ld.get_slice(tidx)
    share_a = tl.partition_D(a)
    share_b = tl.partition_D(b)
    ra = cute.make_rmem_tensor(share_a.shape, cutlass.Float32)
    rb = cute.make_rmem_tensor(share_b.shape, cutlass.Float32)
    cute.copy(ld, share_a, ra)
    cute.copy(ld, tl.partition_S(b), rb)
    cute.arch.fence_view_async_tmem_load()
    cute.arch.sync_threads()
    st = tcgen05.make_tmem_copy(cute.make_copy_atom(st_op, cutlass.Float32), a)
    ts = st.get_slice(tidx)
    cute.copy(st, ra, share_b)
    cute.copy(st, rb, ts.partition_D(a))
    cute.arch.fence_view_async_tmem_store()
    cute.arch.sync_threads()
    # Read everything back the usual way.
    back = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(R.x16), cutlass.Float32), whole)
    tb = back.get_slice(tidx)
    dst = tb.partition_D(go)
    out = cute.make_rmem_tensor(dst.shape, cutlass.Float32)
    cute.copy(back, tb.partition_S(whole), out)
    cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(out, dst)
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(ptr, 2 * COLS)


@cute.jit
def run_swap(gin: cute.Tensor, gout: cute.Tensor, ld_op: cutlass.Constexpr, st_op: cutlass.Constexpr):
    swap_kernel(gin, gout, ld_op, st_op).launch(grid=(1, 1, 1), block=(128, 1, 1))


SHAPES = [
    (tcgen05.Ld32x32bOp(R.x32), tcgen05.St32x32bOp(R.x32)),  # the FMHA's: a thread's 32 columns of its lane
    (tcgen05.Ld32x32bOp(R.x8), tcgen05.St32x32bOp(R.x8)),    # four calls a block
    (tcgen05.Ld16x256bOp(R.x2), tcgen05.St16x256bOp(R.x2)),  # a thread's cells over two lanes, not from lane 0
    (tcgen05.Ld16x64bOp(R.x4), tcgen05.St16x64bOp(R.x4)),
]


@pytest.mark.parametrize("ld,st", SHAPES, ids=["32x32b.x32", "32x32b.x8", "16x256b.x2", "16x64b.x4"])
def test_a_thread_share_of_tensor_memory_moves_the_whole_region(ld, st):
    gin = np.arange(128 * 2 * COLS, dtype=np.float32).reshape(128, 2 * COLS)
    gout = np.zeros_like(gin)
    cute.compile(run_swap, gin, gout, ld, st, options=EMU)(gin, gout)
    want = np.concatenate([gin[:, COLS:], gin[:, :COLS]], axis=1)
    np.testing.assert_array_equal(gout, want)


@cute.kernel
def wrong_share_kernel(gout: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    if warp == 0:
        cute.arch.alloc_tmem(COLS, holder)
    cute.arch.sync_threads()
    ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    a = cute.make_tensor(ptr, cute.make_layout((128, COLS), stride=(65536, 1)))
    ld = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(R.x32), cutlass.Float32), a)
    share = ld.get_slice(tidx).partition_D(a)
    # 32 values of the thread, but down the lanes rather than along its lane's columns.
    down = cute.make_tensor(share.iterator, cute.make_layout(share.shape, stride=((65536, 0), 0, 0)))
    r = cute.make_rmem_tensor(share.shape, cutlass.Float32)
    cute.copy(ld, down, r)  # LINE wrong share


@cute.jit
def run_wrong_share(gout: cute.Tensor):
    wrong_share_kernel(gout).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_a_share_that_is_not_the_registers_cells_is_refused():
    gout = np.zeros(4, np.float32)
    with pytest.raises(cute.LayoutError, match="tensor-memory values are not the cells its registers hold") as e:
        cute.compile(run_wrong_share, gout, options=EMU)
    with open(__file__) as f:
        line = next(n for n, text in enumerate(f, 1) if text.rstrip().endswith("# LINE wrong share"))
    assert f"test_tmem_thread_share_sm100.py:{line}" in str(e.value)


def test_thread_share_ptx_for_sm100a_is_accepted_by_nvjitlink():
    gin = np.zeros((128, 2 * COLS), np.float32)
    ld, st = SHAPES[0]
    gpu = cute.compile(run_swap, gin, gin, ld, st, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is None:
        pytest.skip("no libNVVM here: PTX was not generated")
    assert "shfl.sync.idx.b32" in gpu.__ptx__  # lane 0's address for the warp
    assert "tcgen05.st.sync.aligned.32x32b.x32.b32" in gpu.__ptx__
    assert gpu.__cubin__
