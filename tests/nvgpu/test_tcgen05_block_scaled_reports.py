"""Misuse of a block-scaled tcgen05.mma's scale factors, reported at the user's line on both CPU
targets (the IR emulator, --target cpu, and the PTX executor, --target ptx), and scale-factor
layouts that do not fit the MMA, refused at trace time.

The kernel is the nvf4 data path of NVIDIA's tutorial (as test_tcgen05_s2t_block_scaled.py):
factors in shared memory in make_smem_layout_sfa/sfb's layout, moved to tensor memory by
tcgen05.cp, then named to each MMA through Field.SFA / SFB. Each fault changes one step:
  - sfa_not_copied: SFA's copy is left out, so the MMA reads tensor memory nothing wrote since
    tcgen05.alloc (on the GPU, whatever the columns' last owner left there);
  - copy_by_other_warp: warp 1 issues the copies and never commits them, so nothing orders them
    before warp 0's MMA (one thread's tcgen05.cp and tcgen05.mma run in issue order, two threads'
    do not);
  - copy_by_other_warp_waited: as above, but warp 1 commits its copies to an mbarrier that warp 0
    waits on (then tcgen05.fence::after_thread_sync): correct, so no report and the right result;
  - sfa_in_accumulator: SFA's columns are the accumulator's, so the second K block's MMA reads
    factors the first one's accumulator overwrote.
The references are numpy (the dequantised product) and the reports' documented text."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.blockscaled_layout as blockscaled_utils
from cutlass.cute.nvgpu import OperandMajorMode, tcgen05

from ptx_target import needs_libnvvm
from test_tcgen05_block_scaled import e4m3, pack_e2m1
from tmem_accumulator import store_accumulator

K_MAJOR = OperandMajorMode.K
ONE = tcgen05.CtaGroup.ONE
M, N, K, VEC = 128, 32, 128, 16  # nvf4: two MMAs of K = 64, four factors each
TARGETS = ["cpu", pytest.param("ptx", marks=needs_libnvvm)]


@cute.kernel
def sf_kernel(mA: cute.Tensor, mB: cute.Tensor, mSFA: cute.Tensor, mSFB: cute.Tensor, mC: cute.Tensor,
              tiled_mma: cute.TiledMma, layout_mma: cute.TiledMma, layout_vec: cutlass.Constexpr,
              fault: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    ab, sf = cutlass.Float4E2M1FN, cutlass.Float8E4M3FN
    tiler = (M, N, K)
    sA_l = sm100_utils.make_smem_layout_a(tiled_mma, tiler, ab, 1)
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, tiler, ab, 1)
    sSFA_l = blockscaled_utils.make_smem_layout_sfa(layout_mma, tiler, layout_vec, 1)  # <- smem layout
    sSFB_l = blockscaled_utils.make_smem_layout_sfb(layout_mma, tiler, layout_vec, 1)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bar = smem.allocate_array(cutlass.Int64, 1)
    copied = smem.allocate_array(cutlass.Int64, 1)
    sA = smem.allocate_tensor(ab, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(ab, sB_l.outer, 1024, sB_l.inner)
    sSFA = smem.allocate_tensor(sf, sSFA_l, 128)
    sSFB = smem.allocate_tensor(sf, sSFB_l, 128)
    kb = tiled_mma.shape_mnk[2]
    nsf = kb // VEC
    # Packed e2m1 pairs (the host's bytes) into the A / B tiles viewed as bytes.
    gA = cute.make_tensor(mA.iterator, cute.make_layout((M, K // 2), stride=(K // 2, 1)))
    gB = cute.make_tensor(mB.iterator, cute.make_layout((N, K // 2), stride=(K // 2, 1)))
    sA8, sB8 = cute.recast_tensor(sA, cutlass.Uint8), cute.recast_tensor(sB, cutlass.Uint8)
    hb = kb // 2
    for j in cutlass.range_constexpr(M * K // 256):
        i = tidx + j * 128
        sA8[((i % M, (i // M) % hb), 0, (i // M) // hb, 0)] = gA[(i % M, i // M)]
    for j in cutlass.range_constexpr(N * K // 256):
        i = tidx + j * 128
        sB8[((i % N, (i // N) % hb), 0, (i // N) // hb, 0)] = gB[(i % N, i // N)]
    # The factors by logical coordinate into the factor layouts (nvf4: a chunk of 4 factors per K block).
    F = K // VEC
    for mat, rows, dst in ((mSFA, M, sSFA), (mSFB, N, sSFB)):
        g = cute.make_tensor(mat.iterator, cute.make_layout((rows, F), stride=(F, 1)))
        d8 = cute.recast_tensor(dst, cutlass.Uint8)
        for j in cutlass.range_constexpr(rows * F // 128):
            i = tidx + j * 128
            r, f = i % rows, i // rows
            d8[((((r % 32, (r // 32) % 4, r // 128), (0, f % nsf)), 0, (0, f // nsf), 0))] = g[(r, f)]
    cute.arch.fence_proxy("async.shared", space="cta")
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init(copied, 1)
    cute.arch.mbarrier_init_fence()
    if warp == 0:
        cute.arch.alloc_tmem(256, holder)
    cute.arch.barrier()
    acc_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)
    tCtAcc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((M, N)))
    tCtAcc = cute.make_tensor(acc_ptr, tCtAcc.layout)
    # SFA after the accumulator (or on it), SFB after SFA.
    sfa_ptr = cute.recast_ptr(acc_ptr + tcgen05.find_tmem_tensor_col_offset(tCtAcc), dtype=sf)
    if cutlass.const_expr(fault == "sfa_in_accumulator"):
        sfa_ptr = cute.recast_ptr(acc_ptr, dtype=sf)
    tCtSFA = cute.make_tensor(sfa_ptr, blockscaled_utils.make_tmem_layout_sfa(
        layout_mma, tiler, layout_vec, cute.slice_(sSFA_l, (None, None, None, 0))))
    sfb_ptr = cute.recast_ptr(acc_ptr + tcgen05.find_tmem_tensor_col_offset(tCtAcc)
                              + tcgen05.find_tmem_tensor_col_offset(tCtSFA), dtype=sf)
    tCtSFB = cute.make_tensor(sfb_ptr, blockscaled_utils.make_tmem_layout_sfb(
        layout_mma, tiler, layout_vec, cute.slice_(sSFB_l, (None, None, None, 0))))
    atom = cute.make_copy_atom(tcgen05.Cp4x32x128bOp(ONE), sf)
    copies = []
    for s_t, t_t in ((sSFA, tCtSFA), (sSFB, tCtSFB)):
        s_c, t_c = cute.filter_zeros(s_t), cute.filter_zeros(t_t)
        tiled = tcgen05.make_s2t_copy(atom, t_c)
        thr = tiled.get_slice(0)
        copies.append((tiled, tcgen05.get_s2t_smem_desc_tensor(tiled, thr.partition_S(s_c)), thr.partition_D(t_c)))
    copy_warp = 1 if cutlass.const_expr(fault in ("copy_by_other_warp", "copy_by_other_warp_waited")) else 0
    if warp == copy_warp:
        for c, (cp_tiled, cp_src, cp_dst) in enumerate(copies):
            if cutlass.const_expr(c > 0 or fault != "sfa_not_copied"):
                cute.copy(cp_tiled, cp_src[(None, None, None, None, 0)], cp_dst)  # <- copy
        if cutlass.const_expr(fault == "copy_by_other_warp_waited"):
            tcgen05.commit(copied)
    cute.arch.barrier()
    if warp == 0:
        if cutlass.const_expr(fault == "copy_by_other_warp_waited"):
            cute.arch.mbarrier_wait(copied, 0)
            tcgen05.fence_after_thread_sync()
        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
        if cutlass.const_expr(fault == "layouts_of_mxf4"):
            cute.gemm(tiled_mma, tCtAcc, [tCrA[(None, None, None, 0)], tCtSFA], [tCrB[(None, None, None, 0)], tCtSFB],
                      tCtAcc)  # <- zipped gemm
        else:
            for k in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                tiled_mma.set(tcgen05.Field.SFA, tCtSFA[(None, None, k)].iterator)
                tiled_mma.set(tcgen05.Field.SFB, tCtSFB[(None, None, k)].iterator)
                cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, k, 0)], tCrB[(None, None, k, 0)], tCtAcc)  # <- gemm
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
def run_sf(mA: cute.Tensor, mB: cute.Tensor, mSFA: cute.Tensor, mSFB: cute.Tensor, mC: cute.Tensor,
           fault: cutlass.Constexpr = None, layout_vec: cutlass.Constexpr = VEC):
    tiled_mma = sm100_utils.make_blockscaled_trivial_tiled_mma(cutlass.Float4E2M1FN, cutlass.Float4E2M1FN, K_MAJOR,
                                                               K_MAJOR, cutlass.Float8E4M3FN, VEC, ONE, (M, N))
    layout_mma = tiled_mma
    if cutlass.const_expr(fault == "layouts_of_mxf4"):
        # The factors laid out for an mxf4 MMA (one Float8E8M0FNU factor per 32), read by nvf4's.
        layout_mma = sm100_utils.make_blockscaled_trivial_tiled_mma(
            cutlass.Float4E2M1FN, cutlass.Float4E2M1FN, K_MAJOR, K_MAJOR, cutlass.Float8E8M0FNU, 32, ONE, (M, N))
        layout_vec = 32
    sf_kernel(mA, mB, mSFA, mSFB, mC, tiled_mma, layout_mma, layout_vec, fault).launch(grid=(1, 1, 1),
                                                                                        block=(128, 1, 1))


def line_of(marker):
    """The line of this file that ends with the comment `# <- marker`."""
    with open(__file__) as f:
        hits = [n + 1 for n, text in enumerate(f.read().splitlines()) if text.rstrip().endswith("# <- " + marker)]
    assert len(hits) == 1, hits
    return hits[0]


def inputs(seed=3):
    rng = np.random.default_rng(seed)
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)  # e2m1 values
    A, B = rng.choice(grid, (M, K)), rng.choice(grid, (N, K))
    sfa, sfb = (rng.integers(0x28, 0x48, (r, K // VEC)).astype(np.uint8) for r in (M, N))
    return A, B, sfa, sfb


def run(target, fault=None, layout_vec=VEC):
    A, B, sfa, sfb = inputs()
    a8, b8, C = pack_e2m1(A), pack_e2m1(B), np.zeros((M, N), np.float32)
    options = f"--gpu-arch sm_100a --target {target}"
    cute.compile(run_sf, a8, b8, sfa, sfb, C, fault, layout_vec, options=options)(a8, b8, sfa, sfb, C)
    return C, A, B, sfa, sfb


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fault", [None, "copy_by_other_warp_waited"])
def test_correct_kernels_run_without_a_report_and_match_numpy(target, fault):
    C, A, B, sfa, sfb = run(target, fault)
    Ad = A.astype(np.float64) * np.repeat(e4m3(sfa), VEC, axis=1)
    Bd = B.astype(np.float64) * np.repeat(e4m3(sfb), VEC, axis=1)
    bound = 1e-6 * (np.abs(Ad) @ np.abs(Bd).T)
    assert np.all(np.abs(C - Ad @ Bd.T) <= bound), np.max(np.abs(C - Ad @ Bd.T) - bound)


def expect_report(target, fault, pattern):
    with pytest.raises(cutlass.DSLRuntimeError, match=pattern) as e:
        run(target, fault)
    assert e.value.filename == __file__ and e.value.lineno == line_of("gemm"), (e.value.filename, e.value.lineno)


@pytest.mark.parametrize("target", TARGETS)
def test_factors_no_copy_wrote_are_reported_at_the_gemm(target):
    # SFA's columns follow the 32 of the accumulator; row 0's first factor is in lane 0 there.
    expect_report(target, "sfa_not_copied",
                  r"SFA \(factor 0 of row 0 of A\) is read from tensor-memory lane 0, column 32, which no tcgen05\.cp "
                  r"or tcgen05\.st has written since it was allocated: the scale factors are uninitialised")


@pytest.mark.parametrize("target", TARGETS)
def test_factors_another_warp_is_still_copying_are_reported_at_the_gemm(target):
    # Both name the copy's line too: the emulator its warp, the executor that it is not committed.
    copy = line_of("copy")
    expect_report(target, "copy_by_other_warp",
                  r"SFA is read from tensor-memory columns \[32, 36\) while the tcgen05\.cp at "
                  rf"(line {copy} \(warp 1\) that writes them may still be running|PTX line \d+ \(source line {copy}\), "
                  r"issued by another thread and not yet committed, may still be writing them)")


@pytest.mark.parametrize("target", TARGETS)
def test_factors_an_accumulator_overwrote_are_reported_at_the_gemm(target):
    # The first K block's MMA reads its copied factors (columns 0-3), then writes D (columns 0-31)
    # over them and the second K block's (columns 4-7), which the second MMA then reads.
    expect_report(target, "sfa_in_accumulator",
                  r"SFA \(factor 0 of row 0 of A\) is read from tensor-memory lane 0, column 4, which an MMA's "
                  r"accumulator overwrote: the scale factors overlap an accumulator \(D\)")


@pytest.mark.parametrize("target", TARGETS)
def test_smem_layout_of_another_vector_size_is_refused_at_trace_time(target):
    with pytest.raises(cutlass.DSLUserCodeError,
                       match=r"make_smem_layout_sfa: sf_vec_size 32 does not match the tiled MMA: the MMA "
                             r"\(MmaMXF4NVF4Op, K = 64\) reads one scale factor per 16 K elements") as e:
        run(target, None, layout_vec=32)
    assert e.value.code == "SHAPE_MISMATCH" and isinstance(e.value, ValueError)
    assert e.value.filename == __file__ and e.value.lineno == line_of("smem layout")


@pytest.mark.parametrize("target", TARGETS)
def test_factor_tensors_of_another_mma_are_refused_by_the_gemm(target):
    # make_tmem_layout_sfa built for an mxf4 MMA (factors per 32) handed to an nvf4 MMA's cute.gemm.
    with pytest.raises(cutlass.DSLUserCodeError,
                       match=r"gemm: SFA: the scale-factor layout holds one factor per 32 K elements, but the MMA "
                             r"\(MmaMXF4NVF4Op, K = 64\) reads one scale factor per 16 K elements") as e:
        run(target, "layouts_of_mxf4")
    assert e.value.code == "SHAPE_MISMATCH"
    assert e.value.filename == __file__ and e.value.lineno == line_of("zipped gemm") - 1


def test_tmem_layout_from_an_smem_layout_of_another_mma_is_refused():
    # The shared-memory layout of an mxf4 MMA (2 factors of 32 per MMA) made into the tensor-memory
    # layout of an nvf4 MMA (4 of 16): sf_vec_size agrees with the MMA, the layout does not.
    nvf4 = sm100_utils.make_blockscaled_trivial_tiled_mma(cutlass.Float4E2M1FN, cutlass.Float4E2M1FN, K_MAJOR, K_MAJOR,
                                                          cutlass.Float8E4M3FN, 16, ONE, (128, 64))
    smem = cute.make_layout(((((32, 4), 1), (32, 2)), 1, (2, 1)))
    with pytest.raises(cutlass.DSLUserCodeError,
                       match=r"make_tmem_layout_sfa: the scale-factor layout holds one factor per 32 K elements"):
        blockscaled_utils.make_tmem_layout_sfa(nvf4, (128, 64, 256), 16, smem)
    # Two factors of 16 where the MMA reads four: the layout covers K = 32 of the MMA's 64.
    half = cute.make_layout(((((32, 4), 1), (16, 2)), 1, (2, 1)))
    with pytest.raises(cutlass.DSLUserCodeError, match=r"holds 2 factor\(s\) of 16 K elements \(K = 32\), but the MMA "
                                                       r"\(MmaMXF4NVF4Op, K = 64\) reads one scale factor per 16 K "
                                                       r"elements, 4 per MMA"):
        blockscaled_utils.make_tmem_layout_sfb(nvf4, (128, 64, 256), 16, half)
