"""tcgen05.mma (cute.nvgpu.tcgen05 MMA atoms, cutlass.utils.blackwell_helpers) on the CPU emulator for
sm_100a, against numpy: each kind (f16/bf16 -> f32, tf32, i8 -> s32, fp8 e4m3/e5m2), K- and MN-major
operands over every swizzle mode make_smem_layout_a/b picks, A from tensor memory, Field.ACCUMULATE,
a 2-CTA MMA (cta_group::2 in a 2x1 cluster), the tcgen05.ld epilogue; the instruction and shared-memory
descriptors against values computed by hand from the PTX ISA's tables; the PTX for sm_100a linked by
nvJitLink. The kinds and layouts also run on the PTX executor, which decodes the descriptors from
the kernel's registers as the GPU does (test_ptx_tcgen05_mma.py has the rest of its cases)."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass import _core
from cutlass.cute.nvgpu import OperandMajorMode, tcgen05
from ptx_target import needs_libnvvm
from tmem_accumulator import store_accumulator

EMU = "--gpu-arch sm_100a --target cpu"
PTX = "--target ptx --gpu-arch sm_100a"
TARGETS = [pytest.param(EMU, id="emulator"), pytest.param(PTX, id="ptx", marks=needs_libnvvm)]
K_MAJOR, MN_MAJOR = OperandMajorMode.K, OperandMajorMode.MN
ONE, TWO = tcgen05.CtaGroup.ONE, tcgen05.CtaGroup.TWO


@cute.kernel
def mma_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma, dtype: cutlass.Constexpr,
               acc_dtype: cutlass.Constexpr, M: cutlass.Constexpr, N: cutlass.Constexpr, K: cutlass.Constexpr,
               accumulate: cutlass.Constexpr, cols: cutlass.Constexpr, two_cta: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    rank = cute.arch.block_idx_in_cluster() if two_cta else 0
    g = 2 if two_cta else 1
    sA_l = sm100_utils.make_smem_layout_a(tiled_mma, (M, N, K), dtype, 1)
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, (M, N, K), dtype, 1)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bar = smem.allocate_array(cutlass.Int64, 1)
    sA = smem.allocate_tensor(dtype, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(dtype, sB_l.outer, 1024, sB_l.inner)
    gA = cute.make_tensor(mA.iterator, cute.make_layout((M, K), stride=(K, 1)))
    gB = cute.make_tensor(mB.iterator, cute.make_layout((N, K), stride=(K, 1)))
    gC = cute.make_tensor(mC.iterator, cute.make_layout((M, N), stride=(N, 1)))
    Mc, Nc, kb = M // g, N // g, 256 // dtype.width
    # This CTA's rows of A and columns of B, by logical coordinate into the staged smem layouts.
    for j in cutlass.range_constexpr(Mc * K // 128):
        i = tidx + j * 128
        m, k = i % Mc, i // Mc
        sA[((m, k % kb), 0, k // kb, 0)] = gA[(rank * Mc + m, k)].to(dtype)
    for j in cutlass.range_constexpr(Nc * K // 128):
        i = tidx + j * 128
        n, k = i % Nc, i // Nc
        sB[((n, k % kb), 0, k // kb, 0)] = gB[(rank * Nc + n, k)].to(dtype)
    cute.arch.fence_proxy("async.shared", space="cta")
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    if warp == 0:
        cute.arch.alloc_tmem(cols, holder, is_two_cta=two_cta)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(acc_dtype, 16, holder)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)
    tCtAcc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((M, N)))
    tCtAcc = cute.make_tensor(tmem_ptr, tCtAcc.layout)
    thr_mma = tiled_mma.get_slice(rank)
    tCgC = thr_mma.partition_C(gC)
    atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x16), acc_dtype)
    t2r = tcgen05.make_tmem_copy(atom, tCtAcc[(None, 0, 0)])
    thr = t2r.get_slice(tidx)
    tTR_t = thr.partition_S(tCtAcc[(None, 0, 0)])
    tTR_g = thr.partition_D(tCgC[(None, 0, 0)])
    frag = cute.make_rmem_tensor(tTR_g.shape, acc_dtype)
    if cutlass.const_expr(accumulate):
        # D starts as C: the MMA adds to it.
        r2t = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.St32x32bOp(tcgen05.Repetition.x16), acc_dtype),
                                     tCtAcc[(None, 0, 0)])
        thr_st = r2t.get_slice(tidx)
        cin = cute.make_rmem_tensor(tTR_g.shape, acc_dtype)
        cute.autovec_copy(tTR_g, cin)
        cute.copy(r2t, cin, thr_st.partition_D(tCtAcc[(None, 0, 0)]))
        cute.arch.fence_view_async_tmem_store()
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    if rank == 0:
        if warp == 0:
            tiled_mma.set(tcgen05.Field.ACCUMULATE, accumulate)
            for k in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, k, 0)], tCrB[(None, None, k, 0)], tCtAcc)
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
            if cutlass.const_expr(two_cta):
                tcgen05.commit(bar, mask=3, cta_group=TWO)
            else:
                tcgen05.commit(bar)
    cute.arch.mbarrier_wait(bar, 0)
    cute.copy(t2r, tTR_t, frag)
    cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(frag, tTR_g)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit(is_two_cta=two_cta)
        cute.arch.dealloc_tmem(tmem_ptr, cols, is_two_cta=two_cta)


@cute.jit
def run_mma(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, dtype: cutlass.Constexpr, acc_dtype: cutlass.Constexpr,
            a_major: cutlass.Constexpr, b_major: cutlass.Constexpr, M: cutlass.Constexpr, N: cutlass.Constexpr,
            K: cutlass.Constexpr, accumulate: cutlass.Constexpr = False, cols: cutlass.Constexpr = 256,
            two_cta: cutlass.Constexpr = False):
    tiled_mma = sm100_utils.make_trivial_tiled_mma(dtype, a_major, b_major, acc_dtype, TWO if two_cta else ONE, (M, N))
    g = 2 if two_cta else 1
    mma_kernel(mA, mB, mC, tiled_mma, dtype, acc_dtype, M, N, K, accumulate, cols, two_cta).launch(
        grid=(g, 1, 1), block=(128, 1, 1), cluster=(g, 1, 1))


def operands(M, N, K, integer=False, seed=0):
    rng = np.random.default_rng(seed)
    lo, hi = (-100, 100) if integer else (-3, 4)
    t = np.int32 if integer else np.float32
    return rng.integers(lo, hi, (M, K)).astype(t), rng.integers(lo, hi, (N, K)).astype(t)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype,a_major,b_major,N,K", [
    (cutlass.Float16, K_MAJOR, K_MAJOR, 64, 64),      # 128-byte swizzle
    (cutlass.BFloat16, K_MAJOR, K_MAJOR, 32, 32),     # 64-byte swizzle
    (cutlass.Float16, K_MAJOR, K_MAJOR, 16, 16),      # 32-byte swizzle
    (cutlass.Float16, MN_MAJOR, MN_MAJOR, 64, 32),    # MN-major 128-byte swizzle
    (cutlass.BFloat16, MN_MAJOR, K_MAJOR, 16, 32),    # MN-major A (SW128), K-major B (SW64)
    (cutlass.Float16, K_MAJOR, MN_MAJOR, 16, 16),     # B: 16 N of f16 = 32 bytes: MN-major 32-byte swizzle
    (cutlass.Float32, K_MAJOR, K_MAJOR, 32, 32),      # tf32
    (cutlass.Float8E4M3FN, K_MAJOR, K_MAJOR, 32, 128),
    (cutlass.Float8E5M2, K_MAJOR, K_MAJOR, 16, 64),
])
def test_mma_kinds_and_layouts_against_numpy(target, dtype, a_major, b_major, N, K):
    M = 128
    A, B = operands(M, N, K)
    if dtype is cutlass.Float32:  # tf32 keeps 10 mantissa bits: fractions make the truncation visible
        A = A + np.float32(1 / 3)
    C = np.zeros((M, N), np.float32)
    cute.compile(run_mma, A, B, C, dtype, cutlass.Float32, a_major, b_major, M, N, K, options=target)(A, B, C)
    if dtype is cutlass.Float32:
        trunc = (A.view(np.uint32) & np.uint32(0xffffe000)).view(np.float32)
        np.testing.assert_allclose(C, trunc.astype(np.float64) @ B.T.astype(np.float64), rtol=1e-6, atol=1e-3)
        assert not np.allclose(C, A.astype(np.float64) @ B.T, rtol=1e-7, atol=1e-5)
    else:
        np.testing.assert_array_equal(C, A @ B.T)


@pytest.mark.parametrize("target", TARGETS)
def test_int8_mma_against_numpy(target):
    M, N, K = 128, 32, 64
    A, B = operands(M, N, K, integer=True)
    C = np.zeros((M, N), np.int32)
    cute.compile(run_mma, A, B, C, cutlass.Int8, cutlass.Int32, K_MAJOR, K_MAJOR, M, N, K, options=target)(A, B, C)
    np.testing.assert_array_equal(C, A.astype(np.int64) @ B.T.astype(np.int64))


@pytest.mark.parametrize("accumulate", [False, True])
def test_accumulate_field(accumulate):
    M, N, K = 128, 32, 32
    A, B = operands(M, N, K, seed=3)
    C0 = np.random.default_rng(4).integers(-5, 5, (M, N)).astype(np.float32)
    C = C0.copy()
    cute.compile(run_mma, A, B, C, cutlass.Float16, cutlass.Float32, K_MAJOR, K_MAJOR, M, N, K, accumulate,
                 options=EMU)(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T + (C0 if accumulate else 0))


@pytest.mark.parametrize("M,N,cols", [(256, 64, 64), (128, 64, 32), (128, 128, 64)])
def test_two_cta_mma_in_a_2x1_cluster(M, N, cols):
    # M = 128: 64 rows per CTA, the accumulator's N columns split over the lane halves, so N / 2
    # tensor-memory columns hold it (an allocation of N / 2 columns is reported when overrun).
    K = 32
    A, B = operands(M, N, K, seed=5)
    C = np.zeros((M, N), np.float32)
    cute.compile(run_mma, A, B, C, cutlass.Float16, cutlass.Float32, K_MAJOR, K_MAJOR, M, N, K, False, cols, True,
                 options=EMU)(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


def test_two_cta_accumulator_of_64_rows_per_cta_in_tensor_memory():
    # CuTe's tmem_frg_2sm for 64 rows per CTA, the "2x2" atom (64,(N/2,2)):(1,(128,64)) in
    # (lane, column) addressing: row r and column n of one MMA's (64, N) tile sit at lane
    # r + 64 * (n // (N/2)), column n % (N/2); the next MMA tile along N starts N/2 columns on.
    # Tensor-memory offsets of f32: lane << 16 | column.
    mma = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, K_MAJOR, K_MAJOR, cutlass.Float32, TWO, (128, 64))
    shape = mma.partition_shape_C((128, 128))
    assert shape == ((64, 64), 1, 2)
    layout = mma.make_fragment_C(shape).layout
    for r, n, j in [(0, 0, 0), (1, 0, 0), (63, 31, 0), (0, 32, 0), (5, 40, 0), (63, 63, 0), (0, 0, 1), (7, 33, 1)]:
        lane, col = r + 64 * (n // 32), n % 32 + 32 * j
        assert cute.crd2idx(((r, n), 0, j), layout) == (lane << 16) + col, (r, n, j)


def test_accumulator_outside_the_allocation_is_reported():
    M, N, K = 128, 64, 16
    A, B = operands(M, N, K)
    C = np.zeros((M, N), np.float32)
    with pytest.raises(cutlass.DSLRuntimeError, match="tcgen05.mma: D reaches tensor-memory column 32, outside the CTA's allocation"):
        cute.compile(run_mma, A, B, C, cutlass.Float16, cutlass.Float32, K_MAJOR, K_MAJOR, M, N, K, False, 32,
                     options=EMU)(A, B, C)


# ---- descriptors against the PTX ISA's tables ------------------------------------------------------

def test_instruction_descriptor_bits():
    op = tcgen05.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (128, 256, 16), ONE, tcgen05.OperandSource.SMEM,
                              K_MAJOR, MN_MAJOR)
    d = _core.cute.tcgen05_instruction_descriptor(op._atom)
    # D f32 (1 << 4), A bf16 (1 << 7), B bf16 (1 << 10), B MN-major (1 << 16), N >> 3 = 32 at 17, M >> 4 = 8 at 24.
    assert d == (1 << 4) | (1 << 7) | (1 << 10) | (1 << 16) | (32 << 17) | (8 << 24)
    i8 = tcgen05.MmaI8Op(cutlass.Int8, (64, 8), ONE)
    assert _core.cute.tcgen05_instruction_descriptor(i8._atom) == (2 << 4) | (1 << 7) | (1 << 10) | (1 << 17) | (4 << 24)


@pytest.mark.parametrize("kind,code", [(tcgen05.SmemLayoutAtomKind.K_SW128, 2), (tcgen05.SmemLayoutAtomKind.K_SW64, 4),
                                       (tcgen05.SmemLayoutAtomKind.K_SW32, 6)])
def test_smem_descriptor_of_k_major_swizzled_tiles(kind, code):
    bits = int(kind.value) - 4
    row = (16 << bits) // 2  # f16 elements per swizzle row
    # The (128, 16) K-major tile of one MMA: rows `row` elements apart, 8-row groups 8 rows apart.
    tile = cute.make_layout(((8, 16), 16), stride=((row, 8 * row), 1))
    d = _core.cute.umma_descriptor_bits(tile, 16, bits, int(_core.cute.OperandMajor.K))
    sbo = 8 * (16 << bits) // 16  # 8 rows of one swizzle row apart, in 16-byte units
    assert d >> 61 == code and (d >> 46) & 3 == 1 and (d >> 32) & 0x3FFF == sbo


def test_mma_refuses_bad_shapes_and_types():
    with pytest.raises(cutlass.DSLUserCodeError, match="instruction_shape must be"):
        tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (96, 64, 16))
    with pytest.raises(cutlass.DSLUserCodeError, match="M = 128 or 256"):
        tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 64), TWO)
    with pytest.raises(cutlass.DSLUserCodeError, match="acc_dtype must be Int32"):
        tcgen05.MmaF8F6F4Op(cutlass.Int8, cutlass.Int8, cutlass.Float32, (128, 64)) if False else \
            _core.cute.make_tcgen05_mma(3, cutlass.Int8, cutlass.Int8, cutlass.Float32, (128, 64), 1, 0, 0, 0)
    with pytest.raises(cutlass.DSLUserCodeError, match="tensor memory \\(OperandSource.TMEM\\) must be K-major"):
        tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 64), ONE, tcgen05.OperandSource.TMEM, MN_MAJOR)


@pytest.mark.parametrize("args,text", [
    ((cutlass.Float16, cutlass.Float32, K_MAJOR, K_MAJOR, 128, 64, 64), "tcgen05.mma.cta_group::1.kind::f16"),
    ((cutlass.Int8, cutlass.Int32, K_MAJOR, K_MAJOR, 128, 32, 64), "tcgen05.mma.cta_group::1.kind::i8"),
    ((cutlass.Float16, cutlass.Float32, K_MAJOR, K_MAJOR, 256, 64, 32, False, 64, True), "tcgen05.mma.cta_group::2.kind::f16"),
])
def test_ptx_for_sm100a_is_accepted_by_nvjitlink(args, text):
    dtype, acc = args[0], args[1]
    M, N, K = args[4], args[5], args[6]
    A = np.zeros((M, K), np.int32 if acc is cutlass.Int32 else np.float32)
    B = np.zeros((N, K), A.dtype)
    C = np.zeros((M, N), A.dtype)
    gpu = cute.compile(run_mma, A, B, C, *args, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is None:
        pytest.skip("no libNVVM here: PTX was not generated")
    assert text in gpu.__ptx__ and "tcgen05.ld.sync.aligned.32x32b.x16.b32" in gpu.__ptx__
    assert gpu.__cubin__


# ---- A from tensor memory -------------------------------------------------------------------------

@cute.kernel
def tmem_a_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
                  M: cutlass.Constexpr, N: cutlass.Constexpr, K: cutlass.Constexpr, a_from_tensor: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    dtype = cutlass.Float16
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, (M, N, K), dtype, 1)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bar = smem.allocate_array(cutlass.Int64, 1)
    sB = smem.allocate_tensor(dtype, sB_l.outer, 1024, sB_l.inner)
    gA = cute.make_tensor(mA.iterator, cute.make_layout((M, K), stride=(K, 1)))
    gB = cute.make_tensor(mB.iterator, cute.make_layout((N, K), stride=(K, 1)))
    gC = cute.make_tensor(mC.iterator, cute.make_layout((M, N), stride=(N, 1)))
    for j in cutlass.range_constexpr(N * K // 128):
        i = tidx + j * 128
        n, k = i % N, i // N
        sB[((n, k % 16), 0, k // 16, 0)] = gB[(n, k)].to(dtype)
    cute.arch.fence_proxy("async.shared", space="cta")
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    if warp == 0:
        cute.arch.alloc_tmem(128, holder)
    cute.arch.sync_threads()
    acc_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tCtAcc = cute.make_tensor(acc_ptr, tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((M, N))).layout)
    # A after the accumulator's N columns: two f16 to a 32-bit column.
    a_ptr = cute.recast_ptr(acc_ptr + N, dtype=dtype)
    if cutlass.const_expr(a_from_tensor):
        # As NVIDIA's Blackwell fmha.py makes P's fragment: from a tensor laid out as A's staged smem
        # layout; a tensor-memory fragment takes only its shape (CuTe's make_fragment_like).
        sA_l = sm100_utils.make_smem_layout_a(tiled_mma, (M, N, K), dtype, 1)
        a_frag = tiled_mma.make_fragment_A(cute.make_tensor(acc_ptr, sA_l.outer))[None, None, None, 0]
    else:
        a_frag = tiled_mma.make_fragment_A(tiled_mma.partition_shape_A((M, K)))
    tCtA = cute.make_tensor(a_ptr, a_frag.layout)
    tA = cute.make_tensor(a_ptr, cute.make_layout((M, K), stride=(131072, 1)))
    r2t = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.St32x32bOp(tcgen05.Repetition.x8), dtype), tA)
    thr = r2t.get_slice(tidx)
    src = thr.partition_S(gA)
    frag = cute.make_rmem_tensor(src.shape, dtype)
    frag.store(src.load().to(dtype))
    cute.copy(r2t, frag, thr.partition_D(tA))
    cute.arch.fence_view_async_tmem_store()
    tcgen05.fence_before_thread_sync()
    cute.arch.sync_threads()
    tcgen05.fence_after_thread_sync()
    tCrB = tiled_mma.make_fragment_B(sB)
    if warp == 0:
        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
        for k in cutlass.range_constexpr(cute.size(tCrB, mode=[2])):
            cute.gemm(tiled_mma, tCtAcc, tCtA[(None, None, k)], tCrB[(None, None, k, 0)], tCtAcc)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        tcgen05.commit(bar)
    cute.arch.mbarrier_wait(bar, 0)
    tCgC = tiled_mma.get_slice(0).partition_C(gC)
    rep = tcgen05.Repetition.x1 if cutlass.const_expr(N == 8) else tcgen05.Repetition.x2
    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld16x256bOp(rep), cutlass.Float32),
                                 tCtAcc[(None, 0, 0)])
    tl = t2r.get_slice(tidx)
    dst = tl.partition_D(tCgC[(None, 0, 0)])
    out = cute.make_rmem_tensor(dst.shape, cutlass.Float32)
    cute.copy(t2r, tl.partition_S(tCtAcc[(None, 0, 0)]), out)
    cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(out, dst)
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(acc_ptr, 128)


@cute.jit
def run_tmem_a(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, M: cutlass.Constexpr, N: cutlass.Constexpr,
               K: cutlass.Constexpr, a_from_tensor: cutlass.Constexpr = False):
    tiled_mma = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, K_MAJOR, K_MAJOR, cutlass.Float32, ONE, (M, N),
                                                   tcgen05.OperandSource.TMEM)
    tmem_a_kernel(mA, mB, mC, tiled_mma, M, N, K, a_from_tensor).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_operand_a_from_tensor_memory():
    M, N, K = 128, 32, 32
    A, B = operands(M, N, K, seed=7)
    C = np.zeros((M, N), np.float32)
    gA = np.ascontiguousarray(A)
    cute.compile(run_tmem_a, gA, B, C, M, N, K, options=EMU)(gA, B, C)
    np.testing.assert_array_equal(C, A @ B.T)
    C[...] = 0
    cute.compile(run_tmem_a, gA, B, C, M, N, K, True, options=EMU)(gA, B, C)
    np.testing.assert_array_equal(C, A @ B.T)
    gpu = cute.compile(run_tmem_a, gA, B, C, M, N, K, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is not None:
        assert "tcgen05.mma.cta_group::1.kind::f16 [" in gpu.__ptx__ and "], [" in gpu.__ptx__
        assert "tcgen05.st.sync.aligned.32x32b.x8.b32" in gpu.__ptx__ and gpu.__cubin__


def test_operand_a_from_tensor_memory_takes_eight_columns_at_128_rows():
    # NVIDIA's GQA decode (mixed_input_fmha_decode.py) packs 8 query heads into N with M = 128.
    M, N, K = 128, 8, 32
    A, B = operands(M, N, K, seed=11)
    C = np.zeros((M, N), np.float32)
    gA = np.ascontiguousarray(A)
    cute.compile(run_tmem_a, gA, B, C, M, N, K, options=EMU)(gA, B, C)
    np.testing.assert_array_equal(C, A @ B.T)
    assert np.abs(C).max() > 0
    with pytest.raises(cutlass.DSLUserCodeError, match="instruction_shape must be"):
        tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 8))  # A in shared memory: N % 16


# ---- a whole small GEMM: TMA -> smem -> tcgen05.mma -> TMEM -> tcgen05.ld -> gmem --------------

TM, TN, TK = 128, 128, 64


@cute.kernel
def tma_gemm_kernel(atom_a: cute.CopyAtom, tA: cute.Tensor, atom_b: cute.CopyAtom, tB: cute.Tensor, mC: cute.Tensor,
                    tiled_mma: cute.TiledMma, a_tile: cute.ComposedLayout, b_tile: cute.ComposedLayout):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, bidy, _ = cute.arch.block_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    dtype = cutlass.Float16
    sA_l = sm100_utils.make_smem_layout_a(tiled_mma, (TM, TN, TK), dtype, 1)
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, (TM, TN, TK), dtype, 1)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bars = smem.allocate_array(cutlass.Int64, 3)  # TMA landed, the stage's MMAs done, the accumulator done
    sA = smem.allocate_tensor(dtype, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(dtype, sB_l.outer, 1024, sB_l.inner)
    # The same bytes as the TMA boxes see them: (M, K) tiles with the swizzle in the layout.
    sA_tma = cute.make_tensor(cute.recast_ptr(sA.iterator, None), a_tile)
    sB_tma = cute.make_tensor(cute.recast_ptr(sB.iterator, None), b_tile)
    if tidx == 0:
        cute.arch.mbarrier_init(bars, 1)
        cute.arch.mbarrier_init(bars + 1, 1)
        cute.arch.mbarrier_init(bars + 2, 1)
    cute.arch.mbarrier_init_fence()
    if warp == 0:
        cute.arch.alloc_tmem(TN, holder)
    cute.arch.sync_threads()
    acc = cute.make_tensor(cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder),
                           tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((TM, TN))).layout)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)
    gA = cute.local_tile(tA, (TM, TK), (bidx, None))
    gB = cute.local_tile(tB, (TN, TK), (bidy, None))
    for kt in cutlass.range(cute.size(gA, mode=[2]), unroll=1):
        if warp == 0:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bars, (TM + TN) * TK * 2)
            cute.copy(atom_a, gA[(None, None, kt)], sA_tma, tma_bar_ptr=bars)
            cute.copy(atom_b, gB[(None, None, kt)], sB_tma, tma_bar_ptr=bars)
            cute.arch.mbarrier_wait(bars, kt % 2)
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, 0)], tCrB[(None, None, kb, 0)], acc)
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)  # after the first gemm, as the tutorials
            tcgen05.commit(bars + 1)
            cute.arch.mbarrier_wait(bars + 1, kt % 2)  # the MMAs read the stage: reuse it after they finish
    if warp == 0:
        tcgen05.commit(bars + 2)
    cute.arch.mbarrier_wait(bars + 2, 0)
    store_accumulator(tiled_mma, acc, cute.local_tile(mC, (TM, TN), (bidx, bidy)), tidx, tcgen05.Repetition.x32)
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(acc.iterator, TN)


@cute.jit
def run_tma_gemm(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    tiled_mma = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, K_MAJOR, K_MAJOR, cutlass.Float32, ONE, (TM, TN))
    atom = tcgen05.make_smem_layout_atom(tcgen05.SmemLayoutAtomKind.K_SW128, cutlass.Float16)
    a_tile = cute.tile_to_shape(atom, (TM, TK), order=(0, 1))
    b_tile = cute.tile_to_shape(atom, (TN, TK), order=(0, 1))
    atom_a, tA = cute.nvgpu.cpasync.make_tiled_tma_atom(cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), mA, a_tile, (TM, TK))
    atom_b, tB = cute.nvgpu.cpasync.make_tiled_tma_atom(cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), mB, b_tile, (TN, TK))
    tma_gemm_kernel(atom_a, tA, atom_b, tB, mC, tiled_mma, a_tile, b_tile).launch(
        grid=(cute.size(mC, mode=[0]) // TM, cute.size(mC, mode=[1]) // TN, 1), block=(128, 1, 1))


def test_tma_to_tcgen05_to_tmem_gemm_against_numpy():
    M, N, K = 256, 256, 256
    rng = np.random.default_rng(11)
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (N, K)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    cute.compile(run_tma_gemm, A, B, C, options=EMU)(A, B, C)
    np.testing.assert_array_equal(C, A.astype(np.float32) @ B.astype(np.float32).T)
    gpu = cute.compile(run_tma_gemm, A, B, C, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is not None:
        assert "cp.async.bulk.tensor.2d" in gpu.__ptx__ and "tcgen05.mma.cta_group::1.kind::f16" in gpu.__ptx__
        assert gpu.__cubin__  # nvJitLink accepted the whole GEMM for sm_100a


def test_tiled_mma_op_answers_the_operations_shape_and_types():
    # NVIDIA's MLA decode sizes its page loads with tiled_mma.op.shape_mnk[0] // thr_id.shape.
    seen = {}

    @cute.jit
    def host():
        for cta_group, mn in ((ONE, (128, 256)), (tcgen05.CtaGroup.TWO, (256, 128))):
            tiled = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, K_MAJOR, K_MAJOR, cutlass.Float32, cta_group, mn)
            op = tiled.op
            seen[mn] = (op.shape_mnk, op.a_dtype, op.b_dtype, op.acc_dtype, cute.size(tiled.thr_id.shape))

    cute.compile(host, options=EMU)
    assert seen[(128, 256)] == ((128, 256, 16), cutlass.Float16, cutlass.Float16, cutlass.Float32, 1)
    assert seen[(256, 128)] == ((256, 128, 16), cutlass.Float16, cutlass.Float16, cutlass.Float32, 2)
