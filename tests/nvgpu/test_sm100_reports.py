"""What the CPU emulator reports about a faulty Blackwell kernel (sm_100a), each at the user's file
and line (the DSLRuntimeError's headline names the line, its source frame `--> file:line` the
file): a tensor-memory access outside the allocation, a tcgen05.mma whose accumulator is read
before anything says the MMA completed (never committed, or committed to an mbarrier nobody waited
on), an MMA still in flight when the CTA exits, columns never freed, and a deadlock naming the
barrier. Each faulty kernel differs from a correct one (run first, against numpy) in one line.
Reference for the rules: the PTX ISA's tcgen05 memory consistency model (an MMA is complete once
a tcgen05.commit after it arrives on an mbarrier and a wait sees that phase complete) and its
tensor-memory allocation rules."""
import os

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import OperandMajorMode, tcgen05

import test_tmem_sm100 as tmem_tests

EMU = "--gpu-arch sm_100a --target cpu"
M, N, K = 128, 64, 16
COLS = 64


def line_of(marker):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# LINE " + marker):
                return n
    raise AssertionError(marker)


def assert_at(error, path, line):
    """The report names `line` in its headline and points its source frame at path:line."""
    text = str(error)
    assert f"(line {line})" in text.splitlines()[0], text
    assert f"--> {path}:{line}" in text, text
    assert error.filename == path and error.lineno == line


@cute.kernel
def mma_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
               fault: cutlass.Constexpr):
    # One F16 MMA (128x64x16) into tensor memory, committed to an mbarrier that every thread waits
    # on, then the tcgen05.ld epilogue; `fault` leaves out one step.
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    sA_l = sm100_utils.make_smem_layout_a(tiled_mma, (M, N, K), cutlass.Float16, 1)
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, (M, N, K), cutlass.Float16, 1)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bars = smem.allocate_array(cutlass.Int64, 2)
    sA = smem.allocate_tensor(cutlass.Float16, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(cutlass.Float16, sB_l.outer, 1024, sB_l.inner)
    gA = cute.make_tensor(mA.iterator, cute.make_layout((M, K), stride=(K, 1)))
    gB = cute.make_tensor(mB.iterator, cute.make_layout((N, K), stride=(K, 1)))
    gC = cute.make_tensor(mC.iterator, cute.make_layout((M, N), stride=(N, 1)))
    for j in cutlass.range_constexpr(M * K // 128):
        i = tidx + j * 128
        sA[((i % M, i // M), 0, 0, 0)] = gA[(i % M, i // M)].to(cutlass.Float16)
    for j in cutlass.range_constexpr(N * K // 128):
        i = tidx + j * 128
        sB[((i % N, i // N), 0, 0, 0)] = gB[(i % N, i // N)].to(cutlass.Float16)
    cute.arch.fence_proxy("async.shared", space="cta")
    if tidx == 0:
        cute.arch.mbarrier_init(bars, 1)
        cute.arch.mbarrier_init(bars + 1, 1)  # LINE other_barrier
    cute.arch.mbarrier_init_fence()
    if warp == 0:
        cute.arch.alloc_tmem(COLS, holder)
    cute.arch.sync_threads()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)
    tCtAcc = cute.make_tensor(tmem_ptr, tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((M, N))).layout)
    tCgC = tiled_mma.get_slice(0).partition_C(gC)
    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x16), cutlass.Float32),
                                 tCtAcc[(None, 0, 0)])
    thr = t2r.get_slice(tidx)
    tTR_t = thr.partition_S(tCtAcc[(None, 0, 0)])
    tTR_g = thr.partition_D(tCgC[(None, 0, 0)])
    frag = cute.make_rmem_tensor(tTR_g.shape, cutlass.Float32)
    if warp == 0:
        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
        cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, 0, 0)], tCrB[(None, None, 0, 0)], tCtAcc)  # LINE mma
        if cutlass.const_expr(fault != "no_commit"):
            tcgen05.commit(bars)  # LINE commit
    if cutlass.const_expr(fault == "wrong_barrier"):
        cute.arch.mbarrier_wait(bars + 1, 0)  # LINE wrong_wait
    if cutlass.const_expr(fault == "none"):
        cute.arch.mbarrier_wait(bars, 0)
    if cutlass.const_expr(fault in ("none", "no_commit", "no_wait")):
        cute.copy(t2r, tTR_t, frag)  # LINE read
        cute.autovec_copy(frag, tTR_g)
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(tmem_ptr, COLS)


@cute.jit
def run_mma(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, fault: cutlass.Constexpr):
    tiled_mma = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K,
                                                   cutlass.Float32, tcgen05.CtaGroup.ONE, (M, N))
    mma_kernel(mA, mB, mC, tiled_mma, fault).launch(grid=(1, 1, 1), block=(128, 1, 1))


def operands():
    rng = np.random.default_rng(7)
    return (rng.integers(-3, 4, (M, K)).astype(np.float32), rng.integers(-3, 4, (N, K)).astype(np.float32),
            np.zeros((M, N), np.float32))


def run_faulty(fault):
    A, B, C = operands()
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.compile(run_mma, A, B, C, fault, options=EMU)(A, B, C)
    return e.value


def test_the_correct_kernel_runs_clean():
    A, B, C = operands()
    cute.compile(run_mma, A, B, C, "none", options=EMU)(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


def test_accumulator_read_of_an_mma_never_committed_is_reported_at_the_read():
    e = run_faulty("no_commit")
    text = str(e)
    assert "tcgen05.ld reads tensor-memory columns [0, 16) before the MMA that writes them is known to be complete: " \
           f"the tcgen05.mma at {__file__}:{line_of('mma')} writing columns [0, 64) is not followed by a " \
           "tcgen05.commit" in text, text
    assert_at(e, __file__, line_of("read"))


def test_accumulator_read_before_the_commit_is_waited_on_is_reported_at_the_read():
    e = run_faulty("no_wait")
    text = str(e)
    assert f"the tcgen05.mma at {__file__}:{line_of('mma')} writing columns [0, 64) is committed by the " \
           f"tcgen05.commit at {__file__}:{line_of('commit')} to the mbarrier at shared offset 8, but no thread " \
           "has waited for that arrival's phase" in text, text
    assert_at(e, __file__, line_of("read"))


def test_mma_whose_commit_nobody_waits_on_is_reported_when_the_cta_exits():
    # Committed, never waited on, accumulator never read: the CTA frees the columns and exits while
    # the MMA may still write them.
    e = run_faulty("exit")
    text = str(e)
    assert text.startswith(f"error: tcgen05.mma still in flight in kernel '") and \
        f"(line {line_of('mma')}), block (0,0,0) exits while the tcgen05.mma at {__file__}:{line_of('mma')} " \
        f"writing columns [0, 64) is committed by the tcgen05.commit at {__file__}:{line_of('commit')}" in text, text
    assert_at(e, __file__, line_of("mma"))


def test_wait_on_a_barrier_nothing_arrives_at_is_a_deadlock_naming_it():
    e = run_faulty("wrong_barrier")
    text = str(e)
    assert "mbarrier deadlock in kernel" in text, text
    assert f"warp 0 waits at {__file__}:{line_of('wrong_wait')} for phase parity 0 of the mbarrier at shared " \
           f"offset 16 (mbarrier_init at {__file__}:{line_of('other_barrier')}): phase 0 (parity 0) still needs 1 " \
           "of 1 arrival(s)" in text, text
    assert f"--> {__file__}:{line_of('wrong_wait')}" in text, text


def test_tmem_load_outside_the_allocation_points_at_the_copy():
    g = np.zeros((128, 64), np.float32)
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.compile(tmem_tests.run_overrun, g, options=tmem_tests.EMU)(g)
    assert "tcgen05.ld reaches tensor-memory column 32, outside the CTA's allocation" in str(e.value)
    assert_at(e.value, tmem_tests.__file__, tmem_tests.line_of("overrun"))


def test_columns_never_freed_point_at_the_allocation():
    out = np.zeros(2, np.int32)
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.compile(tmem_tests.run_alloc, out, 128, 32, False, options=tmem_tests.EMU)(out)
    assert "128 columns allocated by tcgen05.alloc were never freed (tcgen05.dealloc) before the CTA exited" \
        in str(e.value)
    assert_at(e.value, tmem_tests.__file__, tmem_tests.line_of("alloc"))


@cute.kernel
def dealloc_kernel(out: cute.Tensor, freed: cutlass.Constexpr):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    if warp == 0:
        cute.arch.alloc_tmem(64, holder)
    cute.arch.sync_threads()
    ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    out[tidx] = holder[0]
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(ptr, freed)  # LINE dealloc


@cute.jit
def run_dealloc(out: cute.Tensor, freed: cutlass.Constexpr):
    dealloc_kernel(out, freed).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_dealloc_of_another_column_count_points_at_the_dealloc():
    out = np.full(32, -1, np.int32)
    cute.compile(run_dealloc, out, 64, options=EMU)(out)  # the matching count: clean
    assert (out == 0).all()  # the allocation's address: lane 0, column 0
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.compile(run_dealloc, out, 32, options=EMU)(out)
    assert "tcgen05.dealloc of 32 columns at column 0: that allocation has 64 columns" in str(e.value)
    assert_at(e.value, __file__, line_of("dealloc"))


MP, NP = 256, 64  # the 2-CTA MMA: 128 rows of A and 32 of B in each CTA of the pair


def pair_epilogue(tiled_mma, tmem_ptr, gC, rank, tidx):
    tCtAcc = cute.make_tensor(tmem_ptr, tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((MP, NP))).layout)
    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x16), cutlass.Float32),
                                 tCtAcc[(None, 0, 0)])
    thr = t2r.get_slice(tidx)
    tTR_g = thr.partition_D(tiled_mma.get_slice(rank).partition_C(gC)[(None, 0, 0)])
    frag = cute.make_rmem_tensor(tTR_g.shape, cutlass.Float32)
    cute.copy(t2r, thr.partition_S(tCtAcc[(None, 0, 0)]), frag)
    cute.autovec_copy(frag, tTR_g)


@cute.kernel
def pair_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma):
    # The leader issues the 2-CTA MMA right after the pair's tcgen05.alloc.cta_group::2, with no other
    # synchronisation between them: the collective alloc is what makes the peer's columns exist
    # (NVIDIA's grouped GEMM relies on it).
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    rank = cute.arch.block_idx_in_cluster()
    sA_l = sm100_utils.make_smem_layout_a(tiled_mma, (MP, NP, K), cutlass.Float16, 1)
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, (MP, NP, K), cutlass.Float16, 1)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bar = smem.allocate_array(cutlass.Int64, 1)
    sA = smem.allocate_tensor(cutlass.Float16, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(cutlass.Float16, sB_l.outer, 1024, sB_l.inner)
    gA = cute.make_tensor(mA.iterator, cute.make_layout((MP, K), stride=(K, 1)))
    gB = cute.make_tensor(mB.iterator, cute.make_layout((NP, K), stride=(K, 1)))
    gC = cute.make_tensor(mC.iterator, cute.make_layout((MP, NP), stride=(NP, 1)))
    mc, nc = MP // 2, NP // 2
    for j in cutlass.range_constexpr(mc * K // 128):
        i = tidx + j * 128
        sA[((i % mc, i // mc), 0, 0, 0)] = gA[(rank * mc + i % mc, i // mc)].to(cutlass.Float16)
    for j in cutlass.range_constexpr(nc * K // 128):
        i = tidx + j * 128
        sB[((i % nc, i // nc), 0, 0, 0)] = gB[(rank * nc + i % nc, i // nc)].to(cutlass.Float16)
    cute.arch.fence_proxy("async.shared", space="cta")
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    if warp == 0:
        cute.arch.alloc_tmem(COLS, holder, is_two_cta=True)
        if rank == 0:
            acc = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
            tCtAcc = cute.make_tensor(acc, tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((MP, NP))).layout)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
            cute.gemm(tiled_mma, tCtAcc, tiled_mma.make_fragment_A(sA)[(None, None, 0, 0)],
                      tiled_mma.make_fragment_B(sB)[(None, None, 0, 0)], tCtAcc)
            tcgen05.commit(bar, mask=3, cta_group=tcgen05.CtaGroup.TWO)
    cute.arch.sync_threads()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    cute.arch.mbarrier_wait(bar, 0)
    pair_epilogue(tiled_mma, tmem_ptr, gC, rank, tidx)
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit(is_two_cta=True)
        cute.arch.dealloc_tmem(tmem_ptr, COLS, is_two_cta=True)


@cute.jit
def run_pair(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    tiled_mma = sm100_utils.make_trivial_tiled_mma(cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K,
                                                   cutlass.Float32, tcgen05.CtaGroup.TWO, (MP, NP))
    pair_kernel(mA, mB, mC, tiled_mma).launch(grid=(2, 1, 1), block=(128, 1, 1), cluster=(2, 1, 1))


def test_a_pair_alloc_waits_for_the_peer_so_an_mma_right_after_it_is_clean():
    rng = np.random.default_rng(11)
    A = rng.integers(-3, 4, (MP, K)).astype(np.float32)
    B = rng.integers(-3, 4, (NP, K)).astype(np.float32)
    C = np.zeros((MP, NP), np.float32)
    cute.compile(run_pair, A, B, C, options=EMU)(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


@cute.kernel
def lone_pair_alloc_kernel(out: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == 0:
        if cute.arch.block_idx_in_cluster() == 0:
            cute.arch.alloc_tmem(32, holder, is_two_cta=True)  # LINE lone_alloc
    cute.arch.sync_threads()


@cute.jit
def run_lone_pair_alloc(out: cute.Tensor):
    lone_pair_alloc_kernel(out).launch(grid=(2, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1))


def test_a_pair_alloc_the_peer_never_reaches_is_a_deadlock_naming_it():
    out = np.zeros(4, np.float32)
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.compile(run_lone_pair_alloc, out, options=EMU)(out)
    text = str(e.value)
    assert "no warp can proceed: block (0,0,0) warp 0 waits at tcgen05.alloc.cta_group::2 for the peer CTA's warp " \
           f"to allocate with it at {__file__}:{line_of('lone_alloc')}; block (0,0,0) warp 1 waits at sync_threads" \
        in text, text
    assert f"--> {__file__}:{line_of('lone_alloc')}" in text, text
