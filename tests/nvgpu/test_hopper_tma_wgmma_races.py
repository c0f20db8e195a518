"""TMA loads feeding wgmma through shared memory, as NVIDIA's Hopper GEMMs do, on the emulator: the
right order (wait on the mbarrier phase, MMA, wait_group before refilling) matches numpy; a wgmma
reading a tile its TMA load is still filling, and a TMA load refilling a tile a wgmma in flight
still reads, are reported instead of passing silently (the emulator's copies land at once)."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Float16, Float32, Int64
from cutlass.cute.nvgpu import cpasync, warpgroup

TILE = (64, 64, 64)  # M, N, K: one warpgroup, four k-blocks of 16


def _gemm(mode):
    """mode: "ok", "mma_before_wait" (the MMA reads A without waiting on the full barrier, whose
    phase B's load completes only later) or "refill_in_flight" (a
    second TMA load into the tile before wait_group retires the wgmma reading it)."""
    k_major = utils.LayoutEnum.ROW_MAJOR  # A (M,K) and B (N,K), K contiguous
    tiled_mma = sm90_utils.make_trivial_tiled_mma(Float16, Float16, k_major.sm90_mma_major_mode(),
                                                  k_major.sm90_mma_major_mode(), Float32, (1, 1, 1),
                                                  tiler_mn=(64, 64))
    sa_staged = sm90_utils.make_smem_layout_a(k_major, TILE, Float16, 1)
    sb_staged = sm90_utils.make_smem_layout_b(k_major, TILE, Float16, 1)

    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[Int64, 2]
        sA: cute.struct.Align[cute.struct.MemRange[Float16, cute.cosize(sa_staged)], 1024]
        sB: cute.struct.Align[cute.struct.MemRange[Float16, cute.cosize(sb_staged)], 1024]

    @cute.kernel
    def kernel(atom_a: cute.CopyAtom, mA: cute.Tensor, atom_b: cute.CopyAtom, mB: cute.Tensor, mC: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        storage = cutlass.utils.SmemAllocator().allocate(Storage)
        bars = storage.bars.data_ptr()
        sA = storage.sA.get_tensor(sa_staged.outer, swizzle=sa_staged.inner)
        sB = storage.sB.get_tensor(sb_staged.outer, swizzle=sb_staged.inner)
        if tidx == 0:
            cute.arch.mbarrier_init(bars, 1)
            cute.arch.mbarrier_init(bars + 1, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        gA = cute.local_tile(mA, (64, 64), (0, None))
        gB = cute.local_tile(mB, (64, 64), (0, None))
        tAsA, tAgA = cpasync.tma_partition(atom_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2),
                                           cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(atom_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2),
                                           cute.group_modes(gB, 0, 2))
        tile_bytes = cute.size_in_bytes(Float16, cute.slice_(sa_staged, (None, None, 0))) * 2
        if warp_idx == 0:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bars, tile_bytes)
            cute.copy(atom_a, tAgA[(None, 0)], tAsA[(None, 0)], tma_bar_ptr=bars)
            if cutlass.const_expr(mode != "mma_before_wait"):
                cute.copy(atom_b, tBgB[(None, 0)], tBsB[(None, 0)], tma_bar_ptr=bars)
        if cutlass.const_expr(mode != "mma_before_wait"):
            cute.arch.mbarrier_wait(bars, 0)
        thr_mma = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        tCgC = thr_mma.partition_C(cute.local_tile(mC, (64, 64), (0, 0)))
        acc = cute.make_rmem_tensor(tCgC.shape, Float32)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
        warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, 0)], tCrB[(None, None, kb, 0)], acc)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        warpgroup.commit_group()
        if cutlass.const_expr(mode == "refill_in_flight"):
            if warp_idx == 0:  # the next k-tile into the same buffer, too early
                if tidx == 0:
                    cute.arch.mbarrier_arrive_and_expect_tx(bars + 1, tile_bytes)
                cute.copy(atom_a, tAgA[(None, 1)], tAsA[(None, 0)], tma_bar_ptr=bars + 1)
                cute.copy(atom_b, tBgB[(None, 1)], tBsB[(None, 0)], tma_bar_ptr=bars + 1)
        warpgroup.wait_group(0)
        if cutlass.const_expr(mode == "mma_before_wait"):
            if warp_idx == 0:  # B lands only now: the phase was still open when the MMA read A
                cute.copy(atom_b, tBgB[(None, 0)], tBsB[(None, 0)], tma_bar_ptr=bars)
            cute.arch.mbarrier_wait(bars, 0)
        for i in cutlass.range_constexpr(cute.size(acc)):
            tCgC[i] = acc[i]

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
        atom_a, tma_a = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                                    cute.slice_(sa_staged, (None, None, 0)), (64, 64))
        atom_b, tma_b = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b,
                                                    cute.slice_(sb_staged, (None, None, 0)), (64, 64))
        kernel(atom_a, tma_a, atom_b, tma_b, c).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return host


def _operands():
    rng = np.random.default_rng(21)
    a = rng.integers(-2, 3, size=(64, 128)).astype(np.float16)  # two k-tiles
    b = rng.integers(-2, 3, size=(64, 128)).astype(np.float16)
    return a, b, np.zeros((64, 64), np.float32)


def test_tma_then_wgmma_matches_numpy():
    a, b, c = _operands()
    cute.compile(_gemm("ok"), a, b, c, options="--target cpu")(a, b, c)
    np.testing.assert_array_equal(c, a[:, :64].astype(np.float32) @ b[:, :64].astype(np.float32).T)


def test_wgmma_reading_a_tile_tma_still_fills_is_reported():
    a, b, c = _operands()
    with pytest.raises(cute.DSLRuntimeError, match="wgmma.mma_async reads its A operand: .*TMA load .* still filling"):
        cute.compile(_gemm("mma_before_wait"), a, b, c, options="--target cpu")(a, b, c)


def test_tma_refilling_a_tile_a_wgmma_still_reads_is_reported():
    a, b, c = _operands()
    with pytest.raises(cute.DSLRuntimeError, match="a TMA load overwrites shared memory"):
        cute.compile(_gemm("refill_in_flight"), a, b, c, options="--target cpu")(a, b, c)
