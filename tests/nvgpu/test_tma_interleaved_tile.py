"""TMA atoms over a tile whose mode is a layout rather than an extent: the Blackwell epilogue tile
of a 2-CTA MMA with 64 rows per CTA, (64, (32,2):(1,64)), takes columns 0-31 and 64-95 (the two
warp pairs' columns) as one tile. make_smem_layout_epi keeps each 32-column half a whole
128-byte-aligned box; a TMA load gathers the tile's columns and a TMA store with the same tiler
writes them back. Run on the CPU emulator for sm_100a, checked against numpy."""
import numpy as np

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass import Float16, Int64
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import from_dlpack
from cutlass.utils import LayoutEnum

EMU = "--target cpu --gpu-arch sm_100a"
TM, TN = 64, 64  # the tile: 64 rows, 2 x 32 columns 64 apart


def epi_tile():
    return (cute.make_layout(TM), cute.make_layout((32, 2), stride=(1, 64)))


@cute.kernel
def round_trip_kernel(load: cute.CopyAtom, src: cute.Tensor, store: cute.CopyAtom, dst: cute.Tensor,
                      gathered: cute.Tensor, smem_layout: cute.ComposedLayout):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(Int64, 1)
    # The swizzle applies to byte addresses, as the hardware's TMA swizzle does (the examples' get_tensor).
    s = smem.allocate_tensor(Float16, smem_layout.outer, 1024, smem_layout.inner)
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    # (64, (32,2), 1, tiles): block b takes the b-th interleaved tile of the columns.
    g_src = cute.flat_divide(src, epi_tile())[(None, None, 0, bidx)]
    g_dst = cute.flat_divide(dst, epi_tile())[(None, None, 0, bidx)]
    if tidx == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, TM * TN * 2)
    if tidx < 32:
        cute.copy(load, g_src, s, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    for i in cutlass.range(tidx, TM * TN, 128):
        r = i // TN
        c = i % TN
        gathered[r, bidx * TN + c] = s[r, c]
    if tidx < 32:
        cute.copy(store, s, g_dst)
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)


@cute.jit
def round_trip(a: cute.Tensor, out: cute.Tensor, gathered: cute.Tensor):
    staged = sm100_utils.make_smem_layout_epi(Float16, LayoutEnum.ROW_MAJOR, epi_tile(), 1)
    smem_layout = cute.slice_(staged, (None, None, 0))
    load, src = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_layout, epi_tile())
    store, dst = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), out, smem_layout, epi_tile())
    round_trip_kernel(load, src, store, dst, gathered, smem_layout).launch(
        grid=(cute.size(a, mode=[1]) // TN, 1, 1), block=(128, 1, 1))


def _inputs():
    a = (np.arange(TM * 256) % 2039).astype(np.float16).reshape(TM, 256)
    return a, np.zeros_like(a), np.zeros_like(a)


def _expected_gather(a):
    # Tile b of the interleaved column tiler (32,2):(1,64) over 256 columns starts at column
    # 0, 32, 128, 160 (the tiler's complement (2,2):(32,128)) and takes 32 columns, then 32 more 64 on.
    cols = np.concatenate([start + np.r_[0:32, 64:96] for start in (0, 32, 128, 160)])
    return a[:, cols]


def test_interleaved_epilogue_tile_loads_and_stores_through_tma():
    a, out, gathered = _inputs()
    f = cute.compile(round_trip, a, out, gathered, options=EMU)
    f(a, out, gathered)
    np.testing.assert_array_equal(gathered, _expected_gather(a))
    np.testing.assert_array_equal(out, a)
    # The column extent is dynamic, so the second 32-column run may not be whole: each half is
    # its own instruction (a load and a store per half).
    assert f.nvvm_ir.count("cp.async.bulk.tensor.") == 4


def test_interleaved_tile_is_one_box_when_the_extent_divides_the_runs():
    a, out, gathered = _inputs()
    ta, tout = (from_dlpack(x).mark_compact_shape_dynamic(mode=1, divisibility=128) for x in (a, out))
    f = cute.compile(round_trip, ta, tout, gathered, options=EMU)
    f(ta, tout, gathered)
    np.testing.assert_array_equal(gathered, _expected_gather(a))
    np.testing.assert_array_equal(out, a)
    assert f.nvvm_ir.count("cp.async.bulk.tensor.") == 2


def test_epilogue_smem_layout_keeps_each_interleaved_half_a_whole_aligned_box():
    # CUTLASS's sm100 builder picks the swizzle atom from the 32-column run a box takes (64 bytes
    # of f16: the 64-byte swizzle S<2,4,3>) and tiles it over the rows first, so the second half
    # of the columns starts 64 x 32 elements (4096 bytes) in; a contiguous 64-column tile keeps
    # the 128-byte swizzle S<3,4,3> with its rows 64 elements apart.
    staged = sm100_utils.make_smem_layout_epi(Float16, LayoutEnum.ROW_MAJOR, epi_tile(), 2)
    assert str(staged.inner) == "S<2,4,3>"
    assert [cute.crd2idx(c, staged.outer) for c in ((0, 32, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1))] == [2048, 32, 1, 4096]
    plain = sm100_utils.make_smem_layout_epi(Float16, LayoutEnum.ROW_MAJOR, (cute.make_layout(TM), cute.make_layout(64)), 2)
    assert str(plain.inner) == "S<3,4,3>"
    assert [cute.crd2idx(c, plain.outer) for c in ((0, 32, 0), (1, 0, 0))] == [32, 64]
