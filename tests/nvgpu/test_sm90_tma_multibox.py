"""TMA copies that one box cannot hold, as quack's GEMMs and FlashAttention-4 make them:
- a multicast slice that is not one box: an M-major A tile of 192 rows, smem ((64,3),64) after
  its 128-byte swizzle atoms, multicast over 2 or 4 CTAs: 3 rows of atoms cannot be split between
  the CTAs, so each CTA loads its part of K in three instructions (CuTe's (TMA, TMA_Iter));
- a tile mode longer than TMA's 256-element box, loaded and stored in several instructions;
- a global mode the tile spans that is hierarchical with h > 1: FlashAttention-4's packed-GQA
  query ((qhead_per_kvhead, seqlen), d, h_kv, b), one tensor-map dimension per leaf.
Kernels run on the CPU emulator against numpy; the same programs' NVVM IR (and PTX where libNVVM
is installed) issue the expected number of cp.async.bulk.tensor instructions. The @pytest.mark.gpu
versions run them on the GPU."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Float32, Int64
from cutlass.cute.nvgpu import cpasync

CPU = "--target cpu"
TMA_LOAD = "cp.async.bulk.tensor."

# ---- multicast: each CTA's slice of an M-major 192-row tile is three boxes --------------------------

MC_M, MC_K, MC_STAGES = 192, 64, 2


def _mn_major_staged_layout(rows):
    # quack's M-major A (sm90_utils.make_smem_layout): fp16 128-byte swizzle atoms (64, 8):(1, 64)
    # tiled along K first, order (1, 0, 2): ((64, 3), (8, 8)):((1, 4096), (64, 512)) per stage
    atom = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout((64, 8), stride=(1, 64)))
    return cute.tile_to_shape(atom, (rows, MC_K, MC_STAGES), (1, 0, 2))


def _multicast_host(n_mcast):
    staged = _mn_major_staged_layout(MC_M)

    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[Int64, MC_STAGES]
        sA: cute.struct.Align[cute.struct.MemRange[Float16, cute.cosize(staged)], 1024]

    @cute.kernel
    def kernel(atom_a: cute.CopyAtom, mA: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        storage = cutlass.utils.SmemAllocator().allocate(Storage)
        bars = storage.bars.data_ptr()
        sA = storage.sA.get_tensor(staged.outer, swizzle=staged.inner)
        if tidx == 0:
            for s in cutlass.range_constexpr(MC_STAGES):
                cute.arch.mbarrier_init(bars + s, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()  # every CTA's barriers are initialised before any multicasts
        # Every CTA of the cluster needs M tile 0: each loads its slice into all of them.
        gA = cute.local_tile(mA, (MC_M, MC_K), (0, None))
        tAsA, tAgA = cpasync.tma_partition(atom_a, rank, cute.make_layout(n_mcast),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tile_bytes = cute.size_in_bytes(Float16, cute.slice_(staged, (None, None, 0)))
        for k in cutlass.range_constexpr(MC_STAGES):
            if warp_idx == 0:
                if tidx == 0:
                    cute.arch.mbarrier_arrive_and_expect_tx(bars + k, tile_bytes)  # the whole tile
                cute.copy(atom_a, tAgA[(None, k)], tAsA[(None, k)], tma_bar_ptr=bars + k,
                          mcast_mask=(1 << n_mcast) - 1)
        for k in cutlass.range_constexpr(MC_STAGES):
            cute.arch.mbarrier_wait(bars + k, 0)
            for i in cutlass.range(tidx, MC_M * MC_K, 128):
                out[rank, i % MC_M, k * MC_K + i // MC_M] = sA[i % MC_M, i // MC_M, k]
        cute.arch.cluster_arrive()  # no CTA exits while a peer may still multicast into it
        cute.arch.cluster_wait()

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        atom_a, tma_a = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), a,
                                                    cute.slice_(staged, (None, None, 0)), (MC_M, MC_K),
                                                    num_multicast=n_mcast)
        kernel(atom_a, tma_a, out).launch(grid=(n_mcast, 1, 1), block=(128, 1, 1), cluster=(n_mcast, 1, 1))

    return host


def _m_major_a():
    a = (np.arange(MC_M * MC_K * MC_STAGES) % 1021).astype(np.float16).reshape(MC_M, MC_K * MC_STAGES)
    return np.asfortranarray(a)


@pytest.mark.parametrize("n_mcast", [2, 4])
def test_multicast_slice_of_three_boxes_fills_every_cta(n_mcast):
    a = _m_major_a()
    out = np.zeros((n_mcast,) + a.shape, np.float16)
    f = cute.compile(_multicast_host(n_mcast), a, out, options=f"{CPU} --gpu-arch sm_90a")
    f(a, out)
    np.testing.assert_array_equal(out, np.stack([a] * n_mcast))
    # 3 instructions per copy (one per 64-row atom column), 2 copies (stages) in the kernel
    assert f.nvvm_ir.count(TMA_LOAD) == 3 * MC_STAGES
    assert f.nvvm_ir.count(".multicast::cluster") == 3 * MC_STAGES
    if f.__ptx__ is not None:
        assert f.__ptx__.count(TMA_LOAD) == 3 * MC_STAGES


def test_atom_reports_three_copies_per_tile_and_the_box_of_each():
    staged = _mn_major_staged_layout(MC_M)
    seen = {}

    @cute.jit
    def host(a: cute.Tensor):
        for n in (1, 2, 4):
            op = cpasync.CopyBulkTensorTileG2SMulticastOp() if n > 1 else cpasync.CopyBulkTensorTileG2SOp()
            atom, _ = cpasync.make_tiled_tma_atom(op, a, cute.slice_(staged, (None, None, 0)), (MC_M, MC_K),
                                                  num_multicast=n)
            seen[n] = (atom._atom.copies_per_tile, tuple(atom._atom.box))

    cute.compile(host, _m_major_a(), options=CPU)
    # Unicast: the whole tile is one box, its rows split (64, 3); multicast: 64 rows x (64 / n) of K, 3 times.
    assert seen == {1: (1, (64, 64, 3)), 2: (3, (64, 32, 1)), 4: (3, (64, 16, 1))}


def test_multicast_that_no_tile_dimension_divides_is_refused():
    staged = _mn_major_staged_layout(MC_M)

    @cute.jit
    def host(a: cute.Tensor):
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), a,
                                    cute.slice_(staged, (None, None, 0)), (MC_M, MC_K), num_multicast=3 * 128)

    with pytest.raises(cute.DSLUserCodeError, match=r"cannot be split between 384 CTAs"):
        cute.compile(host, _m_major_a(), options=CPU)


# ---- a tile mode longer than one box: 512 contiguous elements, two boxes of 256 per row --------------

def test_tile_mode_past_256_elements_is_several_boxes():
    rows, cols = 2, 512
    a = (np.arange(4 * 1024) % 997).astype(np.float16).reshape(4, 1024)
    out = np.zeros_like(a)
    elems = rows * cols
    smem = cute.make_layout((rows, cols), stride=(cols, 1))

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
        bidx, bidy, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float16, elems, alignment=128), smem)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, elems * 2)
            cute.copy(atom, cute.local_tile(tma_tensor, (rows, cols), (bidx, bidy)), s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, elems, 64):
            out[bidx * rows + i // cols, bidy * cols + i % cols] = s[i // cols, i % cols]

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem, (rows, cols))
        kernel(atom, t, out).launch(grid=(2, 2, 1), block=(64, 1, 1))

    f = cute.compile(host, a, out, options=f"{CPU} --gpu-arch sm_90a")
    f(a, out)
    np.testing.assert_array_equal(out, a)
    assert f.nvvm_ir.count(TMA_LOAD) == 2 * rows  # boxes of (256, 1)


def test_store_of_a_tile_past_256_elements_is_several_boxes_clipped():
    rows, cols = 2, 512
    m, n = 4, 1000  # the second column of tiles is clipped at 1000

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor):
        bidx, bidy, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, rows * cols, alignment=128),
                             cute.make_layout((rows, cols), stride=(cols, 1)))
        for i in cutlass.range(tidx, rows * cols, 32):
            s[i // cols, i % cols] = Float32((bidx * rows + i // cols) * 1000 + bidy * cols + i % cols)
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.sync_threads()
        cute.copy(atom, s, cute.local_tile(tma_tensor, (rows, cols), (bidx, bidy)))
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)

    @cute.jit
    def host(c: cute.Tensor):
        atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                              cute.make_layout((rows, cols), stride=(cols, 1)), (rows, cols))
        kernel(atom, t).launch(grid=(m // rows, 2, 1), block=(32, 1, 1))

    c = np.full((m, n), -1, np.float32)
    f = cute.compile(host, c, options=f"{CPU} --gpu-arch sm_90a")
    f(c)
    r, k = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    np.testing.assert_array_equal(c, (r * 1000 + k).astype(np.float32))
    assert f.nvvm_ir.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 2 * rows


# ---- FlashAttention-4's packed-GQA query: ((qhead_per_kvhead, seqlen), d, h_kv, b) -----------------

B, SEQ, H_KV, TILE_M = 2, 22, 2, 16


def _packed_gqa_host(qhead_per_kvhead, hdim):
    # FA4's K-major Q tile: fp16 128-byte swizzle atoms (8, 64):(64, 1) tiled to (tile_m, hdim); the
    # swizzle on element offsets, S<3,3,3> for 2-byte elements
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    sq = cute.tile_to_shape(atom, (TILE_M, hdim), (0, 1))
    elems = TILE_M * hdim

    @cute.kernel
    def kernel(atom_q: cute.CopyAtom, mQ: cute.Tensor, out: cute.Tensor):
        m_block, head_kv, batch = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float16, elems, alignment=1024), sq)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        gQ = cute.local_tile(mQ[None, None, head_kv, batch], (TILE_M, hdim), (m_block, 0))
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, elems * 2)
            cute.copy(atom_q, gQ, s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, elems, 64):
            out[batch, head_kv, m_block * TILE_M + i // hdim, i % hdim] = s[i // hdim, i % hdim]

    @cute.jit
    def host(q: cute.Tensor, out: cute.Tensor):
        # q: (b, seqlen, h, d) as FA4 takes it, viewed (seqlen, d, h, b); then FA4's packing
        # (flash_fwd.py, pack_gqa): query heads of one KV head join the sequence mode.
        mQ = cute.make_tensor(q.iterator, cute.make_layout(
            ((qhead_per_kvhead, q.shape[1]), q.shape[3], H_KV, q.shape[0]),
            stride=((q.stride[2], q.stride[1]), q.stride[3], q.stride[2] * qhead_per_kvhead, q.stride[0])))
        atom_q, tma_q = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mQ, sq, (TILE_M, hdim))
        kernel(atom_q, tma_q, out).launch(grid=(cute.ceil_div(SEQ * qhead_per_kvhead, TILE_M), H_KV, B),
                                          block=(64, 1, 1))

    return host


def _packed_gqa_data(qhead_per_kvhead, hdim):
    q = (np.arange(B * SEQ * H_KV * qhead_per_kvhead * hdim) % 2039).astype(np.float16)
    q = q.reshape(B, SEQ, H_KV * qhead_per_kvhead, hdim)
    rows = -(-SEQ * qhead_per_kvhead // TILE_M) * TILE_M
    want = np.zeros((B, H_KV, rows, hdim), np.float16)
    for p in range(min(rows, SEQ * qhead_per_kvhead)):  # packed row p: head p % qh, position p // qh
        want[:, :, p] = q[:, p // qhead_per_kvhead].reshape(B, H_KV, qhead_per_kvhead, hdim)[:, :, p % qhead_per_kvhead]
    return q, want


@pytest.mark.parametrize("qhead_per_kvhead", [2, 4])
@pytest.mark.parametrize("hdim", [64, 128])
def test_packed_gqa_query_tile_spans_two_leaves(qhead_per_kvhead, hdim):
    q, want = _packed_gqa_data(qhead_per_kvhead, hdim)
    out = np.full(want.shape, -1, np.float16)
    a = cute.runtime.from_dlpack(q, assumed_align=16).mark_layout_dynamic(leading_dim=3)
    f = cute.compile(_packed_gqa_host(qhead_per_kvhead, hdim), a, out, options=f"{CPU} --gpu-arch sm_90a")
    f(a, out)
    # rows past seqlen * qhead_per_kvhead are TMA's zero fill
    np.testing.assert_array_equal(out, want)
    # d, h, s (and d's second 64 for hdim 128), then h_kv and b: 5 dimensions (h_kv, b share the fifth at 128)
    assert f.nvvm_ir.count(TMA_LOAD) == 1
    assert "cp.async.bulk.tensor.5d." in f.nvvm_ir


# ---- the same kernels on the GPU (the lead's H100 run) --------------------------------------------

def _on_gpu(run, *arrays):
    torch = pytest.importorskip("torch")
    cutlass.cuda.initialize_cuda_context()
    args = [torch.from_numpy(a.copy(order="K")).cuda() for a in arrays]
    run(*args)
    torch.cuda.synchronize()
    return [t.cpu().numpy() for t in args]


@pytest.mark.gpu
@pytest.mark.parametrize("n_mcast", [2, 4])
def test_gpu_multicast_slice_of_three_boxes_fills_every_cta(n_mcast):
    a = _m_major_a()
    _, out = _on_gpu(_multicast_host(n_mcast), a, np.zeros((n_mcast,) + a.shape, np.float16))
    np.testing.assert_array_equal(out, np.stack([a] * n_mcast))


@pytest.mark.gpu
@pytest.mark.parametrize("qhead_per_kvhead", [2, 4])
@pytest.mark.parametrize("hdim", [64, 128])
def test_gpu_packed_gqa_query_tile_spans_two_leaves(qhead_per_kvhead, hdim):
    q, want = _packed_gqa_data(qhead_per_kvhead, hdim)
    _, out = _on_gpu(_packed_gqa_host(qhead_per_kvhead, hdim), q, np.full(want.shape, -1, np.float16))
    np.testing.assert_array_equal(out, want)
