"""Hopper warp / CTA ops and thread-block clusters (cute.arch): elect_one, make_warp_uniform,
sync_warp, setmaxregister_*, prmt, shuffle_sync_op, the cluster registers, the cluster barrier and
distributed shared memory (map_dsmem_ptr), launch(cluster=, min_blocks_per_mp=). Kernels run on
the CPU emulator (a cluster's CTAs run together) and are checked against Python models."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Uint32
import toolchain

CPU = "--target cpu"


@pytest.fixture
def no_file_cache(monkeypatch):
    # these tests read the generated NVVM IR, which a compile-cache hit does not regenerate
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "1")


# ---- elect_one, make_warp_uniform, sync_warp, setmaxregister --------------------------------------

@cute.kernel
def elect_kernel(counts: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == 1:
        cute.arch.setmaxregister_decrease(40)
    else:
        cute.arch.setmaxregister_increase(232)
    with cute.arch.elect_one():
        cute.arch.atomic_add(counts.iterator + warp, Int32(1))
        out[warp] = cute.arch.lane_idx()
    cute.arch.sync_warp()


@cute.jit
def elect_host(counts: cute.Tensor, out: cute.Tensor):
    elect_kernel(counts, out).launch(grid=(1, 1, 1), block=(96, 1, 1))


def test_elect_one_runs_its_body_in_one_lane_per_warp():
    counts = np.zeros(3, np.int32)
    out = np.full(3, -1, np.int32)
    cute.compile(elect_host, counts, out, options=CPU)(counts, out)
    np.testing.assert_array_equal(counts, [1, 1, 1])
    assert ((out >= 0) & (out < 32)).all()


@cute.kernel
def not_uniform_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    out[tidx] = cute.arch.make_warp_uniform(tidx)


@cute.jit
def not_uniform_host(out: cute.Tensor):
    not_uniform_kernel(out).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_make_warp_uniform_of_a_value_that_differs_is_reported():
    out = np.zeros(32, np.int32)
    with pytest.raises(cutlass.DSLRuntimeError, match=r"make_warp_uniform of a value that differs across the warp"):
        cute.compile(not_uniform_host, out, options=CPU)(out)


def test_setmaxregister_counts_are_checked():
    @cute.kernel
    def k(out: cute.Tensor):
        cute.arch.setmaxregister_increase(100)

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    out = np.zeros(1, np.int32)
    with pytest.raises(cutlass.DSLUserCodeError, match=r"multiple of 8 in \[24, 256\], got 100"):
        cute.compile(h, out, options=CPU)


def test_setmaxregister_needs_sm90a():
    out = np.zeros(1, np.int32)
    with pytest.raises(cutlass.DSLUserCodeError, match=r"setmaxregister_decrease needs sm_90a, but the program is compiled for sm_80") as info:
        cute.compile(elect_host, out, out, options=CPU + " --gpu-arch sm_80")
    assert info.value.code == "UNSUPPORTED_ARCH"


def test_warp_op_ptx_for_sm90a(no_file_cache):
    counts = np.zeros(3, np.int32)
    compiled = cute.compile(elect_host, counts, counts, options="--gpu-arch sm_90a")
    ir = compiled.nvvm_ir
    assert "elect.sync" in ir and "setmaxnreg.inc.sync.aligned.u32 232" in ir
    assert "setmaxnreg.dec.sync.aligned.u32 40" in ir and "bar.warp.sync" in ir
    toolchain.ptx_of(compiled)
    assert "elect.sync" in compiled.__ptx__ and "setmaxnreg.inc.sync.aligned.u32" in compiled.__ptx__


# ---- prmt, shuffle_sync_op, warp reductions -------------------------------------------------------

def prmt_model(a, b, sel):
    """PTX prmt.b32 default mode: byte k of the result is byte (sel nibble k & 7) of {b, a},
    replaced by its sign replicated when the nibble's bit 3 is set."""
    data = (b << 32) | a
    r = 0
    for k in range(4):
        nib = (sel >> (4 * k)) & 0xF
        byte = (data >> (8 * (nib & 7))) & 0xFF
        if nib & 8:
            byte = 0xFF if byte & 0x80 else 0
        r |= byte << (8 * k)
    return r


@cute.kernel
def prmt_kernel(a: cute.Tensor, b: cute.Tensor, sel: cute.Tensor, out: cute.Tensor, shfl: cute.Tensor,
                red: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    out[tidx] = cute.arch.prmt(a[tidx], b[tidx], sel[tidx])
    shfl[tidx] = cute.arch.shuffle_sync_op(a[tidx], (tidx * 7 + 3) % 32, 0xFFFFFFFF, 31)
    v = Int32(tidx * 37 % 101)
    red[0, tidx] = cute.arch.warp_reduction_sum(v)
    red[1, tidx] = cute.arch.warp_reduction_max(v, threads_in_group=8)


@cute.jit
def prmt_host(a: cute.Tensor, b: cute.Tensor, sel: cute.Tensor, out: cute.Tensor, shfl: cute.Tensor,
              red: cute.Tensor):
    prmt_kernel(a, b, sel, out, shfl, red).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_prmt_shuffle_and_reductions_match_python_models():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    sel = rng.integers(0, 2**16, 32, dtype=np.uint64).astype(np.uint32)
    sel[:4] = [0x5410, 0x7632, 0x3276, 0x1054]  # the selectors NVIDIA's fmha.py uses
    out = np.zeros(32, np.uint32)
    shfl = np.zeros(32, np.uint32)
    red = np.zeros((2, 32), np.int32)
    cute.compile(prmt_host, a, b, sel, out, shfl, red, options=CPU)(a, b, sel, out, shfl, red)
    np.testing.assert_array_equal(out, [prmt_model(int(x), int(y), int(s)) for x, y, s in zip(a, b, sel)])
    np.testing.assert_array_equal(shfl, a[(np.arange(32) * 7 + 3) % 32])
    v = np.arange(32) * 37 % 101
    np.testing.assert_array_equal(red[0], np.full(32, v.sum()))
    np.testing.assert_array_equal(red[1], np.repeat(v.reshape(4, 8).max(axis=1), 8))


# ---- clusters -------------------------------------------------------------------------------------

@cute.kernel
def cluster_regs_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    if tidx == 0:
        cx, cy, _ = cute.arch.cluster_idx()
        nx, ny, _ = cute.arch.cluster_dim()
        ix, iy, _ = cute.arch.block_in_cluster_idx()
        sx, sy, _ = cute.arch.block_in_cluster_dim()
        row = by * 4 + bx
        out[row, 0] = cx
        out[row, 1] = cy
        out[row, 2] = nx
        out[row, 3] = ny
        out[row, 4] = ix
        out[row, 5] = iy
        out[row, 6] = sx * 10 + sy
        out[row, 7] = cute.arch.block_idx_in_cluster()
        out[row, 8] = cute.arch.cluster_size()


@cute.jit
def cluster_regs_host(out: cute.Tensor):
    cluster_regs_kernel(out).launch(grid=(4, 2, 1), block=(32, 1, 1), cluster=(2, 2, 1))


@cute.jit
def fallback_cluster_host(out: cute.Tensor):
    cluster_regs_kernel(out).launch(grid=(4, 2, 1), block=(32, 1, 1), cluster=(4, 2, 1), fallback_cluster=(2, 1, 1))


def test_a_preferred_cluster_launch_runs_fallback_clusters():
    # cluster= is the preferred shape, a hint; OpenCuTe launches the fallback shape (2, 1, 1).
    out = np.full((8, 9), -1, np.int32)
    cute.compile(fallback_cluster_host, out, options=CPU)(out)
    for by in range(2):
        for bx in range(4):
            assert list(out[by * 4 + bx]) == [bx // 2, by, 2, 2, bx % 2, 0, 21, bx % 2, 2], (bx, by, out[by * 4 + bx])


def test_cluster_registers_describe_the_cluster_grid():
    out = np.full((8, 9), -1, np.int32)
    cute.compile(cluster_regs_host, out, options=CPU)(out)
    for by in range(2):
        for bx in range(4):
            row = out[by * 4 + bx]
            ix, iy = bx % 2, by % 2
            assert list(row) == [bx // 2, by // 2, 2, 1, ix, iy, 22, ix + 2 * iy, 4], (bx, by, row)


@cute.kernel
def dsmem_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    rank = cute.arch.block_idx_in_cluster()
    size = cute.arch.cluster_size()
    buf = cute.make_tensor(cute.arch.alloc_smem(Int32, 64), cute.make_layout(64))
    buf[tidx] = rank * 1000 + tidx
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    peer = (rank + 1) % size
    remote = cute.make_tensor(cute.arch.map_dsmem_ptr(buf.iterator, peer), cute.make_layout(64))
    # each thread reads the next element of its right neighbour's buffer, through mapa
    out[bidx * 64 + tidx] = remote[(tidx + 1) % 64]
    cute.arch.cluster_arrive_relaxed()
    cute.arch.cluster_wait()


@cute.jit
def dsmem_host(out: cute.Tensor):
    dsmem_kernel(out).launch(grid=(8, 1, 1), block=(64, 1, 1), cluster=(4, 1, 1))


def test_distributed_shared_memory_after_a_cluster_barrier():
    out = np.full(8 * 64, -1, np.int32)
    cute.compile(dsmem_host, out, options=CPU)(out)
    expect = [((b % 4 + 1) % 4) * 1000 + (t + 1) % 64 for b in range(8) for t in range(64)]
    np.testing.assert_array_equal(out, expect)


@cute.kernel
def early_exit_kernel(out: cute.Tensor):
    rank = cute.arch.block_idx_in_cluster()
    if rank == 0:
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        out[0] = 7


@cute.jit
def early_exit_host(out: cute.Tensor):
    early_exit_kernel(out).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))


def test_exited_threads_do_not_hold_up_the_cluster_barrier():
    # PTX: barrier.cluster.wait waits for the non-exited threads; CTA 1 exits without arriving.
    out = np.zeros(1, np.int32)
    cute.compile(early_exit_host, out, options=CPU)(out)
    assert out[0] == 7


@cute.kernel
def cluster_stuck_kernel(out: cute.Tensor):
    rank = cute.arch.block_idx_in_cluster()
    if rank == 0:
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
    else:
        # warp 0 of CTA 1 (alive) waits at a named barrier that warp 1 never reaches, before
        # arriving at the cluster barrier
        if cute.arch.warp_idx() == 0:
            cutlass.pipeline.NamedBarrier(barrier_id=2, num_threads=64).arrive_and_wait()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()


@cute.jit
def cluster_stuck_host(out: cute.Tensor):
    cluster_stuck_kernel(out).launch(grid=(2, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1))


def test_cluster_barrier_deadlock_is_reported_not_a_hang():
    out = np.zeros(1, np.int32)
    with pytest.raises(cutlass.DSLRuntimeError,
                       match=r"deadlock in kernel .*cluster \(0,0,0\): no warp can proceed: block \(0,0,0\) warp 0 "
                             r"waits at cluster_wait \(96 of 128 threads of the cluster arrived\) at .*test_hopper_warp_cluster.py:\d+; .*"
                             r"block \(1,0,0\) warp 0 waits at named barrier 2 \(32 of 64 threads arrived\); "
                             r"block \(1,0,0\) warp 1 waits at cluster_wait"):
        cute.compile(cluster_stuck_host, out, options=CPU)(out)


def test_cluster_shape_is_validated_at_the_launch():
    @cute.kernel
    def k(out: cute.Tensor):
        pass

    @cute.jit
    def not_dividing(out: cute.Tensor):
        k(out).launch(grid=(6, 1, 1), block=(32, 1, 1), cluster=(4, 1, 1))

    @cute.jit
    def too_big(out: cute.Tensor):
        k(out).launch(grid=(32, 1, 1), block=(32, 1, 1), cluster=(32, 1, 1))

    out = np.zeros(1, np.int32)
    with pytest.raises(cutlass.DSLUserCodeError, match=r"does not divide the grid") as info:
        cute.compile(not_dividing, out, options=CPU)
    assert info.value.code == "LAUNCH_INVALID_CLUSTER"
    with pytest.raises(cutlass.DSLUserCodeError, match=r"has 32 CTAs; a cluster has at most 16") as info:
        cute.compile(too_big, out, options=CPU)
    assert info.value.code == "LAUNCH_INVALID_CLUSTER"


@cute.jit
def dynamic_cluster_host(out: cute.Tensor, n: Int32):
    dsmem_kernel(out).launch(grid=(n, 1, 1), block=(64, 1, 1), cluster=(4, 1, 1))


def test_a_dynamic_grid_the_cluster_does_not_divide_fails_at_run_time():
    out = np.full(8 * 64, -1, np.int32)
    f = cute.compile(dynamic_cluster_host, out, 8, options=CPU)
    f(out, 8)
    with pytest.raises(cutlass.DSLRuntimeError, match=r"cluster \(4,1,1\), which does not divide the grid \(6,1,1\)"):
        f(out, 6)


def test_cluster_ops_and_min_blocks_per_mp_in_nvvm(no_file_cache):
    @cute.jit
    def h(out: cute.Tensor):
        dsmem_kernel(out).launch(grid=(8, 1, 1), block=(64, 1, 1), cluster=(4, 1, 1), min_blocks_per_mp=1)

    out = np.zeros(8 * 64, np.int32)
    compiled = cute.compile(h, out, options="--gpu-arch sm_90a")
    ir = compiled.nvvm_ir
    for text in ("barrier.cluster.arrive.aligned", "barrier.cluster.arrive.relaxed.aligned",
                 "barrier.cluster.wait.aligned", "mapa.u64", "%cluster_ctarank", "%cluster_nctarank",
                 '!"minctasm", i32 1'):
        assert text in ir, text
    toolchain.ptx_of(compiled)
    assert "mapa.u64" in compiled.__ptx__ and ".minnctapersm 1" in compiled.__ptx__


def test_cluster_ops_need_sm90():
    out = np.zeros(8 * 64, np.int32)
    with pytest.raises(cutlass.DSLUserCodeError, match=r"needs sm_90 or newer.*sm_80") as info:
        cute.compile(dsmem_host, out, options=CPU + " --gpu-arch sm_80")
    assert info.value.code == "UNSUPPORTED_ARCH"


@cute.kernel
def divergent_setmaxreg_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx < 16:
        cute.arch.setmaxregister_decrease(40)


@cute.jit
def divergent_setmaxreg_host(out: cute.Tensor):
    divergent_setmaxreg_kernel(out).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_setmaxregister_in_divergent_code_is_reported():
    out = np.zeros(1, np.int32)
    with pytest.raises(cutlass.DSLRuntimeError, match=r"setmaxregister_decrease \(setmaxnreg.sync.aligned\) executed "
                                                      r"by only some threads of the warp \(lanes 0x0000ffff"):
        cute.compile(divergent_setmaxreg_host, out, options=CPU)(out)


@cute.kernel
def unaligned_arrive_kernel(out: cute.Tensor, aligned: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx < 16:
        cute.arch.cluster_arrive(aligned=aligned)
    else:
        cute.arch.cluster_arrive_relaxed(aligned=aligned)
    cute.arch.cluster_wait()
    out[tidx] = tidx


@cute.jit
def unaligned_arrive_host(out: cute.Tensor, aligned: cutlass.Constexpr):
    unaligned_arrive_kernel(out, aligned).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))


def test_cluster_arrive_in_divergent_code_needs_aligned_false():
    out = np.full(32, -1, np.int32)
    with pytest.raises(cutlass.DSLRuntimeError, match=r"cluster_arrive \(aligned\) executed by only some threads"):
        cute.compile(unaligned_arrive_host, out, True, options=CPU)(out)
    cute.compile(unaligned_arrive_host, out, False, options=CPU)(out)
    np.testing.assert_array_equal(out, np.arange(32))


# ---- TMA multicast into the CTAs of a cluster ------------------------------------------------------

MC_TILE = (8, 32)


@cute.kernel
def multicast_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
    # CTA rank 0 loads the tile once, multicast to both CTAs of the cluster; each CTA's barrier
    # expects the tile's bytes, and each CTA writes back what landed in its own shared memory.
    tidx, _, _ = cute.arch.thread_idx()
    rank = cute.arch.block_idx_in_cluster()
    bar = cute.arch.alloc_smem(cutlass.Int64, 1, alignment=8)
    s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, MC_TILE[0] * MC_TILE[1], alignment=1024),
                         cute.make_layout(MC_TILE, stride=(MC_TILE[1], 1)))
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()  # both barriers initialised before any multicast lands
    if tidx < 32:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bar, MC_TILE[0] * MC_TILE[1] * 4)
        if rank == 0:
            cute.copy(atom, cute.local_tile(tma_tensor, MC_TILE, (0, 0)), s, tma_bar_ptr=bar, mcast_mask=0b11)
    cute.arch.mbarrier_wait(bar, 0)
    for i in cutlass.range(tidx, MC_TILE[0] * MC_TILE[1], 64):
        out[rank, i // MC_TILE[1], i % MC_TILE[1]] = s[i // MC_TILE[1], i % MC_TILE[1]]
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def multicast_host(a: cute.Tensor, out: cute.Tensor):
    from cutlass.cute.nvgpu import cpasync
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), a,
                                          cute.make_layout(MC_TILE, stride=(MC_TILE[1], 1)), MC_TILE)
    multicast_kernel(atom, t, out).launch(grid=(2, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1))


def test_tma_multicast_lands_in_every_cta_of_the_cluster():
    a = np.arange(MC_TILE[0] * MC_TILE[1], dtype=np.float32).reshape(MC_TILE)
    out = np.full((2, *MC_TILE), -1, np.float32)
    cute.compile(multicast_host, a, out, options=CPU)(a, out)
    np.testing.assert_array_equal(out[0], a)
    np.testing.assert_array_equal(out[1], a)
