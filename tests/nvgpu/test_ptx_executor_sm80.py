"""SM80 tensor-core and copy instructions on the PTX executor ("--target ptx"): the kernels of
test_mma_sm80.py and test_copy_sm80.py run from the PTX libNVVM made, each result checked against
numpy (the PTX ISA's semantics, modelled in those files) and against the IR emulator's result.

These are the tests that fail when the NVVM lowering binds an mma.sync accumulator, an ldmatrix
destination or a cp.async operand to the wrong register: the IR emulator never sees the lowering."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp
from ptx_target import assert_same_on_both_targets, needs_libnvvm, run_on_both_targets
from test_copy_sm80 import (N_ASYNC, STAGES, _cp_async_kernel, _groups_kernel, _ldmatrix_kernel, _multistage, _pipeline,
                            _stmatrix_kernel, ldmatrix_model)
from test_mma_sm80 import bf16_round, run_one_warp_mma, tensorop_gemm

pytestmark = needs_libnvvm


# ---- mma.sync --------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [8, 16])
@pytest.mark.parametrize("ab,acc", [(cutlass.Float16, cutlass.Float32), (cutlass.BFloat16, cutlass.Float32),
                                    (cutlass.Float16, cutlass.Float16)])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ptx_mma_sync_f16_bf16_matches_numpy_and_the_emulator(k, ab, acc, arch):
    rng = np.random.default_rng(k + 7)
    A = rng.standard_normal((32, 32)).astype(np.float32)
    B = rng.standard_normal((16, 32)).astype(np.float32)
    C = rng.standard_normal((32, 16)).astype(np.float32)
    if acc is cutlass.Float16:
        C = C.astype(np.float16).astype(np.float32)
    D = np.zeros((32, 16), np.float32)
    emulated, executed = run_on_both_targets(run_one_warp_mma, [A, B, C, D], (ab, acc, (16, 8, k)),
                                             options=f"--gpu-arch {arch}")
    rnd = bf16_round if ab is cutlass.BFloat16 else (lambda x: x.astype(np.float16).astype(np.float32))
    ref = rnd(A).astype(np.float64) @ rnd(B).astype(np.float64).T + C
    tol = dict(rtol=1e-2, atol=3e-2) if acc is cutlass.Float16 else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(executed[3], ref, **tol)
    assert_same_on_both_targets(emulated, executed)


def _fp8_one_warp():
    f8 = cutlass.Float8E4M3FN

    @cute.kernel
    def kernel(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor, tiled_mma: cute.TiledMma):
        tidx, _, _ = cute.arch.thread_idx()
        thr = tiled_mma.get_slice(tidx)
        gA = cute.local_tile(mA, (16, 32), (0, 0))
        gB = cute.local_tile(mB, (8, 32), (0, 0))
        gD = cute.local_tile(mD, (16, 8), (0, 0))
        tCgA, tCgB, tCgD = thr.partition_A(gA), thr.partition_B(gB), thr.partition_C(gD)
        rA, rB = tiled_mma.make_fragment_A(tCgA), tiled_mma.make_fragment_B(tCgB)
        rC = tiled_mma.make_fragment_C(tCgD)
        rA.store(tCgA.load().to(f8))
        rB.store(tCgB.load().to(f8))
        rC.fill(0.0)
        cute.gemm(tiled_mma, rC, rA, rB, rC)
        tCgD.store(rC.load())

    @cute.jit
    def run(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor):
        kernel(mA, mB, mD, cute.make_tiled_mma(warp.MmaFP8Op(f8, cutlass.Float32, (16, 8, 32)))).launch(
            grid=(1, 1, 1), block=(32, 1, 1))

    return run


def test_ptx_mma_sync_fp8_matches_numpy_and_the_emulator():
    rng = np.random.default_rng(3)
    # Small integers are exact in e4m3: the product is exact in f32.
    A = rng.integers(-4, 5, (16, 32)).astype(np.float32)
    B = rng.integers(-4, 5, (8, 32)).astype(np.float32)
    D = np.zeros((16, 8), np.float32)
    emulated, executed = run_on_both_targets(_fp8_one_warp(), [A, B, D], options="--gpu-arch sm_90a")
    np.testing.assert_array_equal(executed[2], A @ B.T)
    assert_same_on_both_targets(emulated, executed)


def test_ptx_tiled_mma_gemm_multi_cta():
    M, N, K = 128, 128, 96
    rng = np.random.default_rng(1)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((N, K)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float32)
    emulated, executed = run_on_both_targets(tensorop_gemm, [A, B, C], options="--gpu-arch sm_80")
    np.testing.assert_allclose(executed[2], A.astype(np.float64) @ B.astype(np.float64).T, rtol=1e-5, atol=1e-4)
    assert_same_on_both_targets(emulated, executed)


# ---- ldmatrix / stmatrix -------------------------------------------------------------------------

@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ptx_ldmatrix_lane_mapping(num, trans):
    run, elems = _ldmatrix_kernel(warp.LdMatrix8x8x16bOp(transpose=trans, num_matrices=num), cutlass.Float16, num,
                                  2 * num)
    a = (np.arange(elems) % 2048).astype(np.float16)
    emulated, executed = run_on_both_targets(run, [a, np.zeros(64 * num, np.float16), np.zeros(elems, np.float16)],
                                             options="--gpu-arch sm_80")
    np.testing.assert_array_equal(executed[1].reshape(32, 2 * num), ldmatrix_model(a.reshape(num, 8, 8), trans))
    np.testing.assert_array_equal(executed[2], a)
    assert_same_on_both_targets(emulated, executed)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ptx_stmatrix_inverts_ldmatrix(num, trans):
    run, elems = _stmatrix_kernel(num, trans)
    regs = (np.arange(32 * 2 * num) * 3 % 1999).astype(np.float16)
    emulated, executed = run_on_both_targets(run, [regs, np.zeros(elems, np.float16)], options="--gpu-arch sm_90a")
    # Loading the stored matrices back with ldmatrix's mapping gives the registers.
    np.testing.assert_array_equal(ldmatrix_model(executed[1].reshape(num, 8, 8), trans).reshape(-1), regs)
    assert_same_on_both_targets(emulated, executed)


def test_ptx_cp_async_then_ldmatrix_into_mma_fragments():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(256).astype(np.float16)
    b = rng.standard_normal(128).astype(np.float16)
    emulated, executed = run_on_both_targets(_pipeline, [a, b, np.zeros(256, np.float16), np.zeros(128, np.float16)],
                                             options="--gpu-arch sm_80")
    np.testing.assert_array_equal(executed[2], a)
    np.testing.assert_array_equal(executed[3], b)
    assert_same_on_both_targets(emulated, executed)


# ---- cp.async ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bits,mode", [(32, cpasync.LoadCacheMode.ALWAYS), (128, cpasync.LoadCacheMode.GLOBAL)])
@pytest.mark.parametrize("predicated", [False, True])
def test_ptx_cp_async_copies_and_zero_fills(bits, mode, predicated):
    run, threads = _cp_async_kernel(bits, mode, predicated)
    a = np.arange(1, N_ASYNC + 1, dtype=np.float32)
    mask = (np.arange(threads) % 3 != 1).astype(np.int32)
    emulated, executed = run_on_both_targets(run, [a, mask, np.zeros(N_ASYNC, np.float32)], options="--gpu-arch sm_80")
    keep = np.repeat(mask != 0, bits // 32) if predicated else np.ones(N_ASYNC, bool)
    np.testing.assert_array_equal(executed[2], np.where(keep, a, np.float32(0)))
    assert_same_on_both_targets(emulated, executed)


def test_ptx_cp_async_groups_and_multistage_pipeline():
    a = np.arange(128, dtype=np.float32) + 0.5
    emulated, executed = run_on_both_targets(_groups_kernel(False, False), [a, np.zeros(128, np.float32)])
    np.testing.assert_array_equal(executed[1], a)
    assert_same_on_both_targets(emulated, executed)
    n = 7
    a = np.random.default_rng(1).standard_normal(128 * n).astype(np.float32)
    emulated, executed = run_on_both_targets(_multistage(STAGES - 2, True), [a, np.zeros_like(a)], scalars=(n,))
    np.testing.assert_array_equal(executed[1], np.roll(a.reshape(n, 128), -4, axis=1).reshape(-1) * 2)
    assert_same_on_both_targets(emulated, executed)


# ---- the target itself -----------------------------------------------------------------------------

def test_ptx_target_is_selected_by_option_and_environment(monkeypatch):
    a = (np.arange(64) % 2048).astype(np.float16)
    run, elems = _ldmatrix_kernel(warp.LdMatrix8x8x16bOp(transpose=False, num_matrices=1), cutlass.Float16, 1, 2)
    monkeypatch.setenv("CUTE_DSL_TARGET", "ptx")
    compiled = cute.compile(run, a, np.zeros(64, np.float16), np.zeros(elems, np.float16))
    assert compiled.target == "ptx"
    assert "ldmatrix.sync.aligned.m8n8.x1" in compiled.__ptx__


# ---- warp collectives, special registers, clusters ------------------------------------------------

def test_ptx_elect_one_runs_its_body_in_one_lane_per_warp():
    from test_hopper_warp_cluster import elect_host
    emulated, executed = run_on_both_targets(elect_host, [np.zeros(3, np.int32), np.full(3, -1, np.int32)],
                                             options="--gpu-arch sm_90a")
    np.testing.assert_array_equal(executed[0], [1, 1, 1])
    # elect.sync elects the lowest member lane (the PTX ISA's leader).
    np.testing.assert_array_equal(executed[1], [0, 0, 0])
    np.testing.assert_array_equal(executed[0], emulated[0])


def test_ptx_prmt_shuffle_and_redux():
    from test_hopper_warp_cluster import prmt_host, prmt_model
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    sel = rng.integers(0, 2**16, 32, dtype=np.uint64).astype(np.uint32)
    sel[:4] = [0x5410, 0x7632, 0x3276, 0x1054]
    arrays = [a, b, sel, np.zeros(32, np.uint32), np.zeros(32, np.uint32), np.zeros((2, 32), np.int32)]
    emulated, executed = run_on_both_targets(prmt_host, arrays, options="--gpu-arch sm_90a")
    np.testing.assert_array_equal(executed[3], [prmt_model(int(x), int(y), int(s)) for x, y, s in zip(a, b, sel)])
    np.testing.assert_array_equal(executed[4], a[(np.arange(32) * 7 + 3) % 32])
    v = np.arange(32) * 37 % 101
    np.testing.assert_array_equal(executed[5][0], np.full(32, v.sum()))
    np.testing.assert_array_equal(executed[5][1], np.repeat(v.reshape(4, 8).max(axis=1), 8))
    assert_same_on_both_targets(emulated, executed)


def test_ptx_cluster_special_registers_and_distributed_shared_memory():
    from test_hopper_warp_cluster import cluster_regs_host, dsmem_host
    emulated, executed = run_on_both_targets(cluster_regs_host, [np.full((8, 9), -1, np.int32)],
                                             options="--gpu-arch sm_90a")
    for by in range(2):
        for bx in range(4):
            ix, iy = bx % 2, by % 2
            assert list(executed[0][by * 4 + bx]) == [bx // 2, by // 2, 2, 1, ix, iy, 22, ix + 2 * iy, 4]
    assert_same_on_both_targets(emulated, executed)
    emulated, executed = run_on_both_targets(dsmem_host, [np.full(8 * 64, -1, np.int32)], options="--gpu-arch sm_90a")
    np.testing.assert_array_equal(executed[0], [((b % 4 + 1) % 4) * 1000 + (t + 1) % 64 for b in range(8) for t in range(64)])
    assert_same_on_both_targets(emulated, executed)
