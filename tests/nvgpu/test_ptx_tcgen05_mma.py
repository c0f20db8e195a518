"""Blackwell GEMMs on the PTX executor ("--target ptx"): tcgen05.mma, tcgen05.commit (and the
tcgen05.ld epilogue) in the PTX libNVVM made from the NVVM lowering, against numpy. The kernels are
test_tcgen05_mma.py's (which runs each kind and operand layout on both targets): f16 -> f16, an
M = 64 MMA (the accumulator in the first 16 lanes of each warp's quarter), Field.ACCUMULATE (the
enable-input-d predicate), A from tensor memory, a 2-CTA MMA (cta_group::2, multicast commit), a TMA-fed GEMM; and NVIDIA's
Blackwell tutorial GEMM (fp16_gemm_0) driven with numpy arrays.

The executor decodes the instruction and shared-memory descriptors from the kernel's registers, as
the GPU does: these are the tests that fail when the lowering swaps the A and B descriptors or the
instruction descriptor's fields (tests/mutation/run_mutations.py), which the IR emulator never sees."""
import importlib.util

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import tcgen05
from ptx_target import needs_libnvvm
from test_tcgen05_mma import K_MAJOR, operands, run_mma, run_tma_gemm, run_tmem_a

pytestmark = needs_libnvvm
PTX = "--target ptx --gpu-arch sm_100a"


def test_ptx_tcgen05_mma_f16_accumulator_against_numpy():
    # Two f16 accumulators to a tensor-memory column.
    M, N, K = 128, 32, 32
    A, B = operands(M, N, K, seed=2)
    C = np.zeros((M, N), np.float16)
    cute.compile(run_mma, A, B, C, cutlass.Float16, cutlass.Float16, K_MAJOR, K_MAJOR, M, N, K, options=PTX)(A, B, C)
    np.testing.assert_array_equal(C, (A @ B.T).astype(np.float16))


@pytest.mark.parametrize("accumulate", [False, True])
def test_ptx_tcgen05_mma_enable_input_d(accumulate):
    M, N, K = 128, 32, 32
    A, B = operands(M, N, K, seed=3)
    C0 = np.random.default_rng(4).integers(-5, 5, (M, N)).astype(np.float32)
    C = C0.copy()
    cute.compile(run_mma, A, B, C, cutlass.Float16, cutlass.Float32, K_MAJOR, K_MAJOR, M, N, K, accumulate,
                 options=PTX)(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T + (C0 if accumulate else 0))


def test_ptx_tcgen05_mma_a_from_tensor_memory():
    M, N, K = 128, 32, 32
    A, B = operands(M, N, K, seed=7)
    C = np.zeros((M, N), np.float32)
    gA = np.ascontiguousarray(A)
    cute.compile(run_tmem_a, gA, B, C, M, N, K, options=PTX)(gA, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


@pytest.mark.parametrize("M,N,cols", [(256, 64, 64), (128, 64, 32), (128, 128, 64)])
def test_ptx_tcgen05_mma_two_ctas_share_one_mma(M, N, cols):
    # cta_group::2 in a 2x1 cluster: the first M / 2 rows of A and D in CTA 0, the others in CTA 1,
    # B's halves from each; the commit multicasts to both CTAs' barriers. M = 128: each CTA's 64
    # rows hold columns 0 .. N/2 - 1 in lanes 0-63 and the others in lanes 64-127 (N / 2 columns).
    K = 32
    A, B = operands(M, N, K, seed=5)
    C = np.zeros((M, N), np.float32)
    compiled = cute.compile(run_mma, A, B, C, cutlass.Float16, cutlass.Float32, K_MAJOR, K_MAJOR, M, N, K, False, cols,
                            True, options=PTX)
    assert "tcgen05.mma.cta_group::2.kind::f16" in compiled.__ptx__
    compiled(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


@cute.kernel
def m64_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma, N: cutlass.Constexpr,
               K: cutlass.Constexpr):
    M, dtype = 64, cutlass.Float16
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
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
    for j in cutlass.range_constexpr(M * K // 128):
        i = tidx + j * 128
        m, k = i % M, i // M
        sA[((m, k % 16), 0, k // 16, 0)] = gA[(m, k)].to(dtype)
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
    tmem_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)
    acc = cute.make_tensor(tmem_ptr, tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((M, N))).layout)
    if warp == 0:
        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
        for k in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrA[(None, None, k, 0)], tCrB[(None, None, k, 0)], acc)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        tcgen05.commit(bar)
    cute.arch.mbarrier_wait(bar, 0)
    # 16-lane loads: each warp reads its 16 rows.
    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld16x256bOp(tcgen05.Repetition.x1), cutlass.Float32),
                                 acc[(None, 0, 0)])
    thr = t2r.get_slice(tidx)
    dst = thr.partition_D(tiled_mma.get_slice(0).partition_C(gC)[(None, 0, 0)])
    frag = cute.make_rmem_tensor(dst.shape, cutlass.Float32)
    cute.copy(t2r, thr.partition_S(acc[(None, 0, 0)]), frag)
    cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(frag, dst)
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(tmem_ptr, 128)


@cute.jit
def run_m64(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, N: cutlass.Constexpr, K: cutlass.Constexpr):
    tiled_mma = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, K_MAJOR, K_MAJOR, cutlass.Float32,
                                                   tcgen05.CtaGroup.ONE, (64, N))
    m64_kernel(mA, mB, mC, tiled_mma, N, K).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_ptx_tcgen05_mma_m64_accumulator_layout():
    N, K = 32, 32
    A, B = operands(64, N, K, seed=9)
    C = np.zeros((64, N), np.float32)
    compiled = cute.compile(run_m64, A, B, C, N, K, options=PTX)
    assert "tcgen05.ld.sync.aligned.16x256b" in compiled.__ptx__
    compiled(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


def test_ptx_tma_fed_tcgen05_gemm_against_numpy():
    M, N, K = 256, 256, 256
    rng = np.random.default_rng(11)
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (N, K)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    cute.compile(run_tma_gemm, A, B, C, options=PTX)(A, B, C)
    np.testing.assert_array_equal(C, A.astype(np.float32) @ B.astype(np.float32).T)


def test_ptx_tcgen05_mma_accumulator_outside_the_allocation_is_reported():
    M, N, K = 128, 64, 16
    A, B = operands(M, N, K)
    C = np.zeros((M, N), np.float32)
    with pytest.raises(cutlass.DSLRuntimeError,
                       match=r"PTX line \d+ `@ep tcgen05\.mma\.cta_group::1\.kind::f16 .*: tcgen05\.mma\.cta_group::1\."
                             r"kind::f16: D reaches tensor-memory lane 0, column 32, outside the CTA's allocation"):
        cute.compile(run_mma, A, B, C, cutlass.Float16, cutlass.Float32, K_MAJOR, K_MAJOR, M, N, K, False, 32,
                     options=PTX)(A, B, C)


# ---- NVIDIA's Blackwell tutorial GEMM, with numpy host arrays ------------------------------------

def _tutorial(name):
    import nvidia_examples
    if nvidia_examples.ROOT is None:
        pytest.skip("NVIDIA's examples are not present (set OPENCUTE_NVIDIA_EXAMPLES)")
    path = nvidia_examples.path("cute", "blackwell", "tutorial", "tutorial_gemm", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"nvidia_tutorial_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _aligned(x):
    buf = np.zeros(x.nbytes + 64, np.uint8)
    off = (-buf.ctypes.data) % 64
    y = buf[off:off + x.nbytes].view(x.dtype).reshape(x.shape)
    y[...] = x
    return y


def test_ptx_nvidia_tutorial_fp16_gemm_0_against_numpy(monkeypatch):
    from cutlass.cute.runtime import from_dlpack
    tutorial = _tutorial("fp16_gemm_0")
    monkeypatch.setenv("CUTE_DSL_TARGET", "ptx")
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    m, n, k = 256, 256, 128
    rng = np.random.default_rng(1111)
    a = _aligned(rng.integers(-2, 3, (m, k)).astype(np.float16))
    b = _aligned(rng.integers(-2, 3, (n, k)).astype(np.float16))
    c = _aligned(np.zeros((m, n), np.float16))

    def t(x, d):
        return from_dlpack(x, assumed_align=32).mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(
            mode=1, divisibility=d)

    tutorial.host_function(t(a, k), t(b, k), t(c, n), no_cache=True)
    np.testing.assert_array_equal(c, (a.astype(np.float32) @ b.astype(np.float32).T).astype(np.float16))
