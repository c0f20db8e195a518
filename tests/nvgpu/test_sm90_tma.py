"""SM90 TMA (cute.nvgpu.cpasync): make_tiled_tma_atom's descriptors for K-major, MN-major (a
split mode) and 128-byte-swizzled tiles, loads completing on mbarriers (out-of-bounds elements
zero-filled), clipped stores, a pipelined 3-stage producer/consumer kernel, a missing arrive
reported as a deadlock naming the barrier, make_layout_image_mask, the PTX of each op for sm_90a
and the errors for sm_80. Kernels run on the CPU emulator and are checked against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Float32, Int32, Int64
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import from_dlpack
import toolchain

CPU = "--target cpu"


def _load_kernel(tile, smem_layout, dtype, threads=64, swizzle=None, expect_bytes=None, gmem_view=None):
    tm, tk = tile
    elems = tm * tk
    nbytes = elems * dtype.width // 8 if expect_bytes is None else expect_bytes
    layout = smem_layout if swizzle is None else cute.make_composed_layout(swizzle, 0, smem_layout)

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
        bidx, bidy, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(dtype, elems, alignment=1024), layout)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        g = cute.local_tile(tma_tensor, (tm, tk), (bidx, bidy))
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
            cute.copy(atom, g, s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, elems, threads):
            r = i // tk
            c = i % tk
            out[bidx * tm + r, bidy * tk + c] = s[r, c]

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        g = a if cutlass.const_expr(gmem_view is None) else gmem_view(a)
        atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g, layout, (tm, tk))
        kernel(atom, tma_tensor, out).launch(grid=(cute.ceil_div(cute.size(a, mode=[0]), tm),
                                                   cute.ceil_div(cute.size(a, mode=[1]), tk), 1),
                                             block=(threads, 1, 1))

    return host


def _padded(a, tile):
    m = -(-a.shape[0] // tile[0]) * tile[0]
    k = -(-a.shape[1] // tile[1]) * tile[1]
    want = np.zeros((m, k), a.dtype)
    want[:a.shape[0], :a.shape[1]] = a
    return want


def test_k_major_tiles_load_with_out_of_bounds_zero_fill():
    a = np.arange(20 * 72, dtype=np.float32).reshape(20, 72) + 1  # neither extent a multiple of the tile
    tile = (8, 32)
    out = np.full(_padded(a, tile).shape, -1, np.float32)
    host = _load_kernel(tile, cute.make_layout(tile, stride=(32, 1)), Float32)
    cute.compile(host, a, out, options=CPU)(a, out)
    np.testing.assert_array_equal(out, _padded(a, tile))


def test_mn_major_tile_split_into_two_runs():
    # M contiguous in global memory; the smem tile (128, 8) keeps 64-element runs of M (as an
    # MN-major swizzle atom tiled twice would): dimensions (m inner 64, k 8, m outer 2).
    a = np.asfortranarray(np.arange(256 * 16, dtype=np.float32).reshape(256, 16))
    tile = (128, 8)
    smem = cute.make_layout(((64, 2), 8), stride=((1, 512), 64))
    out = np.zeros((256, 16), np.float32)
    host = _load_kernel(tile, smem, Float32)
    f = cute.compile(host, a, out, options=f"{CPU} --gpu-arch sm_90a")
    f(a, out)
    np.testing.assert_array_equal(out, a)
    # M's extent is dynamic, so the 64-element runs may not divide it: M keeps one tensor-map
    # dimension, which TMA clips at the extent (zeros past it, as CuTe's make_tma_copy would),
    # and the outer run is a second instruction.
    assert f.nvvm_ir.count("cp.async.bulk.tensor.") == 2
    b = np.asfortranarray(np.arange(200 * 16, dtype=np.float32).reshape(200, 16) + 1)
    out = np.full((256, 16), -1, np.float32)
    f(b, out)
    np.testing.assert_array_equal(out, _padded(b, tile))
    # An extent known to be a multiple of 64: one dimension per run, one instruction for the tile.
    a64 = from_dlpack(a).mark_compact_shape_dynamic(mode=0, divisibility=64)
    out = np.zeros((256, 16), np.float32)
    f64 = cute.compile(host, a64, out, options=f"{CPU} --gpu-arch sm_90a")
    assert f64.nvvm_ir.count("cp.async.bulk.tensor.") == 1
    f64(a64, out)
    np.testing.assert_array_equal(out, a)
    # A descriptor the hardware's rules refuse (a row stride of 280 bytes) names the user's line.
    c = np.zeros((20, 70), np.float32)
    host = _load_kernel((8, 32), cute.make_layout((8, 32), stride=(32, 1)), Float32)
    with pytest.raises(cute.DSLRuntimeError, match=r"byte stride 280 of dimension 1 is not a multiple of 16 "
                                                   r"\(make_tiled_tma_atom at .*test_sm90_tma.py:\d+\)"):
        cute.compile(host, c, np.zeros((24, 96), np.float32), options=CPU)(c, np.zeros((24, 96), np.float32))


def test_128b_swizzled_fp16_tile_reads_back_through_the_swizzled_layout():
    a = (np.arange(16 * 128) % 251).astype(np.float16).reshape(16, 128)
    tile = (8, 64)  # 64 halves = 128 bytes per row: TMA's 128-byte swizzle, CuTe's S<3,3,3> on elements
    out = np.zeros_like(a)
    host = _load_kernel(tile, cute.make_layout(tile, stride=(64, 1)), Float16, swizzle=cute.make_swizzle(3, 3, 3))
    cute.compile(host, a, out, options=CPU)(a, out)
    np.testing.assert_array_equal(out, a)


def test_tma_load_ptx_for_sm90a_and_error_for_sm80():
    a = np.zeros((16, 64), np.float32)
    out = np.zeros_like(a)
    host = _load_kernel((8, 32), cute.make_layout((8, 32), stride=(32, 1)), Float32)
    f = cute.compile(host, a, out, options=f"{CPU} --gpu-arch sm_90a")
    ptx = toolchain.ptx_of(f)
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert ".param .align 64 .b8" in ptx  # the descriptor, by value
    assert "elect.sync" in ptx
    with pytest.raises(cute.DSLUserCodeError, match="needs sm_90 or newer") as e:
        cute.compile(host, a, out, options=f"{CPU} --gpu-arch sm_80")
    assert e.value.filename == __file__


def test_missing_expect_tx_arrive_is_a_deadlock_naming_the_barrier():
    # Nobody arrives: the bytes land, but the phase still waits for its one arrival.
    a = np.zeros((8, 32), np.float32)
    out = np.zeros_like(a)

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, 256, alignment=128), cute.make_layout((8, 32), stride=(32, 1)))
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.sync_threads()
        cute.copy(atom, cute.local_tile(tma_tensor, (8, 32), (0, 0)), s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        out[0, tidx] = s[0, tidx]

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                              cute.make_layout((8, 32), stride=(32, 1)), (8, 32))
        kernel(atom, t, out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with pytest.raises(cute.DSLRuntimeError, match=r"(?s)mbarrier deadlock.*warp 0 waits.*shared offset 0.*"
                                                   r"still needs 1 of 1 arrival"):
        cute.compile(host, a, out, options=CPU)(a, out)


# ---- TMA store ---------------------------------------------------------------------------------

def test_tma_store_writes_back_clipped():
    m, n = 12, 40
    tile = (8, 32)

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor):
        bidx, bidy, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        cpasync.prefetch_descriptor(atom)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, 256, alignment=128), cute.make_layout(tile, stride=(32, 1)))
        for i in cutlass.range(tidx, 256, 32):
            r = i // 32
            c = i % 32
            s[r, c] = Float32((bidx * 8 + r) * 1000 + bidy * 32 + c)
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.sync_threads()
        cute.copy(atom, s, cute.local_tile(tma_tensor, tile, (bidx, bidy)))
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)

    @cute.jit
    def host(c: cute.Tensor):
        atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                              cute.make_layout(tile, stride=(32, 1)), tile)
        kernel(atom, t).launch(grid=(2, 2, 1), block=(32, 1, 1))

    c = np.full((m, n), -1, np.float32)
    f = cute.compile(host, c, options=f"{CPU} --gpu-arch sm_90a")
    f(c)
    r, k = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    np.testing.assert_array_equal(c, (r * 1000 + k).astype(np.float32))
    toolchain.ptx_of(f)
    for want in ("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.commit_group",
                 "cp.async.bulk.wait_group.read 0", "fence.proxy.async.shared::cta", "prefetch.tensormap"):
        assert want in f.__ptx__, want



RAGGED_M, RAGGED_N, RAGGED_TILE = 100, 16, (128, 8)


def _ragged_smem():  # 64-element runs of M, two per tile
    return cute.make_layout(((64, 2), 8), stride=((1, 512), 64))


@cute.kernel
def ragged_store_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor):
    bidx, bidy, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    s = cute.make_tensor(cute.arch.alloc_smem(Float32, 1024, alignment=128), _ragged_smem())
    for i in cutlass.range(tidx, 1024, 32):
        r = i % 128
        c = i // 128
        s[r, c] = Float32((bidx * 128 + r) * 1000 + bidy * 8 + c)
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_threads()
    cute.copy(atom, s, cute.local_tile(tma_tensor, RAGGED_TILE, (bidx, bidy)))
    cute.arch.cp_async_bulk_commit_group()
    cute.arch.cp_async_bulk_wait_group(0, read=True)


@cute.jit
def ragged_store_host(c: cute.Tensor):
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, _ragged_smem(),
                                          RAGGED_TILE)
    ragged_store_kernel(atom, t).launch(grid=(1, 2, 1), block=(32, 1, 1))


def _ragged_store_want():
    r, k = np.meshgrid(np.arange(RAGGED_M), np.arange(RAGGED_N), indexing="ij")
    return (r * 1000 + k).astype(np.float32)


def test_tma_store_of_an_mn_major_tile_in_two_runs_clips_at_a_ragged_extent():
    # M contiguous; the smem tile (128, 8) keeps 64-element runs of M. M = 100 (dynamic): the
    # second run is past it from row 100 on, and nothing is written there (M stays one
    # tensor-map dimension, which TMA clips; each run is one instruction).
    m, n = RAGGED_M, RAGGED_N
    # The rows past M are the next columns' memory: a store that ran past M would overwrite them.
    storage = np.full((m * n + 64,), -1, np.float32)
    c = storage[:m * n].reshape(n, m).T  # M-major (column-major) view
    f = cute.compile(ragged_store_host, c, options=f"{CPU} --gpu-arch sm_90a")
    assert f.nvvm_ir.count("cp.async.bulk.tensor.") == 2
    f(c)
    np.testing.assert_array_equal(c, _ragged_store_want())
    assert (storage[m * n:] == -1).all()


# ---- a pipelined kernel: 3 stages of TMA loads, full/empty mbarriers ------------------------------

STAGES = 3


@cute.kernel
def pipelined_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor, k_tiles: Int32):
    # Row sums of a (8 x K) block: warp 0 produces K tiles of 8 x 32 through TMA, warps 1-2 consume.
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    warp = tidx // 32
    full = cute.arch.alloc_smem(Int64, STAGES, alignment=8)
    empty = cute.arch.alloc_smem(Int64, STAGES, alignment=8)
    s = cute.make_tensor(cute.arch.alloc_smem(Float32, 256 * STAGES, alignment=128),
                         cute.make_layout((8, 32, STAGES), stride=(32, 1, 256)))
    if tidx == 0:
        for i in cutlass.range_constexpr(STAGES):
            cute.arch.mbarrier_init(full + i, 1)
            cute.arch.mbarrier_init(empty + i, 64)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    g = cute.local_tile(tma_tensor, (8, 32), (bidx, None))  # (8, 32, k_tiles)
    if warp == 0:
        for k in cutlass.range(k_tiles):
            st = k % STAGES
            cute.arch.mbarrier_wait(empty + st, ((k // STAGES) % 2) ^ 1)
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(full + st, 1024)
            cute.copy(atom, g[None, None, k], s[None, None, st], tma_bar_ptr=full + st)
    else:
        row = (tidx - 32) // 8   # 64 consumer threads: 8 rows x 8 threads, 4 columns each
        part = (tidx - 32) % 8
        acc = Float32(0)
        for k in cutlass.range(k_tiles):
            st = k % STAGES
            cute.arch.mbarrier_wait(full + st, (k // STAGES) % 2)
            for j in cutlass.range_constexpr(4):
                acc = acc + s[row, part * 4 + j, st] * Float32(2)
            cute.arch.mbarrier_arrive(empty + st)
        out[bidx * 8 + row, part] = acc


@cute.jit
def pipelined_host(a: cute.Tensor, out: cute.Tensor, k_tiles: Int32):
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                          cute.make_layout((8, 32), stride=(32, 1)), (8, 32))
    pipelined_kernel(atom, t, out, k_tiles).launch(grid=(cute.size(a, mode=[0]) // 8, 1, 1), block=(96, 1, 1))


@pytest.mark.parametrize("k_tiles", [2, 7])
def test_three_stage_tma_pipeline_against_numpy(k_tiles):
    rng = np.random.default_rng(k_tiles)
    a = rng.integers(-8, 8, size=(16, 32 * k_tiles)).astype(np.float32)
    out = np.zeros((16, 8), np.float32)
    cute.compile(pipelined_host, a, out, k_tiles, options=CPU)(a, out, k_tiles)
    want = (a.reshape(16, k_tiles, 8, 4) * 2).sum(axis=(1, 3))
    np.testing.assert_array_equal(out, want)


# ---- atom errors and helpers ---------------------------------------------------------------------

def test_layout_image_mask():
    layout = cute.make_layout((2, 2, 1), stride=(1, 2, 0))
    assert cute.make_layout_image_mask(layout, (1, 0, 0), 1) == 0b1010
    assert cute.make_layout_image_mask(layout, (0, 1, 0), 0) == 0b1100
    with pytest.raises(ValueError, match="cosize"):
        cute.make_layout_image_mask(cute.make_layout((4, 8)), (0, 0), 0)


@pytest.mark.parametrize("smem,pattern", [
    (cute.make_layout((8, 32), stride=(33, 1)), "densely"),
    (cute.make_layout((8, 32), stride=(1, 8)), "not contiguous in global memory"),
])
def test_atom_rejects_layouts_tma_cannot_fill(smem, pattern):
    a = np.zeros((16, 64), np.float32)

    @cute.jit
    def host(a: cute.Tensor):
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem, (8, 32))

    with pytest.raises(cute.DSLUserCodeError, match=pattern):
        cute.compile(host, a, options=CPU)


# ---- the same kernels on the GPU (the lead's H100 run) --------------------------------------------

def _on_gpu(run, *arrays):
    """Runs `run` on the GPU over copies of the numpy arrays (ints pass through); returns the
    arrays' contents afterwards."""
    torch = pytest.importorskip("torch")
    cutlass.cuda.initialize_cuda_context()
    # order="K": a Fortran-order array stays column-major (ndarray.copy() would make it C-order)
    args = [torch.from_numpy(a.copy(order="K")).cuda() if isinstance(a, np.ndarray) else a for a in arrays]
    run(*args)
    torch.cuda.synchronize()
    return [t.cpu().numpy() if isinstance(a, np.ndarray) else t for a, t in zip(arrays, args)]


@pytest.mark.gpu
def test_gpu_tma_loads_match_numpy():
    a = np.arange(20 * 72, dtype=np.float32).reshape(20, 72) + 1
    tile = (8, 32)
    _, out = _on_gpu(_load_kernel(tile, cute.make_layout(tile, stride=(32, 1)), Float32), a,
                     np.full(_padded(a, tile).shape, -1, np.float32))
    np.testing.assert_array_equal(out, _padded(a, tile))
    a = np.asfortranarray(np.arange(256 * 16, dtype=np.float32).reshape(256, 16))
    _, out = _on_gpu(_load_kernel((128, 8), cute.make_layout(((64, 2), 8), stride=((1, 512), 64)), Float32), a,
                     np.zeros((256, 16), np.float32))
    np.testing.assert_array_equal(out, a)
    a = (np.arange(16 * 128) % 251).astype(np.float16).reshape(16, 128)
    _, out = _on_gpu(_load_kernel((8, 64), cute.make_layout((8, 64), stride=(64, 1)), Float16,
                                  swizzle=cute.make_swizzle(3, 3, 3)), a, np.zeros_like(a))
    np.testing.assert_array_equal(out, a)


@pytest.mark.gpu
def test_gpu_tma_mn_major_runs_at_a_ragged_extent():
    # load: M = 200 is no multiple of the 64-element runs; rows past it are TMA's zero fill
    b = np.asfortranarray(np.arange(200 * 16, dtype=np.float32).reshape(200, 16) + 1)
    _, out = _on_gpu(_load_kernel((128, 8), cute.make_layout(((64, 2), 8), stride=((1, 512), 64)), Float32), b,
                     np.full((256, 16), -1, np.float32))
    np.testing.assert_array_equal(out, _padded(b, (128, 8)))
    # store: M = 100, the tile's rows past it are not written
    (c,) = _on_gpu(ragged_store_host, np.asfortranarray(np.full((RAGGED_M, RAGGED_N), -1, np.float32)))
    np.testing.assert_array_equal(c, _ragged_store_want())


@pytest.mark.gpu
def test_gpu_tma_pipeline_matches_numpy():
    k_tiles = 7
    a = np.random.default_rng(3).integers(-8, 8, size=(16, 32 * k_tiles)).astype(np.float32)
    _, out, _ = _on_gpu(pipelined_host, a, np.zeros((16, 8), np.float32), k_tiles)
    np.testing.assert_array_equal(out, (a.reshape(16, k_tiles, 8, 4) * 2).sum(axis=(1, 3)))


# ---- the shapes NVIDIA's Hopper GEMM uses: staged 128B-swizzled smem from tile_to_shape, the
# swizzle on the smem pointer (get_tensor(outer, swizzle=inner)), group_modes + tma_partition ----

BM, BK, AB_STAGES = 64, 64, 2


def _dense_gemm_shaped(k_major, mcast=False):
    # fp16 128-byte swizzle atoms, in bytes (S<3,4,3>) as the swizzle of the smem pointer
    if k_major:
        atom = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    else:
        atom = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout((64, 8), stride=(1, 64)))
    staged = cute.tile_to_shape(atom, (BM, BK, AB_STAGES), (0, 1, 2))

    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[Int64, AB_STAGES]
        sA: cute.struct.Align[cute.struct.MemRange[Float16, cute.cosize(staged)], 1024]

    @cute.kernel
    def kernel(atom_a: cute.CopyAtom, mA: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == 0:
            cpasync.prefetch_descriptor(atom_a)
        smem = cutlass.utils.SmemAllocator()
        storage = smem.allocate(Storage)
        bars = storage.bars.data_ptr()
        sA = storage.sA.get_tensor(staged.outer, swizzle=staged.inner)
        if tidx == 0:
            for s in cutlass.range_constexpr(AB_STAGES):
                cute.arch.mbarrier_init(bars + s, 1)
        cute.arch.mbarrier_init_fence()
        if cutlass.const_expr(mcast):
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()
        else:
            cute.arch.sync_threads()
        # With multicast both CTAs of the cluster load tile 0 together, half each.
        gA = cute.local_tile(mA, (BM, BK), (0 if cutlass.const_expr(mcast) else bidx, None))  # (BM, BK, k tiles)
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        tAsA, tAgA = cpasync.tma_partition(atom_a, rank if cutlass.const_expr(mcast) else 0,
                                           cute.make_layout(2 if cutlass.const_expr(mcast) else 1),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tile_bytes = cute.size_in_bytes(Float16, cute.slice_(staged, (None, None, 0)))
        for k in cutlass.range_constexpr(AB_STAGES):
            if warp_idx == 0:
                if tidx == 0:
                    cute.arch.mbarrier_arrive_and_expect_tx(bars + k, tile_bytes)
                cute.copy(atom_a, tAgA[(None, k)], tAsA[(None, k)], tma_bar_ptr=bars + k,
                          mcast_mask=0b11 if cutlass.const_expr(mcast) else 0)
        for k in cutlass.range_constexpr(AB_STAGES):
            cute.arch.mbarrier_wait(bars + k, 0)
            for i in cutlass.range(tidx, BM * BK, 128):
                out[bidx * BM + i % BM, k * BK + i // BM] = sA[i % BM, i // BM, k]

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        op = cpasync.CopyBulkTensorTileG2SMulticastOp() if cutlass.const_expr(mcast) else cpasync.CopyBulkTensorTileG2SOp()
        atom_a, tma_a = cpasync.make_tiled_tma_atom(op, a, cute.slice_(staged, (None, None, 0)), (BM, BK),
                                                    num_multicast=2 if cutlass.const_expr(mcast) else 1)
        kernel(atom_a, tma_a, out).launch(grid=(cute.size(a, mode=[0]) // BM, 1, 1), block=(128, 1, 1),
                                          cluster=(2, 1, 1) if cutlass.const_expr(mcast) else None)

    return host


@pytest.mark.parametrize("k_major", [True, False])
@pytest.mark.parametrize("mcast", [False, True])
def test_dense_gemm_shaped_staged_swizzled_loads(k_major, mcast):
    a = (np.arange(128 * 128) % 509).astype(np.float16).reshape(128, 128)
    if not k_major:
        a = np.asfortranarray(a)
    out = np.zeros((128, 128), np.float16)
    host = _dense_gemm_shaped(k_major, mcast)
    f = cute.compile(host, a, out, options=f"{CPU} --gpu-arch sm_90a")
    f(a, out)
    want = a.copy()
    if mcast:  # both CTAs hold tile 0 (rows 0..63), each writes it to its own rows
        want[64:] = a[:64]
    np.testing.assert_array_equal(out, want)


# ---- clusters: TMA multicast and remote mbarrier arrives (the CTAs of a cluster co-scheduled) -----

MC_TILE = (16, 32)


@cute.kernel
def multicast_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
    s = cute.make_tensor(cute.arch.alloc_smem(Float32, 512, alignment=1024), cute.make_layout(MC_TILE, stride=(32, 1)))
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()  # both CTAs' barriers are initialised before either multicasts
    g = cute.local_tile(tma_tensor, MC_TILE, (0, 0))
    tAsA, tAgA = cpasync.tma_partition(atom, rank, cute.make_layout(2), s, g)
    if tidx < 32:
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, 512 * 4)  # the whole tile: both CTAs' slices
        cute.copy(atom, tAgA, tAsA, tma_bar_ptr=bar, mcast_mask=0b11)
    cute.arch.mbarrier_wait(bar, 0)
    for i in cutlass.range(tidx, 512, 64):
        out[rank, i // 32, i % 32] = s[i // 32, i % 32]
    # Remote arrive: CTA 1 signals a barrier of CTA 0 (same shared offset), which CTA 0 waits on.
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    if tidx == 0:
        if rank == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    if tidx == 0:
        if rank == 1:
            cute.arch.mbarrier_arrive(bar, 0)
        else:
            cute.arch.mbarrier_wait(bar, 0)
            out[0, 0, 0] = Float32(-7)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def multicast_host(a: cute.Tensor, out: cute.Tensor):
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), a,
                                          cute.make_layout(MC_TILE, stride=(32, 1)), MC_TILE, num_multicast=2)
    multicast_kernel(atom, t, out).launch(grid=(2, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1))


def test_multicast_fills_every_cta_of_the_mask_and_remote_arrives_reach_the_peer():
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) + 1
    out = np.zeros((2, 16, 32), np.float32)
    f = cute.compile(multicast_host, a, out, options=f"{CPU} --gpu-arch sm_90a")
    f(a, out)
    want = np.stack([a, a])
    want[0, 0, 0] = -7  # CTA 0 saw CTA 1's remote arrival
    np.testing.assert_array_equal(out, want)
    toolchain.ptx_of(f)
    assert ".multicast::cluster" in f.__ptx__
    assert "mbarrier.arrive.shared::cluster.b64" in f.__ptx__


@cute.kernel
def _multicast_without_mask_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor):
    bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
    s = cute.make_tensor(cute.arch.alloc_smem(Float32, 512, alignment=1024), cute.make_layout(MC_TILE, stride=(32, 1)))
    tAsA, tAgA = cpasync.tma_partition(atom, 0, cute.make_layout(2), s, cute.local_tile(tma_tensor, MC_TILE, (0, 0)))
    cute.copy(atom, tAgA, tAsA, tma_bar_ptr=bar)


@cute.jit
def _multicast_without_mask_host(a: cute.Tensor):
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), a,
                                          cute.make_layout(MC_TILE, stride=(32, 1)), MC_TILE, num_multicast=2)
    _multicast_without_mask_kernel(atom, t).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))


def test_multicast_copy_needs_a_mask():
    a = np.zeros((16, 32), np.float32)
    with pytest.raises(cute.DSLUserCodeError, match=r"cute\.copy: CopyBulkTensorTileG2SMulticastOp needs mcast_mask=") as e:
        cute.compile(_multicast_without_mask_host, a, options=f"{CPU} --gpu-arch sm_90a")
    assert e.value.code == "TMA_COPY"
    assert e.value.filename == __file__


@pytest.mark.gpu
def test_gpu_multicast_and_remote_arrive():
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) + 1
    _, out = _on_gpu(multicast_host, a, np.zeros((2, 16, 32), np.float32))
    want = np.stack([a, a])
    want[0, 0, 0] = -7
    np.testing.assert_array_equal(out, want)


# ---- the Hopper GEMM epilogue's TMA store: zipped_divide of the C tile by the epilogue tile,
# tma_partition, a staged smem buffer reached through a swizzled pointer, bulk groups -------------

def test_dense_gemm_shaped_epilogue_store():
    EPI = (32, 32)
    atom_l = cute.make_composed_layout(cute.make_swizzle(2, 4, 3), 0, cute.make_layout((8, 32), stride=(32, 1)))
    staged = cute.tile_to_shape(atom_l, (EPI[0], EPI[1], 2), (0, 1, 2))

    @cute.struct
    class Storage:
        sC: cute.struct.Align[cute.struct.MemRange[Float16, cute.cosize(staged)], 1024]

    @cute.kernel
    def kernel(atom_c: cute.CopyAtom, mC: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        storage = cutlass.utils.SmemAllocator().allocate(Storage)
        sC = storage.sC.get_tensor(staged.outer, swizzle=staged.inner)
        gC = cute.local_tile(mC, (64, 64), (bidx, bidy))
        gC_epi = cute.zipped_divide(gC, EPI)  # ((32, 32), (2, 2))
        bSG_sD, bSG_gD = cpasync.tma_partition(atom_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), gC_epi)
        for epi in cutlass.range_constexpr(4):
            buf = epi % 2
            for i in cutlass.range(tidx, 1024, 64):
                r = i // 32
                c = i % 32
                sC[r, c, buf] = Float16((bidx * 64 + (epi % 2) * 32 + r) % 97 + (bidy * 64 + (epi // 2) * 32 + c) % 13)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.sync_threads()
            if warp_idx == 0:
                cute.copy(atom_c, bSG_sD[(None, buf)], bSG_gD[(None, (epi % 2, epi // 2))])
                cute.arch.cp_async_bulk_commit_group()
                cute.arch.cp_async_bulk_wait_group(1, read=True)
            cute.arch.sync_threads()
        if warp_idx == 0:
            cute.arch.cp_async_bulk_wait_group(0, read=True)

    @cute.jit
    def host(c: cute.Tensor):
        atom_c, tma_c = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                                    cute.slice_(staged, (None, None, 0)), EPI)
        kernel(atom_c, tma_c).launch(grid=(2, 2, 1), block=(64, 1, 1))

    c = np.zeros((128, 128), np.float16)
    cute.compile(host, c, options=CPU)(c)
    r, k = np.meshgrid(np.arange(128), np.arange(128), indexing="ij")
    np.testing.assert_array_equal(c, (r % 97 + k % 13).astype(np.float16))


@pytest.mark.gpu
@pytest.mark.parametrize("k_major", [True, False])
@pytest.mark.parametrize("mcast", [False, True])
def test_gpu_dense_gemm_shaped_staged_swizzled_loads(k_major, mcast):
    a = (np.arange(128 * 128) % 509).astype(np.float16).reshape(128, 128)
    if not k_major:
        a = np.asfortranarray(a)
    _, out = _on_gpu(_dense_gemm_shaped(k_major, mcast), a, np.zeros((128, 128), np.float16))
    want = a.copy()
    if mcast:
        want[64:] = a[:64]
    np.testing.assert_array_equal(out, want)


def test_reading_a_tile_before_waiting_for_its_tma_load_is_reported():
    # On the GPU the bytes arrive some time before the phase completes; the emulator's copy lands
    # at once, so reading before the wait would silently work here: it is reported instead.
    a = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    out = np.zeros_like(a)

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, 256, alignment=128), cute.make_layout((8, 32), stride=(32, 1)))
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.sync_threads()
        if tidx == 0:
            cute.arch.mbarrier_expect_tx(bar, 1024)
        cute.copy(atom, cute.local_tile(tma_tensor, (8, 32), (0, 0)), s, tma_bar_ptr=bar)
        out[0, tidx] = s[0, tidx]  # no wait: the phase still needs its arrival
        if tidx == 0:
            cute.arch.mbarrier_arrive(bar)
        cute.arch.mbarrier_wait(bar, 0)

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                              cute.make_layout((8, 32), stride=(32, 1)), (8, 32))
        kernel(atom, t, out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with pytest.raises(cute.DSLRuntimeError, match=r"which a TMA load \(line \d+\) is still filling: its bytes complete phase 0 "
                                                   r"of the mbarrier at shared offset 0"):
        cute.compile(host, a, out, options=CPU)(a, out)


def test_a_spanned_mode_with_extent_one_leaves_is_one_dimension():
    # FlashAttention-4 packs GQA query heads into the sequence mode, ((heads_per_kv, seqlen), d); with
    # one head per KV head that mode is (1, seqlen): TMA reads it as the seqlen leaf alone.
    tm, tk = 8, 32
    a = np.arange(24 * 64, dtype=np.float32).reshape(24, 64) + 1
    out = np.full(a.shape, -1, np.float32)
    layout = cute.make_layout((tm, tk), stride=(tk, 1))

    host = _load_kernel((tm, tk), layout, Float32, gmem_view=lambda t: cute.make_tensor(
        t.iterator, cute.make_layout(((1, 24), 64), stride=((1, 64), 1))))
    cute.compile(host, a, out, options=CPU)(a, out)
    np.testing.assert_array_equal(out, a)


def test_tma_info_passed_whole_to_a_kernel():
    # make_tiled_tma_atom's TmaInfo as one kernel argument (NVIDIA's Blackwell tutorials do this):
    # its descriptor and its TMA tensor's dynamic extents become kernel parameters.
    tm, tk = 8, 32
    layout = cute.make_layout((tm, tk), stride=(tk, 1))

    @cute.kernel
    def kernel(tma: cpasync.TmaInfo, out: cute.Tensor):
        bidx, bidy, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, tm * tk, alignment=1024), tma.smem_layout)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        g = cute.local_tile(tma.tma_tensor, (tm, tk), (bidx, bidy))
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, tm * tk * 4)
        if tidx < 32:
            cute.copy(tma.atom, g, s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, tm * tk, 64):
            out[bidx * tm + i // tk, bidy * tk + i % tk] = s[i // tk, i % tk] * 2.0

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, layout, (tm, tk))
        kernel(tma, out).launch(grid=(cute.ceil_div(cute.size(a, mode=[0]), tm),
                                      cute.ceil_div(cute.size(a, mode=[1]), tk), 1), block=(64, 1, 1))

    a = np.arange(20 * 72, dtype=np.float32).reshape(20, 72) + 1
    out = np.full(_padded(a, (tm, tk)).shape, -1, np.float32)
    cute.compile(host, a, out, options=CPU)(a, out)
    np.testing.assert_array_equal(out, _padded(a, (tm, tk)) * 2)


def test_tma_info_chosen_in_a_dynamic_branch():
    # A TmaInfo assigned in a dynamic `if` is carried as its parts' values (descriptor, extents)
    # and rebuilt after it: block 1 loads from the second tensor.
    tm, tk = 8, 32
    layout = cute.make_layout((tm, tk), stride=(tk, 1))

    @cute.kernel
    def kernel(tma0: cpasync.TmaInfo, tma1: cpasync.TmaInfo, out: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        tma = tma0
        if bidx == 1:
            tma = tma1
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, tm * tk, alignment=1024), tma.smem_layout)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, tm * tk * 4)
        if tidx < 32:
            cute.copy(tma.atom, cute.local_tile(tma.tma_tensor, (tm, tk), (0, 0)), s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, tm * tk, 64):
            out[bidx * tm + i // tk, i % tk] = s[i // tk, i % tk]

    @cute.jit
    def host(a0: cute.Tensor, a1: cute.Tensor, out: cute.Tensor):
        op = cpasync.CopyBulkTensorTileG2SOp()
        kernel(cpasync.make_tiled_tma_atom(op, a0, layout, (tm, tk)), cpasync.make_tiled_tma_atom(op, a1, layout, (tm, tk)),
               out).launch(grid=(2, 1, 1), block=(64, 1, 1))

    a0 = np.arange(tm * tk, dtype=np.float32).reshape(tm, tk) + 1
    a1 = -a0
    out = np.zeros((2 * tm, tk), np.float32)
    cute.compile(host, a0, a1, out, options=CPU)(a0, a1, out)
    np.testing.assert_array_equal(out, np.concatenate([a0, a1]))
