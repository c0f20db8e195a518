"""The Blackwell GEMM helpers of cutlass.utils.blackwell_helpers (cutlass.utils.sm100) against
hand-computed answers: the TMA op each operand needs for a cluster shape, the epilogue tile CUTLASS's
sm100 builder picks, the epilogue's shared-memory layout; and make_tiled_tma_atom_A/B: an
MMA-ordered ((atom M, atom K), rest M, rest K) shared-memory layout filled by one TMA box per CTA
(half of the tile each with a 2-CTA MMA), checked against numpy on the emulator."""
import types

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass import Float16, Float32, Int64
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05

def test_operand_smem_layout_can_be_mn_major_for_an_mma_that_reads_a_from_tensor_memory():
    # NVIDIA's mixed-input decode stages V M-major in shared memory (is_k_major=False) although
    # its MMA, reading A from tensor memory, is K-major.
    mma = sm100_utils.make_trivial_tiled_mma(Float16, OperandMajorMode.K, OperandMajorMode.K, Float32,
                                             tcgen05.CtaGroup.ONE, (128, 8), tcgen05.OperandSource.TMEM)
    k_major = sm100_utils.make_smem_layout_a(mma, (128, 8, 64), Float16, 2)
    mn_major = sm100_utils.make_smem_layout_a(mma, (128, 8, 64), Float16, 2, is_k_major=False)
    # K-major: 64 halves of K per 128-byte row; MN-major: 64 halves of M per row, K rows 64 apart,
    # the second 64 rows of M after the first 64 x 64 block; 128 x 64 halves a stage either way.
    for (m, k, s) in [(0, 0, 0), (1, 0, 0), (0, 1, 0), (63, 15, 0), (64, 0, 0), (127, 3, 1)]:
        assert mn_major.outer(((m, k), 0, 0, s)) == s * 8192 + (m // 64) * 4096 + k * 64 + m % 64
        assert k_major.outer(((m, k), 0, 0, s)) == s * 8192 + m * 64 + k
    assert sm100_utils.make_smem_layout_a(mma, (128, 8, 64), Float16, 2, is_k_major=True) == k_major


SM100 = "--target cpu --gpu-arch sm_100a"


class _PairMma:
    """What make_tiled_tma_atom_A/B read of a tiled MMA: the layout of the CTAs of one MMA."""

    def __init__(self, ctas):
        self.thr_id = cute.make_layout(ctas)


# ---- TMA ops for a cluster shape ---------------------------------------------------------------------

@pytest.mark.parametrize("cluster, ctas, a, b", [
    ((1, 1), 1, (cpasync.CopyBulkTensorTileG2SOp, 1), (cpasync.CopyBulkTensorTileG2SOp, 1)),
    ((2, 1), 1, (cpasync.CopyBulkTensorTileG2SOp, 1), (cpasync.CopyBulkTensorTileG2SMulticastOp, 1)),
    ((1, 2), 1, (cpasync.CopyBulkTensorTileG2SMulticastOp, 1), (cpasync.CopyBulkTensorTileG2SOp, 1)),
    ((2, 1), 2, (cpasync.CopyBulkTensorTileG2SOp, 2), (cpasync.CopyBulkTensorTileG2SOp, 2)),
    ((2, 2), 2, (cpasync.CopyBulkTensorTileG2SMulticastOp, 2), (cpasync.CopyBulkTensorTileG2SOp, 2)),
    ((4, 1), 2, (cpasync.CopyBulkTensorTileG2SOp, 2), (cpasync.CopyBulkTensorTileG2SMulticastOp, 2)),
])
def test_tma_op_of_each_operand(cluster, ctas, a, b):
    thr_id = cute.make_layout(ctas)
    op_a = sm100_utils.cluster_shape_to_tma_atom_A((*cluster, 1), thr_id)
    op_b = utils.sm100.cluster_shape_to_tma_atom_B((*cluster, 1), thr_id)
    assert (type(op_a), op_a.cta_group.value) == a
    assert (type(op_b), op_b.cta_group.value) == b


def test_tma_op_refuses_a_cluster_the_pair_does_not_divide():
    with pytest.raises(ValueError, match="not a multiple"):
        sm100_utils.cluster_shape_to_tma_atom_A((1, 1, 1), cute.make_layout(2))


# ---- the epilogue tile -------------------------------------------------------------------------------

def _tile(t):
    return tuple((m.shape, m.stride) for m in t)


def test_epilogue_tile_shapes():
    row, col = utils.LayoutEnum.ROW_MAJOR, utils.LayoutEnum.COL_MAJOR
    # 1-CTA 128x128, f16 N-major D, no C: M = 128 rows (4 warps x 32), N = 4096 / 128 = 32.
    assert _tile(utils.sm100.compute_epilogue_tile_shape((128, 128, 64), False, row, Float16)) == ((128, 1), (32, 1))
    # 2-CTA with 64 rows per CTA: 2 x 2 warps, M = 64, N = 4096 / 64 = 64 split between the two
    # warp columns: 32 columns each, the second warp's 128 columns further.
    assert _tile(utils.compute_epilogue_tile_shape((64, 256, 64), True, row, Float32)) == ((64, 1), ((32, 2), (1, 128)))
    # N = 32 does not divide a CTA N of 48: the whole 48.
    assert _tile(sm100_utils.compute_epilogue_tile_shape((128, 48, 64), False, row, Float16)) == ((128, 1), (48, 1))
    # With an f32 source C: 16 columns for a 128x128 tile.
    assert _tile(sm100_utils.compute_epilogue_tile_shape((128, 128, 64), False, row, Float32, row, Float32)) == \
        ((128, 1), (16, 1))
    # An M-major f16 D needs 8 columns at least; 64-row CTA of a 1-CTA MMA: 4096 / 64 = 64.
    assert _tile(sm100_utils.compute_epilogue_tile_shape((64, 128, 64), False, col, Float16)) == ((64, 1), (64, 1))


def test_epilogue_smem_layout_is_the_swizzled_row_major_subtile():
    epi_tile = sm100_utils.compute_epilogue_tile_shape((128, 128, 64), False, utils.LayoutEnum.ROW_MAJOR, Float16)
    layout = sm100_utils.make_smem_layout_epi(Float16, utils.LayoutEnum.ROW_MAJOR, epi_tile, 2)
    # 32 halves of N = 64 bytes per row: the 64-byte swizzle atom (8 rows x 32), rows then stages.
    assert cute.size(layout) == 128 * 32 * 2
    outer = layout.outer
    for m, n, s in [(0, 0, 0), (1, 0, 0), (7, 31, 0), (8, 0, 0), (127, 5, 1), (64, 17, 1)]:
        assert outer((m, n, s)) == s * 128 * 32 + m * 32 + n
    # TMA's 64-byte swizzle on byte addresses: the 16-byte chunk (bits 4-5) XOR the 128-byte row
    # (bits 7-8), Swizzle<2,4,3>.
    sw = layout.inner
    for off in (0, 16, 64, 128, 128 * 3 + 16, 128 * 7 + 48, 1024 + 128):
        assert sw(off) == off ^ (((off >> 7) & 3) << 4)


def test_tile_smem_layout_picks_the_widest_swizzle_of_its_leading_mode():
    # K-major (64, 64) halves: 128 bytes per row, the 128-byte swizzle; rows 64 apart, stages 4096.
    k_major = sm100_utils.make_smem_layout(utils.LayoutEnum.ROW_MAJOR.mma_major_mode(), (64, 64), Float16, 2)
    for m, k, s in [(0, 0, 0), (1, 0, 0), (9, 63, 0), (63, 1, 1)]:
        assert k_major.outer((m, k, s)) == s * 4096 + m * 64 + k
    assert k_major.inner(128 + 16) == (128 + 16) ^ (1 << 4)  # Swizzle<3,4,3>: row 1 flips chunk bit 4
    # MN-major (32, 8) halves: 64 bytes of M contiguous, the 64-byte swizzle, K columns 32 apart.
    mn_major = sm100_utils.make_smem_layout(utils.LayoutEnum.COL_MAJOR.mma_major_mode(), (32, 8), Float16, 1)
    for m, k in [(0, 0), (31, 0), (5, 7)]:
        assert mn_major.outer((m, k, 0)) == k * 32 + m
    assert mn_major.inner(128 * 3) == 128 * 3 ^ (3 << 4)


# ---- make_tiled_tma_atom_A / B -----------------------------------------------------------------------

def _mma_ordered_layout(rows, k, atom_k):
    """((rows, atom_k), 1, k / atom_k) : ((k, 1), 0, atom_k): a K-major tile in MMA order, K split
    into MMA atoms of atom_k (the outer layout make_smem_layout_a gives without a swizzle)."""
    return cute.make_layout(((rows, atom_k), 1, k // atom_k), stride=((k, 1), 0, atom_k))


def _pair_load_host(rows, k, ctas, which):
    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma: cute.Tensor, out: cute.Tensor):
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, rows * k, alignment=1024), _mma_ordered_layout(rows, k, 8))
        v = cute.arch.block_idx_in_cluster()
        tidx, _, _ = cute.arch.thread_idx()
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        # The leader expects both CTAs' bytes (a cta_group::2 load credits the leader's barrier).
        if tidx == 0 and v == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, ctas * rows * k * 4)
        g = cute.local_tile(tma, (rows, k), (v, 0))
        cute.copy(atom, g, s, tma_bar_ptr=bar)
        if v == 0:
            cute.arch.mbarrier_wait(bar, 0)
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        # Each CTA writes its half back in MMA order: element (r, (a, b)) of s is row r, column 8 b + a.
        for i in cutlass.range(tidx, rows * k, 32):
            r = i // k
            c = i % k
            out[v * rows + r, c] = s[(r, c % 8), 0, c // 8]

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.TWO if ctas == 2 else tcgen05.CtaGroup.ONE)
        make = cute.nvgpu.make_tiled_tma_atom_A if which == "A" else cute.nvgpu.make_tiled_tma_atom_B
        tiler = (ctas * rows, 16, k) if which == "A" else (16, ctas * rows, k)
        atom, tma = make(op, a, _mma_ordered_layout(rows, k, 8), tiler, _PairMma(ctas), (ctas, 1, 1, 1))
        kernel(atom, tma, out).launch(grid=(ctas, 1, 1), block=(32, 1, 1), cluster=(ctas, 1, 1))

    return host


@pytest.mark.parametrize("which", ["A", "B"])
@pytest.mark.parametrize("ctas", [1, 2])
def test_operand_tma_fills_the_mma_ordered_layout(which, ctas):
    rows, k = 8, 32
    a = (np.arange(ctas * rows * k) * 7 % 101).astype(np.float32).reshape(ctas * rows, k)
    out = np.full_like(a, -1)
    f = cute.compile(_pair_load_host(rows, k, ctas, which), a, out, options=SM100)
    f(a, out)
    np.testing.assert_array_equal(out, a)
    ptx = getattr(f, "__ptx__", None)
    if ptx and ctas == 2:
        assert "cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx


def test_operand_tma_refuses_a_layout_not_in_mma_order():
    a = np.zeros((16, 32), np.float32)

    @cute.jit
    def host(a: cute.Tensor):
        cute.nvgpu.make_tiled_tma_atom_A(cpasync.CopyBulkTensorTileG2SOp(), a, cute.make_layout((16, 32)),
                                         (16, 16, 32), _PairMma(1), (1, 1, 1, 1))

    with pytest.raises(Exception, match="MMA-ordered"):
        cute.compile(host, a, options=SM100)


def test_operand_tma_info_keeps_the_staged_smem_layout():
    # Kernels allocate their staged operand buffers from tma_a.smem_layout (NVIDIA's tutorials
    # select its first three modes): it is the caller's layout, stage mode included.
    a = np.zeros((16, 32), np.float32)
    staged = cute.make_layout(((16, 8), 1, 4, 3), stride=((32, 1), 0, 8, 512))
    seen = []

    @cute.jit
    def host(a: cute.Tensor):
        info = cute.nvgpu.make_tiled_tma_atom_A(cpasync.CopyBulkTensorTileG2SOp(), a, staged, (16, 16, 32),
                                                _PairMma(1))
        seen.append((str(info.smem_layout), cute.size(cute.select(info.smem_layout, mode=[0, 1, 2]))))

    cute.compile(host, a, options=SM100)
    assert seen == [("((16,8),1,4,3):((32,1),0,8,512)", 16 * 32)]


def test_operand_tma_multicast_needs_the_cluster_shape():
    # Without a multicast op the cluster shape may be left out (NVIDIA's tutorials do); with one,
    # it decides how many CTAs share the tile and must be given.
    a = np.zeros((16, 32), np.float32)

    @cute.jit
    def host(a: cute.Tensor):
        cute.nvgpu.make_tiled_tma_atom_A(cpasync.CopyBulkTensorTileG2SMulticastOp(), a,
                                         _mma_ordered_layout(16, 32, 8), (16, 16, 32), _PairMma(1))

    with pytest.raises(cute.DSLUserCodeError,
                       match="a multicast TMA op needs cluster_shape_vmnk"):
        cute.compile(host, a, options=SM100)


def _multicast_host(rows, k):
    cluster_vmnk = (1, 1, 2, 1)  # two CTAs along N share the A tile: each loads half for both

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma: cute.Tensor, out: cute.Tensor):
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, rows * k, alignment=1024), _mma_ordered_layout(rows, k, 8))
        n = cute.arch.block_idx_in_cluster()
        tidx, _, _ = cute.arch.thread_idx()
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, rows * k * 4)  # both halves land here
        layout_vmnk = cute.make_layout(cluster_vmnk)
        a_cta_layout = cute.make_layout(2)
        g = cute.local_tile(tma, (rows, k), (0, 0))
        tAsA, tAgA = cpasync.tma_partition(atom, n, a_cta_layout, cute.group_modes(s, 0, 3), cute.group_modes(g, 0, 2))
        mask = cpasync.create_tma_multicast_mask(layout_vmnk, (0, 0, n, 0), mcast_mode=2)
        cute.copy(atom, tAgA, tAsA, tma_bar_ptr=bar, mcast_mask=mask)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, rows * k, 32):
            r = i // k
            c = i % k
            out[n, r, c] = s[(r, c % 8), 0, c // 8]
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        op = cpasync.CopyBulkTensorTileG2SMulticastOp()
        atom, tma = cute.nvgpu.make_tiled_tma_atom_A(op, a, _mma_ordered_layout(rows, k, 8), (rows, 16, k),
                                                     _PairMma(1), cluster_vmnk)
        kernel(atom, tma, out).launch(grid=(1, 2, 1), block=(32, 1, 1), cluster=(1, 2, 1))

    return host


def test_operand_tma_multicast_splits_the_tile_between_the_sharing_ctas():
    rows, k = 8, 32
    a = (np.arange(rows * k) * 3 % 89).astype(np.float32).reshape(rows, k)
    out = np.full((2, rows, k), -1, np.float32)
    cute.compile(_multicast_host(rows, k), a, out, options=SM100)(a, out)
    np.testing.assert_array_equal(out[0], a)
    np.testing.assert_array_equal(out[1], a)


# ---- utils.gemm.sm100 --------------------------------------------------------------------------------

@cute.kernel
def _untile_kernel(c: cute.Tensor, out: cute.Tensor):
    # ((4, 8), 2, 2): the MMA-partitioned view of C by a (4, 8) atom; transformed back to (M, N) tile modes.
    parts = cute.tiled_divide(c, (4, 8))
    xf = utils.gemm.sm100.transform_partitioned_tensor_layout(parts)
    tidx, _, _ = cute.arch.thread_idx()
    for n in cutlass.range_constexpr(16):
        out[tidx, n] = xf[tidx, n]
    ident = utils.gemm.sm100.transform_partitioned_tensor_layout(cute.tiled_divide(cute.make_identity_tensor((8, 16)),
                                                                                   (4, 8)))
    m, n = ident[tidx, 5]
    out[tidx, 16] = m * 100 + n


@cute.jit
def _untile_host(c: cute.Tensor, out: cute.Tensor):
    _untile_kernel(c, out).launch(grid=(1, 1, 1), block=(8, 1, 1))


def test_transform_partitioned_tensor_layout_gives_back_the_tile_modes():
    c = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    out = np.zeros((8, 17), np.float32)
    cute.compile(_untile_host, c, out, options=SM100)(c, out)
    np.testing.assert_array_equal(out[:, :16], c)
    np.testing.assert_array_equal(out[:, 16], np.arange(8) * 100 + 5)


def test_make_trivial_tiled_mma_takes_a_separate_b_dtype_as_newer_examples_pass_it():
    old = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32,
                                             tcgen05.CtaGroup.ONE, (128, 64))
    new = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K,
                                             cutlass.Float32, tcgen05.CtaGroup.ONE, (128, 64))
    assert str(new) == str(old) and "128" in str(new)
    with pytest.raises(TypeError, match="different types"):
        sm100_utils.make_trivial_tiled_mma(cutlass.Float16, cutlass.BFloat16, OperandMajorMode.K, OperandMajorMode.K,
                                           cutlass.Float32, tcgen05.CtaGroup.ONE, (128, 64))


@cute.kernel
def _smem_store_partition_kernel(out: cute.Tensor):
    # A stand-in for the tensor-memory load: thread t holds row t of a (32, 4) subtile.
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), Float32)
    t2r = cute.make_tiled_copy_tv(atom, cute.make_layout((32, 1)), cute.make_layout((1, 4)))
    smem = utils.SmemAllocator()
    sC = smem.allocate_tensor(Float32, cute.make_layout((32, 4, 2), stride=(4, 1, 128)), byte_alignment=128)
    tidx, _, _ = cute.arch.thread_idx()
    tTR_rC = cute.make_rmem_tensor(t2r.get_slice(tidx).partition_D(sC[(None, None, 0)]).shape, Float32)
    for i in cutlass.range_constexpr(4):
        tTR_rC[i] = Float32(tidx * 10 + i)
    gemm = types.SimpleNamespace(c_layout=utils.LayoutEnum.ROW_MAJOR, c_dtype=Float32, acc_dtype=Float32)
    r2s, tRS_rC, tRS_sC = utils.gemm.sm100.epilogue_smem_copy_and_partition(gemm, t2r, tTR_rC, tidx, sC)
    cute.copy(r2s, tRS_rC, tRS_sC[(None, None, None, 1)])
    # The examples' fused epilogues retile other fragments of the load's shape with the returned copy.
    doubled = cute.make_rmem_tensor(tTR_rC.shape, Float32)
    doubled.store(tTR_rC.load() * 2.0)
    cute.copy(r2s, r2s.retile(doubled), tRS_sC[(None, None, None, 0)])
    cute.arch.sync_threads()
    for s in cutlass.range_constexpr(2):
        for n in cutlass.range_constexpr(4):
            out[tidx, n, s] = sC[tidx, n, s]


@cute.jit
def _smem_store_partition_host(out: cute.Tensor):
    _smem_store_partition_kernel(out).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_epilogue_smem_copy_and_partition_returns_a_tiled_copy_that_retiles():
    out = np.zeros((32, 4, 2), np.float32)
    cute.compile(_smem_store_partition_host, out, options=SM100)(out)
    rows = np.arange(32)[:, None] * 10 + np.arange(4)[None, :]
    np.testing.assert_array_equal(out[:, :, 1], rows)
    np.testing.assert_array_equal(out[:, :, 0], 2 * rows)
