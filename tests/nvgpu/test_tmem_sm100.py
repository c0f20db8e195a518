"""Blackwell tensor memory (cute.arch.alloc_tmem / dealloc_tmem / relinquish_tmem_alloc_permit /
retrieve_tmem_ptr, cutlass.utils.TmemAllocator) and tcgen05.commit, on the CPU emulator for
sm_100a. References: the PTX ISA's allocator rules (power-of-two column counts of at least 32,
allocations at a multiple of their size, the address written to shared memory), hand-computed
addresses (lane << 16 | column), and the PTX that libNVVM emits for sm_100a linked by nvJitLink."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass.cute.nvgpu import tcgen05

EMU = "--gpu-arch sm_100a --target cpu"


def line_of(marker):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# LINE " + marker):
                return n
    raise AssertionError(marker)


@cute.kernel
def alloc_kernel(out: cute.Tensor, first: cutlass.Constexpr, second: cutlass.Constexpr, free: cutlass.Constexpr,
                 relinquish_first: cutlass.Constexpr):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 2)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    if warp == 0:
        if cutlass.const_expr(relinquish_first):
            cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.alloc_tmem(first, holder)  # LINE alloc
        cute.arch.alloc_tmem(second, holder + 1)
    cute.arch.sync_threads()
    p = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    q = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder + 1)
    if tidx == 0:
        out[0] = holder[0]
        out[1] = holder[1]
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        if cutlass.const_expr(free):
            cute.arch.dealloc_tmem(p, first)
            cute.arch.dealloc_tmem(q, second)


@cute.jit
def run_alloc(out: cute.Tensor, first: cutlass.Constexpr, second: cutlass.Constexpr, free: cutlass.Constexpr = True,
              relinquish_first: cutlass.Constexpr = False):
    alloc_kernel(out, first, second, free, relinquish_first).launch(grid=(1, 1, 1), block=(64, 1, 1))


@pytest.mark.parametrize("first,second,expected", [
    (128, 32, [0, 128]),   # the second allocation at the first free multiple of its size
    (32, 256, [0, 256]),   # 256 columns fit at 256 only (0..255 holds the first 32)
    (256, 256, [0, 256]),
])
def test_allocations_follow_the_ptx_rules(first, second, expected):
    out = np.full(2, -1, np.int32)
    cute.compile(run_alloc, out, first, second, options=EMU)(out)
    assert list(out) == expected  # lane 0: the address is the column


def test_columns_never_freed_are_reported_at_the_allocating_line():
    out = np.zeros(2, np.int32)
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.compile(run_alloc, out, 128, 32, False, options=EMU)(out)
    assert "tensor memory leaked" in str(e.value) and "128 columns" in str(e.value)
    assert f"(line {line_of('alloc')})" in str(e.value)


@pytest.mark.parametrize("first,second,relinquish,message", [
    (256, 512, False, "512 columns cannot be satisfied: 256 of the 512 columns are allocated"),
    (64, 32, True, "tcgen05.alloc after tcgen05.relinquish_alloc_permit"),
])
def test_allocator_misuse_is_reported(first, second, relinquish, message):
    out = np.zeros(2, np.int32)
    with pytest.raises(cutlass.DSLRuntimeError, match=message):
        cute.compile(run_alloc, out, first, second, True, relinquish, options=EMU)(out)


@pytest.mark.parametrize("cols", [16, 48, 1024])
def test_column_counts_must_be_powers_of_two_from_32_to_512(cols):
    out = np.zeros(2, np.int32)
    with pytest.raises(cutlass.DSLUserCodeError, match="power of two in \\[32, 512\\]"):
        cute.compile(run_alloc, out, cols, 32, options=EMU)


def test_tmem_ops_need_a_blackwell_target():
    out = np.zeros(2, np.int32)
    with pytest.raises(cutlass.DSLUserCodeError, match="needs sm_100a, sm_100f or sm_103a"):
        cute.compile(run_alloc, out, 32, 32, options="--gpu-arch sm_90a --target cpu")


def test_max_and_min_columns():
    assert cute.arch.get_max_tmem_alloc_cols("sm_100") == 512
    assert cute.arch.get_min_tmem_alloc_cols("sm_100") == 32


@cute.kernel
def allocator_kernel(out: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    tidx, _, _ = cute.arch.thread_idx()
    # arch= as NVIDIA's Blackwell fmha.py names the part whose tensor memory is allocated.
    tmem = utils.TmemAllocator(holder, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=128),
                               allocator_warp_id=1, arch="sm_100")
    tmem.allocate(64)
    tmem.wait_for_alloc()
    ptr = tmem.retrieve_ptr(cutlass.Float32)
    # A pointer 3 lanes and 5 columns further: lane << 16 | column.
    out[tidx] = cutlass.Int32((ptr + (3 * 65536 + 5)).toint())
    tmem.relinquish_alloc_permit()
    pipeline.sync(barrier_id=1)
    tmem.free(ptr)


@cute.jit
def run_allocator(out: cute.Tensor):
    allocator_kernel(out).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_tmem_allocator_gives_every_thread_the_address():
    out = np.zeros(128, np.int32)
    cute.compile(run_allocator, out, options=EMU)(out)
    assert (out == (3 << 16) + 5).all()


@cute.kernel
def commit_kernel(out: cute.Tensor, multicast: cutlass.Constexpr):
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(cutlass.Int64, 1)
    tidx, _, _ = cute.arch.thread_idx()
    rank = cute.arch.block_idx_in_cluster()
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 2 if multicast else 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    if tidx < 32:
        if cutlass.const_expr(multicast):
            # Each CTA's warp 0 commits to both CTAs' barriers: each barrier gets two arrivals.
            tcgen05.commit(bar, mask=3, cta_group=tcgen05.CtaGroup.TWO)
        else:
            tcgen05.commit(bar)  # one arrival although the whole warp executes it
    cute.arch.mbarrier_wait(bar, 0)
    if tidx == 0:
        out[rank] = 1
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def run_commit(out: cute.Tensor, multicast: cutlass.Constexpr):
    commit_kernel(out, multicast).launch(grid=(2, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1))


@pytest.mark.parametrize("multicast", [False, True])
def test_commit_arrives_once_on_the_mbarriers(multicast):
    out = np.zeros(2, np.int32)
    cute.compile(run_commit, out, multicast, options=EMU)(out)
    assert list(out) == [1, 1]


@pytest.mark.parametrize("fn,args,expected", [
    (run_alloc, (128, 32), ["tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
                            "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
                            "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned"]),
    (run_commit, (True,), ["tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64"]),
    (run_commit, (False,), ["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"]),
])
def test_ptx_for_sm100a_is_accepted_by_nvjitlink(fn, args, expected):
    out = np.zeros(128, np.int32)
    gpu = cute.compile(fn, out, *args, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is None:
        pytest.skip("no libNVVM here: PTX was not generated")
    for text in expected:
        assert text in gpu.__ptx__
    assert gpu.__cubin__  # nvJitLink accepted the PTX for sm_100a


# ---- tcgen05.st then tcgen05.ld, each shape -------------------------------------------------------

COLS = 64


@cute.kernel
def roundtrip_kernel(gin: cute.Tensor, gout: cute.Tensor, st_op: cutlass.Constexpr, ld_op: cutlass.Constexpr,
                     dtype: cutlass.Constexpr):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    if warp == 0:
        cute.arch.alloc_tmem(COLS * 2, holder)
    cute.arch.sync_threads()
    ptr = cute.arch.retrieve_tmem_ptr(dtype, 16, holder)
    # 32-bit values one to a column; 16-bit ones packed (one to a column) or dense (two to a column).
    dp = 65536 * 32 // dtype.width
    col = 2 if st_op.packed else 1  # element offsets: 16-bit values packed one to a column are 2 apart
    tm = cute.make_tensor(ptr, cute.make_layout((128, COLS), stride=(dp, col)))
    gi = cute.make_tensor(gin.iterator, cute.make_layout((128, COLS), stride=(COLS, 1)))
    go = cute.make_tensor(gout.iterator, cute.make_layout((128, COLS), stride=(COLS, 1)))
    st = tcgen05.make_tmem_copy(cute.make_copy_atom(st_op, dtype), tm)
    ts = st.get_slice(tidx)
    src = ts.partition_S(gi)
    frag = cute.make_rmem_tensor(src.shape, dtype)
    cute.autovec_copy(src, frag)
    cute.copy(st, frag, ts.partition_D(tm))
    cute.arch.fence_view_async_tmem_store()
    cute.arch.sync_threads()
    ld = tcgen05.make_tmem_copy(cute.make_copy_atom(ld_op, dtype), tm)
    tl = ld.get_slice(tidx)
    dst = tl.partition_D(go)
    frag2 = cute.make_rmem_tensor(dst.shape, dtype)
    cute.copy(ld, tl.partition_S(tm), frag2)
    cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(frag2, dst)
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(ptr, COLS * 2)


@cute.jit
def run_roundtrip(gin: cute.Tensor, gout: cute.Tensor, st_op: cutlass.Constexpr, ld_op: cutlass.Constexpr,
                  dtype: cutlass.Constexpr):
    roundtrip_kernel(gin, gout, st_op, ld_op, dtype).launch(grid=(1, 1, 1), block=(128, 1, 1))


R = tcgen05.Repetition


@pytest.mark.parametrize("st,ld", [
    (tcgen05.St32x32bOp(R.x8), tcgen05.Ld32x32bOp(R.x16)),
    (tcgen05.St16x64bOp(R.x4), tcgen05.Ld32x32bOp(R.x8)),
    (tcgen05.St32x32bOp(R.x16), tcgen05.Ld16x128bOp(R.x4)),
    (tcgen05.St16x256bOp(R.x2), tcgen05.Ld16x64bOp(R.x8)),
    (tcgen05.St16x128bOp(R.x1), tcgen05.Ld16x256bOp(R.x1)),
    (tcgen05.St16x32bx2Op(R.x4), tcgen05.Ld32x32bOp(R.x64)),
    (tcgen05.St32x32bOp(R.x64), tcgen05.Ld16x32bx2Op(R.x8)),
])
def test_store_then_load_each_shape(st, ld):
    # Different shapes on either side: each lays the same (lane, column) cells out differently.
    gin = np.arange(128 * COLS, dtype=np.float32).reshape(128, COLS)
    gout = np.zeros_like(gin)
    cute.compile(run_roundtrip, gin, gout, st, ld, cutlass.Float32, options=EMU)(gin, gout)
    np.testing.assert_array_equal(gout, gin)


@pytest.mark.parametrize("st,ld", [
    (tcgen05.St32x32bOp(R.x16, unpack=tcgen05.Unpack.UNPACK_32b_IN_16b), tcgen05.Ld16x128bOp(R.x4, tcgen05.Pack.PACK_16b_IN_32b)),
    (tcgen05.St32x32bOp(R.x16), tcgen05.Ld16x64bOp(R.x8)),  # dense: two 16-bit values to a column
])
def test_store_then_load_16_bit_values(st, ld):
    gin = (np.arange(128 * COLS) % 2000).astype(np.float16).reshape(128, COLS)
    gout = np.zeros_like(gin)
    cute.compile(run_roundtrip, gin, gout, st, ld, cutlass.Float16, options=EMU)(gin, gout)
    np.testing.assert_array_equal(gout, gin)


@cute.kernel
def tmem_to_gmem_through_copy_d_kernel(gin: cute.Tensor, gout: cute.Tensor, ld_op: cutlass.Constexpr):
    # An epilogue's shape (NVIDIA's fp16_gemm_2): a tcgen05.ld tiled copy, then a register -> memory
    # copy made with make_tiled_copy_D from it, writing the retiled fragment.
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    if warp == 0:
        cute.arch.alloc_tmem(COLS, holder)
    cute.arch.sync_threads()
    ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tm = cute.make_tensor(ptr, cute.make_layout((128, COLS), stride=(65536, 1)))
    gi = cute.make_tensor(gin.iterator, cute.make_layout((128, COLS), stride=(COLS, 1)))
    go = cute.make_tensor(gout.iterator, cute.make_layout((128, COLS), stride=(COLS, 1)))
    st = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.St32x32bOp(R.x16), cutlass.Float32), tm)
    ts = st.get_slice(tidx)
    src = ts.partition_S(gi)
    frag = cute.make_rmem_tensor(src.shape, cutlass.Float32)
    cute.autovec_copy(src, frag)
    cute.copy(st, frag, ts.partition_D(tm))
    cute.arch.fence_view_async_tmem_store()
    cute.arch.sync_threads()
    ld = tcgen05.make_tmem_copy(cute.make_copy_atom(ld_op, cutlass.Float32), tm)
    tl = ld.get_slice(tidx)
    acc = cute.make_rmem_tensor(tl.partition_D(go).shape, cutlass.Float32)
    cute.copy(ld, tl.partition_S(tm), acc)
    cute.arch.fence_view_async_tmem_load()
    r2g = cute.make_tiled_copy_D(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32), ld)
    tr = r2g.get_slice(tidx)
    cute.copy(r2g, r2g.retile(acc), tr.partition_D(go))
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(ptr, COLS)


@cute.jit
def run_tmem_to_gmem_through_copy_d(gin: cute.Tensor, gout: cute.Tensor, ld_op: cutlass.Constexpr):
    tmem_to_gmem_through_copy_d_kernel(gin, gout, ld_op).launch(grid=(1, 1, 1), block=(128, 1, 1))


@pytest.mark.parametrize("ld", [tcgen05.Ld32x32bOp(R.x32), tcgen05.Ld16x256bOp(R.x2)])
def test_make_tiled_copy_d_of_a_tmem_copy_keeps_its_rows(ld):
    # make_tmem_copy's tile orders a warpgroup's rows warp-fastest (a layout tiler); a copy made
    # from it with make_tiled_copy_D must keep that tiler, or warp w's lane l lands in row 4 l + w.
    gin = np.arange(128 * COLS, dtype=np.float32).reshape(128, COLS)
    gout = np.zeros_like(gin)
    cute.compile(run_tmem_to_gmem_through_copy_d, gin, gout, ld, options=EMU)(gin, gout)
    np.testing.assert_array_equal(gout, gin)


def test_tmem_copy_ptx_for_sm100a_is_accepted_by_nvjitlink():
    gin = np.zeros((128, COLS), np.float16)
    st = tcgen05.St32x32bOp(R.x16, unpack=tcgen05.Unpack.UNPACK_32b_IN_16b)
    ld = tcgen05.Ld16x128bOp(R.x4, tcgen05.Pack.PACK_16b_IN_32b)
    gpu = cute.compile(run_roundtrip, gin, gin, st, ld, cutlass.Float16, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is None:
        pytest.skip("no libNVVM here: PTX was not generated")
    assert "tcgen05.st.sync.aligned.32x32b.x16.unpack::16b.b32" in gpu.__ptx__
    assert "tcgen05.ld.sync.aligned.16x128b.x4.pack::16b.b32" in gpu.__ptx__
    assert "tcgen05.wait::st.sync.aligned" in gpu.__ptx__ and "tcgen05.wait::ld.sync.aligned" in gpu.__ptx__
    assert gpu.__cubin__


@cute.kernel
def early_use_kernel(gout: cute.Tensor, wait_first: cutlass.Constexpr):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    if warp == 0:
        cute.arch.alloc_tmem(32, holder)
    cute.arch.sync_threads()
    ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tm = cute.make_tensor(ptr, cute.make_layout((128, 32), stride=(65536, 1)))
    go = cute.make_tensor(gout.iterator, cute.make_layout((128, 32), stride=(32, 1)))
    ld = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(R.x32), cutlass.Float32), tm)
    tl = ld.get_slice(tidx)
    dst = tl.partition_D(go)
    frag = cute.make_rmem_tensor(dst.shape, cutlass.Float32)
    cute.copy(ld, tl.partition_S(tm), frag)
    if cutlass.const_expr(wait_first):
        cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(frag, dst)  # reads the registers: before the wait unless wait_first
    cute.arch.fence_view_async_tmem_load()
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.dealloc_tmem(ptr, 32)


@cute.jit
def run_early_use(gout: cute.Tensor, wait_first: cutlass.Constexpr):
    early_use_kernel(gout, wait_first).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_a_copied_fragment_can_be_read_without_a_fence():
    # NVIDIA's GEMM epilogues read the registers of a tensor-memory copy without
    # fence_view_async_tmem_load: cute.copy waits for its loads itself (tcgen05.wait::ld after them),
    # else the emulator would report the read of a register the load has not filled yet.
    g = np.zeros((128, 32), np.float32)
    cute.compile(run_early_use, g, False, options=EMU)(g)
    gpu = cute.compile(run_early_use, g, False, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is not None:
        ptx = gpu.__ptx__
        assert ptx.index("tcgen05.ld.sync.aligned.32x32b.x32.b32") < ptx.index("tcgen05.wait::ld.sync.aligned")


@cute.kernel
def overrun_kernel(gout: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    if warp == 0:
        cute.arch.alloc_tmem(32, holder)
    cute.arch.sync_threads()
    ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tm = cute.make_tensor(ptr, cute.make_layout((128, 64), stride=(65536, 1)))
    go = cute.make_tensor(gout.iterator, cute.make_layout((128, 64), stride=(64, 1)))
    ld = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(R.x64), cutlass.Float32), tm)
    tl = ld.get_slice(tidx)
    dst = tl.partition_D(go)
    frag = cute.make_rmem_tensor(dst.shape, cutlass.Float32)
    cute.copy(ld, tl.partition_S(tm), frag)  # LINE overrun
    cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(frag, dst)
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.dealloc_tmem(ptr, 32)


@cute.jit
def run_overrun(gout: cute.Tensor):
    overrun_kernel(gout).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_tmem_access_outside_the_allocation_is_reported():
    g = np.zeros((128, 64), np.float32)
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.compile(run_overrun, g, options=EMU)(g)
    assert "tcgen05.ld reaches tensor-memory column 32, outside the CTA's allocation" in str(e.value)
    assert f"(line {line_of('overrun')})" in str(e.value)


def test_make_tiled_copy_d_of_a_tmem_load_keeps_each_thread_on_its_lane_row():
    # tcgen05.ld 32x32b: thread t of the warpgroup reads lane t, i.e. row t of the (128, N) tile; a
    # register -> smem copy made from it (make_tiled_copy_D, as the TMA-store epilogues do) must
    # write that row too.
    import cutlass.utils.blackwell_helpers as sm100_utils
    from cutlass.cute.nvgpu import OperandMajorMode
    seen = {}

    @cute.kernel
    def kernel(tiled_mma: cute.TiledMma):
        acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((128, 128)))
        acc_epi = cute.flat_divide(acc[((None, None), 0, 0)], (128, 32))
        t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32),
                                     acc_epi[(None, None, 0, 0)])
        r2s = cute.make_tiled_copy_D(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32), t2r)
        for t in (0, 1, 5, 32, 97):
            seen[t] = (str(t2r.get_slice(t).partition_D(cute.make_identity_tensor((128, 32))).iterator),
                       str(r2s.get_slice(t).partition_D(cute.make_identity_tensor((128, 32))).iterator))

    @cute.jit
    def host():
        tiled_mma = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K,
                                                       cutlass.Float32, tcgen05.CtaGroup.ONE, (128, 128))
        kernel(tiled_mma).launch(grid=(1, 1, 1), block=(128, 1, 1))

    cute.compile(host, options=EMU)
    for t, (t2r_first, r2s_first) in seen.items():
        assert t2r_first == r2s_first == f"({t}, 0)", (t, t2r_first, r2s_first)


# ---- a dealloc left unordered with another warp's last read --------------------------------------

@cute.kernel
def late_reader_kernel(out: cute.Tensor, dealloc_before_read: cutlass.Constexpr):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    if warp == 4:
        cute.arch.alloc_tmem(32, holder)
    cute.arch.sync_threads()
    ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    t = cute.make_tensor(ptr, cute.make_layout((128, 8), stride=(65536, 1)))  # 128 lanes x 8 columns
    g = cute.make_tensor(out.iterator, cute.make_layout((128, 8), stride=(8, 1)))
    if warp < 4:
        st = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.St32x32bOp(tcgen05.Repetition.x8), cutlass.Float32), t)
        thr = st.get_slice(tidx)
        frag = cute.make_rmem_tensor(thr.partition_S(g).shape, cutlass.Float32)
        for k in cutlass.range_constexpr(8):
            frag[k] = cutlass.Float32(tidx * 8 + k)
        cute.copy(st, frag, thr.partition_D(t))
        cute.arch.fence_view_async_tmem_store()
    cute.arch.sync_threads()
    if warp == 4:
        # Nothing orders this with the warpgroup's read below (as fmha_bwd.py's epilogue dealloc
        # and its dQ reduction), unless dealloc_before_read puts a barrier between them.
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(ptr, 32)
    if cutlass.const_expr(dealloc_before_read):
        cute.arch.sync_threads()
    if warp < 4:
        for _ in cutlass.range(6):  # the reading warpgroup is busy for a while first
            pipeline.NamedBarrier(barrier_id=1, num_threads=128).arrive_and_wait()
        ld = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x8), cutlass.Float32), t)
        thr = ld.get_slice(tidx)
        frag = cute.make_rmem_tensor(thr.partition_D(g).shape, cutlass.Float32)
        cute.copy(ld, thr.partition_S(t), frag)  # LINE late read
        cute.autovec_copy(frag, thr.partition_D(g))


@cute.jit
def run_late_reader(out: cute.Tensor, dealloc_before_read: cutlass.Constexpr):
    late_reader_kernel(out, dealloc_before_read).launch(grid=(1, 1, 1), block=(160, 1, 1))


def test_a_dealloc_unordered_with_a_read_runs_after_it():
    # The emulator runs a tcgen05.dealloc once the CTA's other warps can get no further (the
    # latest point the GPU could), so the read that the GPU in practice makes first sees the data.
    out = np.zeros((128, 8), np.float32)
    cute.compile(run_late_reader, out, False, options=EMU)(out)
    np.testing.assert_array_equal(out, np.arange(128 * 8, dtype=np.float32).reshape(128, 8))


def test_a_read_ordered_after_the_dealloc_is_reported():
    out = np.zeros((128, 8), np.float32)
    with pytest.raises(cutlass.DSLRuntimeError, match="outside the CTA's allocation") as e:
        cute.compile(run_late_reader, out, True, options=EMU)(out)
    assert f"(line {line_of('late read')})" in str(e.value)
