"""wgmma with A from registers, the fragment carried across a dynamic loop and rewritten in 32-bit
words between GEMMs, as FlashAttention-4's forward carries P (cvt.rn.bf16x2 at the end of one
iteration, the P*V wgmma of the next).

When the lowering packed the 16-/8-bit values into 32-bit registers at the wgmma, those registers
were written after the wgmma.fence, against the PTX ISA's rule (helpers/wgmma_fence_rule.py); ptxas
then injected a warpgroup.arrive before every such wgmma (info C7519) and ran each as its own group,
serialising FlashAttention's P*V GEMM. The PTX is checked against that rule; the results against
numpy on the IR emulator, on the PTX executor (the PTX that libNVVM made) and on the GPU."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import warpgroup
from cutlass.utils import LayoutEnum
from ptx_target import assert_same_on_both_targets, needs_libnvvm, run_on_both_targets
import toolchain
from wgmma_fence_rule import a_registers_written_after_the_fence

ROW = LayoutEnum.ROW_MAJOR
M, N, K = 64, 32, 64
ITERATIONS = 3  # A, -A, A: the sum is A @ B.T

# The sign bits of every value in a 32-bit word: XOR negates each value exactly.
SIGN_BITS = {cutlass.BFloat16: 0x80008000, cutlass.Float16: 0x80008000, cutlass.Float8E4M3FN: 0x80808080}


def as_int32(bits):
    return bits - (1 << 32) if bits >= 1 << 31 else bits


@cute.kernel
def carried_a_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
                     dtype: cutlass.Constexpr, sign_bits: cutlass.Constexpr, negate_after_fence: cutlass.Constexpr,
                     iterations: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    nthr = cute.size(tiled_mma)
    sA_layout = sm90_utils.make_smem_layout_a(ROW, (M, N, K), dtype, 1)
    sB_layout = sm90_utils.make_smem_layout_b(ROW, (M, N, K), dtype, 1)
    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(dtype, sA_layout.outer, 1024, sA_layout.inner)
    sB = smem.allocate_tensor(dtype, sB_layout.outer, 1024, sB_layout.inner)
    for j in cutlass.range_constexpr(M * K // nthr):
        i = tidx + j * nthr
        sA[(i % M, i // M, 0)] = mA[(i % M, i // M)].to(dtype)
    for j in cutlass.range_constexpr(N * K // nthr):
        i = tidx + j * nthr
        sB[(i % N, i // N, 0)] = mB[(i % N, i // N)].to(dtype)
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_threads()

    thr_mma = tiled_mma.get_slice(tidx)
    tCsA = thr_mma.partition_A(sA)
    tCrA = tiled_mma.make_fragment_A(tCsA)
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
    for i in cutlass.range_constexpr(cute.size(tCrA)):
        tCrA[i] = tCsA[i]
    tCgC = thr_mma.partition_C(cute.local_tile(mC, (M, N), (0, 0)))
    acc = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
    acc.fill(0.0)
    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
    words = cute.recast_tensor(tCrA, cutlass.Int32)
    for _ in cutlass.range(iterations, unroll=1):
        warpgroup.fence()
        if cutlass.const_expr(negate_after_fence):
            # A written after the fence (allowed by the DSL, fenced by ptxas): the wgmmas read it.
            for j in cutlass.range_constexpr(cute.size(words)):
                words[j] = words[j] ^ cutlass.Int32(sign_bits)
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, 0)], tCrB[(None, None, kb, 0)], acc)
        warpgroup.commit_group()
        warpgroup.wait_group(0)
        if cutlass.const_expr(not negate_after_fence):
            # The next iteration's A, written a 32-bit word at a time (FlashAttention's cvt_f16).
            for j in cutlass.range_constexpr(cute.size(words)):
                words[j] = words[j] ^ cutlass.Int32(sign_bits)
    for i in cutlass.range_constexpr(cute.size(acc)):
        tCgC[i] = acc[i]


@cute.jit
def carried_a(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, iterations: cutlass.Int32,
              dtype: cutlass.Constexpr, negate_after_fence: cutlass.Constexpr = False):
    tiled_mma = sm90_utils.make_trivial_tiled_mma(dtype, dtype, ROW.sm90_mma_major_mode(), ROW.sm90_mma_major_mode(),
                                                  cutlass.Float32, (1, 1, 1), (64, N),
                                                  warpgroup.OperandSource.RMEM)
    carried_a_kernel(mA, mB, mC, tiled_mma, dtype, as_int32(SIGN_BITS[dtype]), negate_after_fence,
                     iterations).launch(
        grid=(1, 1, 1), block=(cute.size(tiled_mma), 1, 1))


def operands(seed=3):
    rng = np.random.default_rng(seed)
    # Small integers: exact in every input type and in the f32 sums.
    return (rng.integers(-3, 4, (M, K)).astype(np.float32), rng.integers(-3, 4, (N, K)).astype(np.float32),
            np.zeros((M, N), np.float32))


DTYPES = [cutlass.BFloat16, cutlass.Float16, cutlass.Float8E4M3FN]


@pytest.mark.parametrize("dtype", DTYPES)
def test_register_a_is_not_written_between_the_fence_and_the_wgmma(dtype):
    A, B, C = operands()
    compiled = cute.compile(carried_a, A, B, C, ITERATIONS, dtype, options="--target gpu --gpu-arch sm_90a")
    ptx = toolchain.ptx_of(compiled)
    assert ptx.count("wgmma.mma_async") >= 2 and ptx.count("wgmma.fence") >= 1
    assert a_registers_written_after_the_fence(ptx) == []


def test_the_check_sees_a_register_written_after_the_fence():
    ptx = """
    wgmma.fence.sync.aligned;
    mov.b32 %r7, {%rs1, %rs2};
    { .reg .pred p; setp.ne.b32 p, %r9, 0; wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%f1,%f2}, {%r6,%r7,%r8,%r5}, %rd3, p, 1, 1, 1; }
    """
    assert a_registers_written_after_the_fence(ptx) == [("%r7", 4)]


@needs_libnvvm
@pytest.mark.parametrize("dtype", DTYPES)
def test_carried_register_a_on_the_emulator_and_the_ptx_executor(dtype):
    A, B, C = operands()
    emulated, executed = run_on_both_targets(carried_a, [A, B, C], (dtype,), options="--gpu-arch sm_90a",
                                             scalars=(ITERATIONS,))
    np.testing.assert_array_equal(emulated[2], A @ B.T)
    np.testing.assert_array_equal(executed[2], A @ B.T)
    assert_same_on_both_targets(emulated, executed)


@needs_libnvvm
def test_a_written_after_the_fence_is_read_by_the_wgmma():
    """The words read before the fence are only used when nothing writes the fragment in between:
    here each iteration negates A after its fence (-A, A, -A)."""
    A, B, C = operands()
    emulated, executed = run_on_both_targets(carried_a, [A, B, C], (cutlass.BFloat16, True),
                                             options="--gpu-arch sm_90a", scalars=(ITERATIONS,))
    np.testing.assert_array_equal(executed[2], -(A @ B.T))
    assert_same_on_both_targets(emulated, executed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_carried_register_a_on_the_gpu(dtype):
    torch = pytest.importorskip("torch")
    A, B, C = (torch.from_numpy(x).cuda() for x in operands())
    cute.compile(carried_a, A, B, C, ITERATIONS, dtype)(A, B, C, ITERATIONS)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(C.cpu().numpy(), (A @ B.T).cpu().numpy())
