"""The block-scaled MMA's data path of NVIDIA's nvfp4 tutorial on both CPU targets (the IR emulator
and the PTX executor), against numpy:
scale factors in shared memory in make_smem_layout_sfa/sfb's layout, moved to tensor memory by
tcgen05.cp (Cp4x32x128bOp, make_s2t_copy, get_s2t_smem_desc_tensor) into make_tmem_layout_sfa/sfb's
layout, then each K block's factors named to the MMA through Field.SFA / SFB (the tensor's iterator)."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.blockscaled_layout as blockscaled_utils
from cutlass.cute.nvgpu import OperandMajorMode, tcgen05

from ptx_target import needs_libnvvm
from test_tcgen05_block_scaled import e4m3, e8m0, pack_e2m1
from tmem_accumulator import store_accumulator

K_MAJOR = OperandMajorMode.K
ONE = tcgen05.CtaGroup.ONE


@cute.kernel
def s2t_kernel(mA: cute.Tensor, mB: cute.Tensor, mSFA: cute.Tensor, mSFB: cute.Tensor, mC: cute.Tensor,
               tiled_mma: cute.TiledMma, ab_dtype: cutlass.Constexpr, sf_dtype: cutlass.Constexpr,
               vec: cutlass.Constexpr, M: cutlass.Constexpr, N: cutlass.Constexpr, K: cutlass.Constexpr,
               zipped: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tiler = (M, N, K)
    sA_l = sm100_utils.make_smem_layout_a(tiled_mma, tiler, ab_dtype, 1)
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, tiler, ab_dtype, 1)
    sSFA_l = blockscaled_utils.make_smem_layout_sfa(tiled_mma, tiler, vec, 1)
    sSFB_l = blockscaled_utils.make_smem_layout_sfb(tiled_mma, tiler, vec, 1)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bar = smem.allocate_array(cutlass.Int64, 1)
    sA = smem.allocate_tensor(ab_dtype, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(ab_dtype, sB_l.outer, 1024, sB_l.inner)
    sSFA = smem.allocate_tensor(sf_dtype, sSFA_l, 128)
    sSFB = smem.allocate_tensor(sf_dtype, sSFB_l, 128)
    kb = tiled_mma.shape_mnk[2]
    nsf = kb // vec
    per_chunk = 4 // nsf
    if cutlass.const_expr(ab_dtype.width == 8):
        gA = cute.make_tensor(mA.iterator, cute.make_layout((M, K), stride=(K, 1)))
        gB = cute.make_tensor(mB.iterator, cute.make_layout((N, K), stride=(K, 1)))
        for j in cutlass.range_constexpr(M * K // 128):
            i = tidx + j * 128
            m, k = i % M, i // M
            sA[((m, k % kb), 0, k // kb, 0)] = gA[(m, k)].to(ab_dtype)
        for j in cutlass.range_constexpr(N * K // 128):
            i = tidx + j * 128
            n, k = i % N, i // N
            sB[((n, k % kb), 0, k // kb, 0)] = gB[(n, k)].to(ab_dtype)
    else:
        # Packed e2m1 pairs (the host's bytes) into the A / B tiles viewed as bytes.
        gA = cute.make_tensor(mA.iterator, cute.make_layout((M, K // 2), stride=(K // 2, 1)))
        gB = cute.make_tensor(mB.iterator, cute.make_layout((N, K // 2), stride=(K // 2, 1)))
        sA8, sB8 = cute.recast_tensor(sA, cutlass.Uint8), cute.recast_tensor(sB, cutlass.Uint8)
        hb = kb // 2
        for j in cutlass.range_constexpr(M * K // 256):
            i = tidx + j * 128
            m, k = i % M, i // M
            sA8[((m, k % hb), 0, k // hb, 0)] = gA[(m, k)]
        for j in cutlass.range_constexpr(N * K // 256):
            i = tidx + j * 128
            n, k = i % N, i // N
            sB8[((n, k % hb), 0, k // hb, 0)] = gB[(n, k)]
    # The factors (rows x K / vec bytes) by logical coordinate into the factor layouts.
    F = K // vec
    for mat, rows, dst in ((mSFA, M, sSFA), (mSFB, N, sSFB)):
        g = cute.make_tensor(mat.iterator, cute.make_layout((rows, F), stride=(F, 1)))
        d8 = cute.recast_tensor(dst, cutlass.Uint8)
        for j in cutlass.range_constexpr(rows * F // 128):
            i = tidx + j * 128
            r, f = i % rows, i // rows
            blk = f // nsf
            d8[((((r % 32, (r // 32) % 4, r // 128), (0, f % nsf)), 0, (blk % per_chunk, blk // per_chunk), 0))] = g[(r, f)]
    cute.arch.fence_proxy("async.shared", space="cta")
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    if warp == 0:
        cute.arch.alloc_tmem(256, holder)
    cute.arch.barrier()
    acc_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)
    tCtAcc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((M, N)))
    tCtAcc = cute.make_tensor(acc_ptr, tCtAcc.layout)
    # As the tutorial: SFA after the accumulator, SFB after SFA.
    sfa_ptr = cute.recast_ptr(acc_ptr + tcgen05.find_tmem_tensor_col_offset(tCtAcc), dtype=sf_dtype)
    tCtSFA = cute.make_tensor(sfa_ptr, blockscaled_utils.make_tmem_layout_sfa(
        tiled_mma, tiler, vec, cute.slice_(sSFA_l, (None, None, None, 0))))
    sfb_ptr = cute.recast_ptr(acc_ptr + tcgen05.find_tmem_tensor_col_offset(tCtAcc)
                              + tcgen05.find_tmem_tensor_col_offset(tCtSFA), dtype=sf_dtype)
    tCtSFB = cute.make_tensor(sfb_ptr, blockscaled_utils.make_tmem_layout_sfb(
        tiled_mma, tiler, vec, cute.slice_(sSFB_l, (None, None, None, 0))))
    atom = cute.make_copy_atom(tcgen05.Cp4x32x128bOp(ONE), sf_dtype)
    copies = []
    for s_t, t_t in ((sSFA, tCtSFA), (sSFB, tCtSFB)):
        s_c, t_c = cute.filter_zeros(s_t), cute.filter_zeros(t_t)
        tiled = tcgen05.make_s2t_copy(atom, t_c)
        thr = tiled.get_slice(0)
        src = tcgen05.get_s2t_smem_desc_tensor(tiled, thr.partition_S(s_c))
        copies.append((tiled, src, thr.partition_D(t_c)))
    if warp == 0:
        for cp_tiled, cp_src, cp_dst in copies:
            cute.copy(cp_tiled, cp_src[(None, None, None, None, 0)], cp_dst)
        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
        if cutlass.const_expr(zipped):
            # The persistent examples' form: the factors beside the operands, per k-block in C++.
            cute.gemm(tiled_mma, tCtAcc, [tCrA[(None, None, None, 0)], tCtSFA], [tCrB[(None, None, None, 0)], tCtSFB],
                      tCtAcc)
        else:
            for k in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                tiled_mma.set(tcgen05.Field.SFA, tCtSFA[(None, None, k)].iterator)
                tiled_mma.set(tcgen05.Field.SFB, tCtSFB[(None, None, k)].iterator)
                cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, k, 0)], tCrB[(None, None, k, 0)], tCtAcc)
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        tcgen05.commit(bar)
    cute.arch.mbarrier_wait(bar, 0)
    gC = cute.make_tensor(mC.iterator, cute.make_layout((M, N), stride=(N, 1)))
    store_accumulator(tiled_mma, tCtAcc, gC, tidx)
    cute.arch.barrier()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(acc_ptr, 256)


@cute.jit
def run_s2t(mA: cute.Tensor, mB: cute.Tensor, mSFA: cute.Tensor, mSFB: cute.Tensor, mC: cute.Tensor,
            ab_dtype: cutlass.Constexpr, sf_dtype: cutlass.Constexpr, vec: cutlass.Constexpr, M: cutlass.Constexpr,
            N: cutlass.Constexpr, K: cutlass.Constexpr, zipped: cutlass.Constexpr = False):
    tiled_mma = sm100_utils.make_blockscaled_trivial_tiled_mma(ab_dtype, ab_dtype, K_MAJOR, K_MAJOR, sf_dtype, vec,
                                                               ONE, (M, N))
    s2t_kernel(mA, mB, mSFA, mSFB, mC, tiled_mma, ab_dtype, sf_dtype, vec, M, N, K, zipped).launch(
        grid=(1, 1, 1), block=(128, 1, 1))


@pytest.mark.parametrize("target", ["cpu", pytest.param("ptx", marks=needs_libnvvm)])
@pytest.mark.parametrize("ab_dtype,sf_dtype,vec,zipped", [
    (cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, 16, False),   # nvf4: 4 factors per MMA, a chunk per K block
    (cutlass.Float4E2M1FN, cutlass.Float8E8M0FNU, 32, False),  # mxf4: 2 per MMA, two K blocks per chunk
    (cutlass.Float8E4M3FN, cutlass.Float8E8M0FNU, 32, False),  # mxf8: 1 per MMA, four K blocks per chunk
    (cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, 16, True),    # cute.gemm(mma, d, [A, SFA], [B, SFB], d)
    (cutlass.Float8E4M3FN, cutlass.Float8E8M0FNU, 32, True),
])
def test_factors_through_tcgen05_cp_against_numpy(ab_dtype, sf_dtype, vec, zipped, target):
    M, N, K = 128, 128, 256
    rng = np.random.default_rng(7)
    if ab_dtype is cutlass.Float8E4M3FN:
        A, B = (rng.integers(-8, 9, (r, K)).astype(np.float32) / 2 for r in (M, N))
    else:
        grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)
        A, B = rng.choice(grid, (M, K)), rng.choice(grid, (N, K))
    if sf_dtype is cutlass.Float8E8M0FNU:
        sfa, sfb = (rng.integers(122, 133, (r, K // vec)).astype(np.uint8) for r in (M, N))
        dec = e8m0
    else:
        sfa, sfb = (rng.integers(0x28, 0x48, (r, K // vec)).astype(np.uint8) for r in (M, N))
        dec = e4m3
    a8, b8 = (A, B) if ab_dtype is cutlass.Float8E4M3FN else (pack_e2m1(A), pack_e2m1(B))
    C = np.zeros((M, N), np.float32)
    options = f"--gpu-arch sm_100a --target {target}"
    cute.compile(run_s2t, a8, b8, sfa, sfb, C, ab_dtype, sf_dtype, vec, M, N, K, zipped, options=options)(a8, b8, sfa, sfb, C)
    Ad = A.astype(np.float64) * np.repeat(dec(sfa), vec, axis=1)
    Bd = B.astype(np.float64) * np.repeat(dec(sfb), vec, axis=1)
    bound = 1e-6 * (np.abs(Ad) @ np.abs(Bd).T)
    assert np.all(np.abs(C - Ad @ Bd.T) <= bound), np.max(np.abs(C - Ad @ Bd.T) - bound)


def test_s2t_ptx_for_sm100a_is_accepted_by_nvjitlink():
    M, N, K = 128, 128, 256
    a8, b8 = np.zeros((M, K // 2), np.uint8), np.zeros((N, K // 2), np.uint8)
    sfa, sfb, C = np.zeros((M, K // 16), np.uint8), np.zeros((N, K // 16), np.uint8), np.zeros((M, N), np.float32)
    gpu = cute.compile(run_s2t, a8, b8, sfa, sfb, C, cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, 16, M, N, K,
                       options="--gpu-arch sm_100a")
    if gpu.__ptx__ is None:
        pytest.skip("no libNVVM here: PTX was not generated")
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4" in gpu.__ptx__ and "elect.sync" in gpu.__ptx__
    assert gpu.__cubin__
