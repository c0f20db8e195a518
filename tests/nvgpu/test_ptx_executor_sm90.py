"""Hopper instructions on the PTX executor ("--target ptx"): wgmma with shared-memory
descriptors (each swizzle, K- and MN-major, register A), TMA loads (2-D, out-of-bounds fill,
swizzled, multicast), TMA stores, mbarrier pipelines, clusters with remote arrives. The kernels are
those of test_wgmma_sm90.py and test_sm90_tma.py; each result is checked against numpy and
against the IR emulator's.

These are the tests that fail when the NVVM lowering swaps wgmma's descriptors, binds its
accumulators in the wrong order or passes TMA coordinates in the wrong order: the IR emulator
never sees the lowering."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Float32
from cutlass.cute.nvgpu import cpasync
from ptx_target import assert_same_on_both_targets, needs_libnvvm, run_on_both_targets
from test_sm90_tma import (_dense_gemm_shaped, _load_kernel, _padded, multicast_host, pipelined_host)
from test_wgmma_sm90 import COL, ROW, operands, run_wgmma

pytestmark = needs_libnvvm
SM90 = "--gpu-arch sm_90a"


# ---- wgmma -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,a_enum,b_enum,M,N", [
    (cutlass.Float16, ROW, ROW, 64, 64),     # K-major A and B, 128B swizzle
    (cutlass.BFloat16, COL, COL, 64, 128),   # MN-major A and B, 128B swizzle, two atoms of N
    (cutlass.Float16, ROW, COL, 128, 32),    # two warpgroups; B MN-major with a 64B swizzle
    (cutlass.BFloat16, COL, ROW, 128, 64),
    (cutlass.Float16, ROW, ROW, 64, 16),     # K-major, 32-byte K rows: 32B swizzle
    (cutlass.Float16, COL, COL, 64, 8),      # MN-major, N = 8: no swizzle (interleaved core matrices)
])
def test_ptx_wgmma_ss_matches_numpy_and_the_emulator(dtype, a_enum, b_enum, M, N):
    K = 64
    A, B = operands(M, N, K)
    emulated, executed = run_on_both_targets(run_wgmma, [A, B, np.zeros((M, N), np.float32)],
                                             (dtype, a_enum, b_enum, M, N, K), options=SM90)
    np.testing.assert_array_equal(executed[2], A @ B.T)
    assert_same_on_both_targets(emulated, executed)


@pytest.mark.parametrize("dtype,b_enum", [(cutlass.Float16, COL), (cutlass.Float8E4M3FN, ROW)])
def test_ptx_wgmma_rs_matches_numpy_and_the_emulator(dtype, b_enum):
    M, N, K = 64, 32, 64
    A, B = operands(M, N, K, seed=1)
    emulated, executed = run_on_both_targets(run_wgmma, [A, B, np.zeros((M, N), np.float32)],
                                             (dtype, ROW, b_enum, M, N, K, True), options=SM90)
    np.testing.assert_array_equal(executed[2], A @ B.T)
    assert_same_on_both_targets(emulated, executed)


def test_ptx_wgmma_f16_accumulators_and_the_accumulate_field():
    M, N, K = 64, 32, 32
    A, B = operands(M, N, K, seed=5)
    C0 = np.arange(M * N, dtype=np.float32).reshape(M, N) % 5
    emulated, executed = run_on_both_targets(
        run_wgmma, [A, B, C0.astype(np.float16)],
        (cutlass.Float16, ROW, COL, M, N, K, False, True, False, cutlass.Float16), options=SM90)
    np.testing.assert_array_equal(executed[2].astype(np.float32), A @ B.T + C0)
    assert_same_on_both_targets(emulated, executed)
    # A dynamic accumulate flag: overwrite at the first k-block only.
    A, B = operands(64, 16, 64, seed=7)
    emulated, executed = run_on_both_targets(run_wgmma, [A, B, np.full((64, 16), 5.0, np.float32)],
                                             (cutlass.Float16, ROW, ROW, 64, 16, 64, False, True, 2), options=SM90)
    np.testing.assert_array_equal(executed[2], A @ B.T)
    assert_same_on_both_targets(emulated, executed)


# ---- TMA ---------------------------------------------------------------------------------------------

def test_ptx_tma_load_2d_with_out_of_bounds_zero_fill():
    a = np.arange(20 * 72, dtype=np.float32).reshape(20, 72) + 1
    tile = (8, 32)
    host = _load_kernel(tile, cute.make_layout(tile, stride=(32, 1)), Float32)
    emulated, executed = run_on_both_targets(host, [a, np.full(_padded(a, tile).shape, -1, np.float32)], options=SM90)
    np.testing.assert_array_equal(executed[1], _padded(a, tile))
    assert_same_on_both_targets(emulated, executed)


def test_ptx_tma_load_128b_swizzled():
    a = (np.arange(16 * 128) % 251).astype(np.float16).reshape(16, 128)
    tile = (8, 64)
    host = _load_kernel(tile, cute.make_layout(tile, stride=(64, 1)), Float16, swizzle=cute.make_swizzle(3, 3, 3))
    emulated, executed = run_on_both_targets(host, [a, np.zeros_like(a)], options=SM90)
    np.testing.assert_array_equal(executed[1], a)
    assert_same_on_both_targets(emulated, executed)


@pytest.mark.parametrize("k_major", [True, False])
@pytest.mark.parametrize("mcast", [False, True])
def test_ptx_tma_staged_swizzled_loads_and_multicast(k_major, mcast):
    a = (np.arange(128 * 128) % 509).astype(np.float16).reshape(128, 128)
    if not k_major:
        a = np.asfortranarray(a)
    emulated, executed = run_on_both_targets(_dense_gemm_shaped(k_major, mcast), [a, np.zeros((128, 128), np.float16)],
                                             options=SM90)
    want = a.copy()
    if mcast:
        want[64:] = a[:64]
    np.testing.assert_array_equal(executed[1], want)
    assert_same_on_both_targets(emulated, executed)


def test_ptx_tma_multicast_and_remote_mbarrier_arrive():
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) + 1
    emulated, executed = run_on_both_targets(multicast_host, [a, np.zeros((2, 16, 32), np.float32)], options=SM90)
    want = np.stack([a, a])
    want[0, 0, 0] = -7
    np.testing.assert_array_equal(executed[1], want)
    assert_same_on_both_targets(emulated, executed)


@pytest.mark.parametrize("k_tiles", [2, 7])
def test_ptx_three_stage_tma_mbarrier_pipeline(k_tiles):
    rng = np.random.default_rng(k_tiles)
    a = rng.integers(-8, 8, size=(16, 32 * k_tiles)).astype(np.float32)
    emulated, executed = run_on_both_targets(pipelined_host, [a, np.zeros((16, 8), np.float32)], scalars=(k_tiles,),
                                             options=SM90)
    np.testing.assert_array_equal(executed[1], (a.reshape(16, k_tiles, 8, 4) * 2).sum(axis=(1, 3)))
    assert_same_on_both_targets(emulated, executed)


@cute.kernel
def _store_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor):
    bidx, bidy, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    s = cute.make_tensor(cute.arch.alloc_smem(Float32, 256, alignment=128), cute.make_layout((8, 32), stride=(32, 1)))
    for i in cutlass.range(tidx, 256, 32):
        s[i // 32, i % 32] = Float32((bidx * 8 + i // 32) * 1000 + bidy * 32 + i % 32)
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_threads()
    cute.copy(atom, s, cute.local_tile(tma_tensor, (8, 32), (bidx, bidy)))
    cute.arch.cp_async_bulk_commit_group()
    cute.arch.cp_async_bulk_wait_group(0, read=True)


@cute.jit
def _store_host(c: cute.Tensor):
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, cute.make_layout((8, 32), stride=(32, 1)),
                                          (8, 32))
    _store_kernel(atom, t).launch(grid=(2, 2, 1), block=(32, 1, 1))


def test_ptx_tma_store_writes_back_clipped():
    emulated, executed = run_on_both_targets(_store_host, [np.full((12, 40), -1, np.float32)], options=SM90)
    r, k = np.meshgrid(np.arange(12), np.arange(40), indexing="ij")
    np.testing.assert_array_equal(executed[0], (r * 1000 + k).astype(np.float32))
    assert_same_on_both_targets(emulated, executed)


@pytest.mark.parametrize("case", range(4))
def test_ptx_tma_reduce_store(case):
    from test_sm90_tma_reduce import CASES, reduce_store_host
    reduction, dtype, combine = CASES[case]
    rng = np.random.default_rng(3)
    dst = (rng.standard_normal((12, 40)) * 100).astype(dtype)
    src = (rng.standard_normal((16, 64)) * 100).astype(dtype)
    emulated, executed = run_on_both_targets(reduce_store_host, [dst, src], (reduction,), options=SM90)
    np.testing.assert_array_equal(executed[0], combine(dst, src[:12, :40]))
    assert_same_on_both_targets(emulated, executed)


# ---- TMA descriptors in device memory (tensormap.replace, tensormap.cp_fenceproxy) -------------------

@pytest.mark.parametrize("slot_space", ["gmem", "smem"])
def test_ptx_tiles_load_through_a_descriptor_re_pointed_in_device_memory(slot_space):
    from test_tma_descriptor_update import _inputs, _tiles_through_slot
    from test_tma_descriptor_update import _padded as padded_b
    a, b, slots, out = _inputs()
    emulated, executed = run_on_both_targets(_tiles_through_slot(slot_space), [a, b, slots, out], options=SM90)
    np.testing.assert_array_equal(executed[3], padded_b(b))
    np.testing.assert_array_equal(executed[3], emulated[3])


@pytest.mark.parametrize("mode", ["GMEM", "SMEM"])
def test_ptx_tensormap_manager_re_points_a_descriptor(mode):
    from test_tma_descriptor_update import _inputs, _manager_host
    from test_tma_descriptor_update import _padded as padded_b
    a, b, slots, out = _inputs()
    emulated, executed = run_on_both_targets(_manager_host(mode), [a, b, slots, out], options=SM90)
    np.testing.assert_array_equal(executed[3], padded_b(b))
    np.testing.assert_array_equal(executed[3], emulated[3])
