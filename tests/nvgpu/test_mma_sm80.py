"""SM80 MMA atoms (warp.MmaF16BF16Op, warp.MmaFP8Op, nvgpu.MmaUniversalOp), TiledMma / ThrMma
partitioning, cute.gemm and the tiled copies derived from a TiledMma.

References: the atoms' thread-value layouts against the PTX ISA's fragment figures (written out
here by hand); kernels on the CPU emulator against numpy matrix products."""
import re

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._dsl.errors import DSLUserCodeError
import toolchain

warp = cute.nvgpu.warp


# ---- atom tables against the PTX ISA fragment layouts ------------------------------------------

def ptx_a(k, lane, i):
    """(row m, col k) of value i of `lane` in the A fragment ("Matrix Fragments for mma.m16n8k8/k16")."""
    g, t = lane // 4, lane % 4
    if k == 8:  # a0,a1: row g; a2,a3: row g+8; col 2t + (i & 1)
        return (g if i < 2 else g + 8, 2 * t + (i & 1))
    # k16: a0,a1,a4,a5 in row g, a2,a3,a6,a7 in row g+8; a4..a7 at columns +8
    return (g if i in (0, 1, 4, 5) else g + 8, 2 * t + (i & 1) + (8 if i >= 4 else 0))


def ptx_b(k, lane, i):
    """(row k, col n) of value i of `lane` in the B fragment."""
    g, t = lane // 4, lane % 4
    if k == 8:
        return (2 * t + i, g)
    return (2 * t + (i & 1) + (8 if i >= 2 else 0), g)


def ptx_c(lane, i):
    g, t = lane // 4, lane % 4
    return (g if i < 2 else g + 8, 2 * t + (i & 1))


def tv_positions(tv, rows):
    """{(thread, value): (row, col)} of a TV layout into a column-major tile with `rows` rows."""
    nthr, nval = cute.size(tv, mode=[0]), cute.size(tv, mode=[1])
    out = {}
    for t in range(nthr):
        for v in range(nval):
            idx = tv((t, v))
            out[(t, v)] = (idx % rows, idx // rows)
    return out


@pytest.mark.parametrize("k", [8, 16])
@pytest.mark.parametrize("ab,acc", [(cutlass.Float16, cutlass.Float32), (cutlass.BFloat16, cutlass.Float32),
                                    (cutlass.Float16, cutlass.Float16)])
def test_f16bf16_atom_layouts_are_the_ptx_fragments(k, ab, acc):
    atom = cute.make_mma_atom(warp.MmaF16BF16Op(ab, acc, (16, 8, k)))
    assert atom.shape_mnk == (16, 8, k)
    assert cute.size(atom.thr_id) == 32
    a = tv_positions(atom.tv_layout_A, 16)
    b = tv_positions(atom.tv_layout_B, 8)  # B is (N, K): row = n, col = k
    c = tv_positions(atom.tv_layout_C, 16)
    assert len(a) == 16 * k and len(b) == 8 * k and len(c) == 128
    for lane in range(32):
        for i in range(16 * k // 32):
            assert a[(lane, i)] == ptx_a(k, lane, i)
        for i in range(8 * k // 32):
            kk, n = ptx_b(k, lane, i)
            assert b[(lane, i)] == (n, kk)
        for i in range(4):
            assert c[(lane, i)] == ptx_c(lane, i)


def test_fp8_atom_layouts_are_the_ptx_fragments():
    f8 = getattr(cutlass, "Float8E4M3FN", None)
    if f8 is None:
        pytest.skip("Float8E4M3FN is not available in this tree")
    atom = cute.make_mma_atom(warp.MmaFP8Op(f8, cutlass.Float32, (16, 8, 32)))
    a = tv_positions(atom.tv_layout_A, 16)
    b = tv_positions(atom.tv_layout_B, 8)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i in range(16):  # a0..a3 row g, a4..a7 row g+8, a8..a15 the same at columns +16
            assert a[(lane, i)] == (g + (8 if (i // 4) % 2 else 0), 4 * t + i % 4 + (16 if i >= 8 else 0))
        for i in range(8):  # b0..b3 rows 4t.., b4..b7 rows 4t+16..
            assert b[(lane, i)] == (g, 4 * t + i % 4 + (16 if i >= 4 else 0))


def test_universal_atom_is_one_thread_one_value():
    atom = cute.make_mma_atom(cute.nvgpu.MmaUniversalOp(cutlass.Float32))
    assert atom.shape_mnk == (1, 1, 1)
    assert cute.size(atom.thr_id) == 1
    assert cute.size(atom.tv_layout_C) == 1
    assert "universal MMA Operation" in str(cute.nvgpu.MmaUniversalOp(cutlass.Float32))


def test_tiled_mma_layouts_follow_cute():
    # CuTe's TiledMMA of SM80_16x8x16 over 2x2x1 atoms: A's (thread, value) -> (m, k) of the 32x16
    # tile, with thread = lane + 32 * (warp_m + 2 * warp_n).
    tiled = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)), (2, 2, 1))
    assert tiled.size == 128
    assert [tiled.get_tile_size(i) for i in range(3)] == [32, 16, 16]
    a = tv_positions(tiled.tv_layout_A_tiled, 32)
    c = tv_positions(tiled.tv_layout_C_tiled, 32)
    for thr in range(128):
        lane, wm, wn = thr % 32, (thr // 32) % 2, thr // 64
        for i in range(8):
            m, k = ptx_a(16, lane, i)
            assert a[(thr, i)] == (m + 16 * wm, k)
        for i in range(4):
            m, n = ptx_c(lane, i)
            assert c[(thr, i)] == (m + 16 * wm, n + 8 * wn)
    assert tiled.partition_shape_A((64, 32)) == ((2, 2, 2), 2, 2)
    assert tiled.partition_shape_C((64, 64)) == ((2, 2), 2, 4)


def test_permutation_mnk_widens_the_tile():
    tiled = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)), (2, 2, 1),
                                permutation_mnk=(32, 32, 16))
    assert [tiled.get_tile_size(i) for i in range(3)] == [32, 32, 16]
    # With N = 32 and two warps in N, each warp owns two atoms: columns n and n + 16.
    c = tv_positions(tiled.tv_layout_C_tiled, 32)
    cols = {c[(thr, v)][1] for thr in range(64, 96) for v in range(8)}
    assert cols == set(range(8, 16)) | set(range(24, 32))


def test_sgemm_style_permutation_with_layouts():
    atoms = cute.make_layout((16, 8, 1), stride=(8, 1, 0))
    tiled = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cutlass.Float32), atoms,
                                permutation_mnk=(cute.make_layout((16, 4), stride=(4, 1)),
                                                 cute.make_layout((8, 4), stride=(4, 1)), None))
    assert tiled.size == 128
    c = tv_positions(tiled.tv_layout_C_tiled, 64)
    for thr in range(128):
        n_thr, m_thr = thr % 8, thr // 8  # the atom layout's strides: n fastest
        got = {c[(thr, v)] for v in range(16)}
        assert got == {(4 * m_thr + i, 4 * n_thr + j) for i in range(4) for j in range(4)}


# ---- kernels on the emulator -------------------------------------------------------------------

def bf16_round(x):
    """Round-to-nearest-even of float32 values to bfloat16, back in float32."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32)


@cute.kernel
def one_warp_mma(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, mD: cute.Tensor, tiled_mma: cute.TiledMma,
                 M: cutlass.Constexpr, N: cutlass.Constexpr, K: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    gA = cute.local_tile(mA, (M, K), (0, 0))
    gB = cute.local_tile(mB, (N, K), (0, 0))
    gC = cute.local_tile(mC, (M, N), (0, 0))
    gD = cute.local_tile(mD, (M, N), (0, 0))
    thr_mma = tiled_mma.get_slice(tidx)
    tCgA = thr_mma.partition_A(gA)
    tCgB = thr_mma.partition_B(gB)
    tCgC = thr_mma.partition_C(gC)
    tCgD = thr_mma.partition_C(gD)
    tCrA = tiled_mma.make_fragment_A(tCgA)
    tCrB = tiled_mma.make_fragment_B(tCgB)
    tCrC = tiled_mma.make_fragment_C(tCgC)
    tCrA.store(tCgA.load().to(tiled_mma.a_dtype))
    tCrB.store(tCgB.load().to(tiled_mma.b_dtype))
    tCrC.store(tCgC.load().to(tiled_mma.acc_dtype))
    cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)
    tCgD.store(tCrC.load().to(mD.element_type))


@cute.jit
def run_one_warp_mma(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, mD: cute.Tensor, ab: cutlass.Constexpr,
                     acc: cutlass.Constexpr, shape: cutlass.Constexpr):
    tiled_mma = cute.make_tiled_mma(warp.MmaF16BF16Op(ab, acc, shape))
    M, N = mC.shape
    K = mA.shape[1]
    one_warp_mma(mA, mB, mC, mD, tiled_mma, 32, 16, 32).launch(grid=(1, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("k", [8, 16])
@pytest.mark.parametrize("ab,acc", [(cutlass.Float16, cutlass.Float32), (cutlass.BFloat16, cutlass.Float32),
                                    (cutlass.Float16, cutlass.Float16)])
def test_mma_sync_on_the_emulator_matches_numpy(k, ab, acc):
    # A 32x16x32 problem: 2x2 atoms in M/N and 32/k atoms in K, all on one warp.
    rng = np.random.default_rng(k)
    A = rng.standard_normal((32, 32)).astype(np.float32)
    B = rng.standard_normal((16, 32)).astype(np.float32)
    C = rng.standard_normal((32, 16)).astype(np.float32)
    rnd = bf16_round if ab is cutlass.BFloat16 else (lambda x: x.astype(np.float16).astype(np.float32))
    if acc is cutlass.Float16:
        C = C.astype(np.float16).astype(np.float32)
    D = np.zeros((32, 16), np.float32)
    compiled = cute.compile(run_one_warp_mma, A, B, C, D, ab, acc, (16, 8, k), options="--target cpu")
    compiled(A, B, C, D)
    ref = rnd(A).astype(np.float64) @ rnd(B).astype(np.float64).T + C
    if acc is cutlass.Float16:
        # One rounding per k-block of 8/16 (the accumulator is f16 between atom calls).
        np.testing.assert_allclose(D, ref, rtol=1e-2, atol=3e-2)
    else:
        np.testing.assert_allclose(D, ref, rtol=1e-5, atol=1e-5)


@cute.kernel
def tiled_gemm_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
                      copy_A: cute.TiledCopy, copy_B: cute.TiledCopy, bM: cutlass.Constexpr, bN: cutlass.Constexpr,
                      bK: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, bidy, _ = cute.arch.block_idx()
    gA = cute.local_tile(mA, (bM, bK), (bidx, None))  # (bM, bK, k_tiles)
    gB = cute.local_tile(mB, (bN, bK), (bidy, None))  # (bN, bK, k_tiles)
    gC = cute.local_tile(mC, (bM, bN), (bidx, bidy))
    thr_mma = tiled_mma.get_slice(tidx)
    tCgC = thr_mma.partition_C(gC)
    tCrC = tiled_mma.make_fragment_C(tCgC)
    tCrC.fill(0.0)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(gA)[None, None, None, 0])
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(gB)[None, None, None, 0])
    thr_copy_A = copy_A.get_slice(tidx)
    thr_copy_B = copy_B.get_slice(tidx)
    tAgA = thr_copy_A.partition_S(gA)
    tBgB = thr_copy_B.partition_S(gB)
    tArA = thr_copy_A.retile(tCrA)
    tBrB = thr_copy_B.retile(tCrB)
    for kt in range(cute.size(gA, mode=[2])):
        cute.copy(copy_A, tAgA[None, None, None, kt], tArA)
        cute.copy(copy_B, tBgB[None, None, None, kt], tBrB)
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, tCrC, tCrA[None, None, kb], tCrB[None, None, kb], tCrC)
    tCgC.store(tCrC.load())


@cute.jit
def tensorop_gemm(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    op = warp.MmaF16BF16Op(mA.element_type, cutlass.Float32, (16, 8, 16))
    # No N permutation here: with one, a thread's copy values span several MMA_N atoms and the
    # fragment needs CuTe's full retile (make_tiled_copy's TV layout reordering).
    tiled_mma = cute.make_tiled_mma(op, cute.make_layout((2, 2, 1)), permutation_mnk=(32, 16, 16))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), mA.element_type)
    copy_A = cute.make_tiled_copy_A(atom, tiled_mma)
    copy_B = cute.make_tiled_copy_B(atom, tiled_mma)
    bM, bN, bK = 64, 64, 32
    grid = (mC.shape[0] // bM, mC.shape[1] // bN, 1)
    tiled_gemm_kernel(mA, mB, mC, tiled_mma, copy_A, copy_B, bM, bN, bK).launch(grid=grid, block=(tiled_mma.size, 1, 1))


def test_tiled_mma_gemm_multi_cta_on_the_emulator():
    # 2x2 warps, 64x64x32 CTA tiles, a 2x2 grid and 3 k-tiles: gmem -> registers through
    # make_tiled_copy_A/B and retile, cute.gemm over the k-blocks.
    M, N, K = 128, 128, 96
    rng = np.random.default_rng(1)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((N, K)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float32)
    compiled = cute.compile(tensorop_gemm, A, B, C, options="--target cpu")
    compiled(A, B, C)
    ref = A.astype(np.float64) @ B.astype(np.float64).T
    np.testing.assert_allclose(C, ref, rtol=1e-5, atol=1e-4)


def test_gemm_reads_each_a_and_b_fragment_once_per_k_block():
    # Per thread and k-block: 2 (M) x 4 (N) m16n8k16 atoms; A holds 8 f16 values per M row of atoms
    # and B 4 per N column. Each value is read once and feeds every atom of its row or column, so
    # the kernel reads (2*8 + 4*4) f16 register values per 8 mma_sync, not 8 * (8 + 4); and it reads
    # them in pairs, one 32-bit mma operand register each (the fragment stays 32-bit registers).
    A = np.zeros((64, 32), np.float16)
    B = np.zeros((64, 32), np.float16)
    C = np.zeros((64, 64), np.float32)
    ir = cute.compile(tensorop_gemm, A, B, C, options="--target cpu").__mlir__
    mmas = ir.count("mma_sync")
    pair_loads = len(re.findall(r"= load %\d+ : !ptr<f16, rmem, align<\d+>> -> vector<2xf16>", ir))
    single_loads = len(re.findall(r"= load %\d+ : !ptr<f16, rmem, align<\d+>> -> f16", ir))
    assert mmas == 16  # 2 k-blocks of 32 / 16
    assert (pair_loads, single_loads) == (2 * (2 * 8 + 4 * 4) // 2, 0)


@cute.kernel
def fma_gemm_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
                    bM: cutlass.Constexpr, bN: cutlass.Constexpr, bK: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, bidy, _ = cute.arch.block_idx()
    gA = cute.local_tile(mA, (bM, bK), (bidx, None))
    gB = cute.local_tile(mB, (bN, bK), (bidy, None))
    gC = cute.local_tile(mC, (bM, bN), (bidx, bidy))
    thr_mma = tiled_mma.get_slice(tidx)
    tCgA = thr_mma.partition_A(gA)  # (MMA, MMA_M, MMA_K, k_tiles)
    tCgB = thr_mma.partition_B(gB)
    tCgC = thr_mma.partition_C(gC)
    tCrA = tiled_mma.make_fragment_A(tCgA[None, None, None, 0])
    tCrB = tiled_mma.make_fragment_B(tCgB[None, None, None, 0])
    tCrC = tiled_mma.make_fragment_C(tCgC)
    tCrC.fill(0.0)
    for kt in range(cute.size(gA, mode=[2])):
        cute.autovec_copy(tCgA[None, None, None, kt], tCrA)
        cute.autovec_copy(tCgB[None, None, None, kt], tCrB)
        for kb in cutlass.range_constexpr(bK):
            cute.gemm(tiled_mma, tCrC, tCrA[None, None, kb], tCrB[None, None, kb], tCrC)
    cute.autovec_copy(tCrC, tCgC)


@cute.jit
def fma_gemm(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    # NVIDIA's sgemm structure: 16x16 FMA "atoms" (threads), each thread a 4x4 block.
    atoms = cute.make_layout((16, 16, 1), stride=(16, 1, 0))
    perm_m = cute.make_layout((16, 4), stride=(4, 1))
    perm_n = cute.make_layout((16, 4), stride=(4, 1))
    tiled_mma = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cutlass.Float32), atoms,
                                    permutation_mnk=(perm_m, perm_n, None))
    bM, bN, bK = 64, 64, 8
    grid = (mC.shape[0] // bM, mC.shape[1] // bN, 1)
    fma_gemm_kernel(mA, mB, mC, tiled_mma, bM, bN, bK).launch(grid=grid, block=(tiled_mma.size, 1, 1))


def test_fma_tiled_gemm_on_the_emulator():
    M, N, K = 128, 64, 16
    rng = np.random.default_rng(2)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((N, K)).astype(np.float32)
    C = np.full((M, N), np.nan, np.float32)
    compiled = cute.compile(fma_gemm, A, B, C, options="--target cpu")
    compiled(A, B, C)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B.astype(np.float64).T, rtol=1e-5, atol=1e-5)


# ---- the epilogue through make_tiled_copy_C -----------------------------------------------------

@cute.kernel
def copy_c_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
                  copy_C: cute.TiledCopy):
    tidx, _, _ = cute.arch.thread_idx()
    gA = cute.local_tile(mA, (32, 16), (0, 0))
    gB = cute.local_tile(mB, (16, 16), (0, 0))
    gC = cute.local_tile(mC, (32, 16), (0, 0))
    thr_mma = tiled_mma.get_slice(tidx)
    tCgA = thr_mma.partition_A(gA)
    tCgB = thr_mma.partition_B(gB)
    tCrA = tiled_mma.make_fragment_A(tCgA)
    tCrB = tiled_mma.make_fragment_B(tCgB)
    tCrC = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((32, 16)))
    cute.autovec_copy(tCgA, tCrA)
    cute.autovec_copy(tCgB, tCrB)
    tCrC.fill(1.0)
    cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)
    # Accumulators leave through a tiled copy whose TV layout is the MMA's C layout.
    thr_copy = copy_C.get_slice(tidx)
    cute.copy(copy_C, thr_copy.retile(tCrC), thr_copy.partition_D(gC))


@cute.jit
def run_copy_c(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    tiled_mma = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 8)), (2, 2, 1))
    copy_C = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32), tiled_mma)
    copy_c_kernel(mA, mB, mC, tiled_mma, copy_C).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_tiled_copy_c_stores_the_accumulators():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((32, 16)).astype(np.float16)
    B = rng.standard_normal((16, 16)).astype(np.float16)
    C = np.full((32, 16), np.nan, np.float32)
    compiled = cute.compile(run_copy_c, A, B, C, options="--target cpu")
    compiled(A, B, C)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B.astype(np.float64).T + 1.0, rtol=1e-5, atol=1e-5)


# ---- PTX ------------------------------------------------------------------------------------------

def test_tiled_gemm_ptx_uses_mma_sync():
    A = np.zeros((64, 32), np.float16)
    B = np.zeros((64, 32), np.float16)
    C = np.zeros((64, 64), np.float32)
    compiled = cute.compile(tensorop_gemm, A, B, C)
    toolchain.ptx_of(compiled)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in compiled.__ptx__


# ---- misuse ----------------------------------------------------------------------------------------

def test_op_constraints_raise():
    with pytest.raises(DSLUserCodeError, match="acc_dtype must be Float32 when ab_dtype is BFloat16"):
        warp.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float16, (16, 8, 16))
    with pytest.raises(DSLUserCodeError, match=r"shape_mnk must be \(16, 8, 8\) or \(16, 8, 16\)"):
        warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 32))
    with pytest.raises(DSLUserCodeError, match="ab_dtype must be Float16 or BFloat16"):
        warp.MmaF16BF16Op(cutlass.Float32, cutlass.Float32, (16, 8, 16))
    with pytest.raises(DSLUserCodeError, match="abacc_dtype must be Float16, Float32 or Float64"):
        cute.nvgpu.MmaUniversalOp(cutlass.Int32)
    with pytest.raises(DSLUserCodeError, match="ab_dtype must be Float8E4M3FN or Float8E5M2"):
        warp.MmaFP8Op(cutlass.Float16, cutlass.Float32, (16, 8, 32))
    with pytest.raises(ValueError, match="rank <= 3"):
        cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)), (1, 1, 1, 1))


@cute.kernel
def misuse_kernel(mA: cute.Tensor, tiled_mma: cute.TiledMma, which: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    thr_mma = tiled_mma.get_slice(tidx)
    gA = cute.local_tile(mA, (16, 16), (0, 0))
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(gA))
    tCrB = tiled_mma.make_fragment_B(tiled_mma.partition_shape_B((8, 16)))
    tCrC = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((16, 8)))
    if cutlass.const_expr(which == "dtype"):
        wrong = cute.make_rmem_tensor(tiled_mma.partition_shape_A((16, 16)), cutlass.Float32)
        cute.gemm(tiled_mma, tCrC, wrong, tCrB, tCrC)  # LINE dtype
    if cutlass.const_expr(which == "rank"):
        cute.gemm(tiled_mma, tCrC, tCrA, tCrB[None, None, 0], tCrC)  # LINE rank
    if cutlass.const_expr(which == "shape"):
        wide = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((16, 16)))
        cute.gemm(tiled_mma, wide, tCrA, tCrB, wide)  # LINE shape
    if cutlass.const_expr(which == "fragment"):
        tiled_mma.make_fragment_A(cute.make_rmem_tensor((4, 1, 1), cutlass.Float16))  # LINE fragment
    if cutlass.const_expr(which == "unpartitioned"):
        tiled_mma.make_fragment_A(gA)  # LINE unpartitioned


@cute.jit
def run_misuse(mA: cute.Tensor, which: cutlass.Constexpr):
    tiled_mma = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)))
    misuse_kernel(mA, tiled_mma, which).launch(grid=(1, 1, 1), block=(32, 1, 1))


def line_of(marker):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# LINE " + marker):
                return n
    raise AssertionError(marker)


@pytest.mark.parametrize("which,exc,match", [
    ("dtype", TypeError, "operand A holds Float32 but the MMA atom takes Float16"),
    ("rank", ValueError, "A and B must have the same rank"),
    ("shape", ValueError, "C's \\(M, N\\) modes must match A's M and B's N"),
    ("fragment", ValueError, "must hold the atom's 8 values per thread"),
    ("unpartitioned", ValueError, "expected a partitioned tensor"),
])
def test_gemm_misuse_raises_at_the_users_line(which, exc, match):
    A = np.zeros((16, 16), np.float16)
    with pytest.raises(DSLUserCodeError, match=match) as info:
        cute.compile(run_misuse, A, which, options="--target cpu")
    assert isinstance(info.value, exc)
    assert info.value.line == line_of(which)


@cute.kernel
def partial_warp_kernel(mA: cute.Tensor, tiled_mma: cute.TiledMma):
    tidx, _, _ = cute.arch.thread_idx()
    tCrA = tiled_mma.make_fragment_A(tiled_mma.partition_shape_A((16, 16)))
    tCrB = tiled_mma.make_fragment_B(tiled_mma.partition_shape_B((8, 16)))
    tCrC = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((16, 8)))
    tCrA.fill(1.0)
    tCrB.fill(1.0)
    tCrC.fill(0.0)
    if tidx < 16:
        cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)
    mA[tidx] = tCrC[0]


@cute.jit
def run_partial_warp(mA: cute.Tensor):
    tiled_mma = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)))
    partial_warp_kernel(mA, tiled_mma).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_mma_sync_in_a_diverged_warp_is_reported_by_the_emulator():
    A = np.zeros(32, np.float32)
    compiled = cute.compile(run_partial_warp, A, options="--target cpu")
    with pytest.raises(cutlass.DSLRuntimeError, match="mma.sync executed by a partial warp"):
        compiled(A)


# ---- structure as arguments, sizes, coordinate tensors ---------------------------------------------

@cute.kernel
def predicate_kernel(mC: cute.Tensor, tiled_mma: cute.TiledMma):
    tidx, _, _ = cute.arch.thread_idx()
    thr_mma = tiled_mma.get_slice(tidx)
    cC = cute.make_identity_tensor((32, 16))
    tCcC = thr_mma.partition_C(cC)  # the (m, n) coordinates of the thread's accumulators
    gC = cute.local_tile(mC, (32, 16), (0, 0))
    tCgC = thr_mma.partition_C(gC)
    for i in cutlass.range_constexpr(cute.size(tCgC)):
        m, n = tCcC[i]
        tCgC[i] = cutlass.Float32(m * 100 + n)


@cute.jit
def run_predicate(mC: cute.Tensor, tiled_mma: cute.TiledMma):
    predicate_kernel(mC, tiled_mma).launch(grid=(1, 1, 1), block=(cute.size(tiled_mma), 1, 1))


def test_tiled_mma_as_jit_argument_and_coordinate_partition():
    tiled_mma = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 8)), (2, 2, 1))
    assert cute.size(tiled_mma) == 128
    C = np.full((32, 16), np.nan, np.float32)
    compiled = cute.compile(run_predicate, C, tiled_mma, options="--target cpu")
    compiled(C)  # static (compile-time) arguments are left out of the call, like Constexpr ones
    m, n = np.meshgrid(np.arange(32), np.arange(16), indexing="ij")
    np.testing.assert_array_equal(C, m * 100 + n)


# ---- the same kernels on a GPU (run by the lead on the H100) ---------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("k", [8, 16])
@pytest.mark.parametrize("ab,acc", [(cutlass.Float16, cutlass.Float32), (cutlass.BFloat16, cutlass.Float32),
                                    (cutlass.Float16, cutlass.Float16)])
def test_mma_sync_on_the_gpu_matches_the_emulator(k, ab, acc):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(k)
    A = rng.standard_normal((32, 32)).astype(np.float32)
    B = rng.standard_normal((16, 32)).astype(np.float32)
    C = rng.standard_normal((32, 16)).astype(np.float32)
    D_cpu = np.zeros((32, 16), np.float32)
    cute.compile(run_one_warp_mma, A, B, C, D_cpu, ab, acc, (16, 8, k), options="--target cpu")(A, B, C, D_cpu)
    tA, tB, tC = (torch.from_numpy(x).cuda() for x in (A, B, C))
    tD = torch.zeros((32, 16), device="cuda")
    cute.compile(run_one_warp_mma, tA, tB, tC, tD, ab, acc, (16, 8, k))(tA, tB, tC, tD)
    torch.cuda.synchronize()
    tol = 3e-2 if acc is cutlass.Float16 else 1e-5
    np.testing.assert_allclose(tD.cpu().numpy(), D_cpu, rtol=tol, atol=tol)


@pytest.mark.gpu
def test_tiled_mma_gemm_on_the_gpu():
    torch = pytest.importorskip("torch")
    M, N, K = 256, 128, 128
    A = torch.randn(M, K, device="cuda", dtype=torch.float16)
    B = torch.randn(N, K, device="cuda", dtype=torch.float16)
    C = torch.full((M, N), float("nan"), device="cuda")
    cute.compile(tensorop_gemm, A, B, C)(A, B, C)
    torch.cuda.synchronize()
    torch.testing.assert_close(C, A.float() @ B.float().T, rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
def test_fma_gemm_on_the_gpu():
    torch = pytest.importorskip("torch")
    A = torch.randn(128, 16, device="cuda")
    B = torch.randn(64, 16, device="cuda")
    C = torch.full((128, 64), float("nan"), device="cuda")
    cute.compile(fma_gemm, A, B, C)(A, B, C)
    torch.cuda.synchronize()
    torch.testing.assert_close(C, A @ B.T, rtol=1e-4, atol=1e-4)


@cute.kernel
def owner_kernel(mC: cute.Tensor, tiled_mma: cute.TiledMma):
    tidx, _, _ = cute.arch.thread_idx()
    tCgC = tiled_mma.get_slice(tidx).partition_C(cute.local_tile(mC, (64, 64), (0, 0)))
    for i in cutlass.range_constexpr(cute.size(tCgC)):
        tCgC[i] = tidx * 100 + i


@cute.jit
def run_owner(mC: cute.Tensor, tiled_mma: cute.TiledMma):
    owner_kernel(mC, tiled_mma).launch(grid=(1, 1, 1), block=(cute.size(tiled_mma), 1, 1))


def test_partition_c_agrees_with_the_tiled_tv_layout():
    # A thread layout whose thread index is not the colexicographic coordinate: get_slice(t)
    # must give thread t the elements that tv_layout_C_tiled (and make_tiled_copy_C) give it.
    atoms = cute.make_layout((16, 16, 1), stride=(16, 1, 0))
    tiled = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cutlass.Float32), atoms,
                                permutation_mnk=(cute.make_layout((16, 4), stride=(4, 1)),
                                                 cute.make_layout((16, 4), stride=(4, 1)), None))
    C = np.full((64, 64), -1, np.int32)
    cute.compile(run_owner, C, tiled, options="--target cpu")(C)
    tv = tiled.tv_layout_C_tiled
    owner = np.full((64, 64), -1, np.int64)
    for t in range(256):
        for v in range(16):
            idx = tv((t, v))
            owner[idx % 64, idx // 64] = t
    np.testing.assert_array_equal(C // 100, owner)
    # n is the fastest thread index (the atom layout's strides), and each thread owns a 4x4 block
    assert owner[0, 4] == 1 and owner[3, 3] == 0 and owner[4, 0] == 16


def test_permutation_mnk_reports_each_modes_tile():
    tiled = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)), (2, 2, 1),
                                permutation_mnk=(None, 32, None))
    assert [cute.size(p) for p in tiled.permutation_mnk] == [32, 32, 16]
    assert "Permutation MNK: (_,32:1,_)" in str(tiled)


def test_tiled_copy_c_atom_covers_the_first_values_of_each_thread():
    tiled = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=64)
    sub = cute.make_tiled_copy_C_atom(atom, tiled)
    assert [str(mode) for mode in sub.tiler_mn] == ["8:1", "8:1"]  # c0, c1 of every lane: rows 0..7, columns 0..7
    got = tv_positions(sub.layout_tv_tiled, 8)
    want = tv_positions(tiled.tv_layout_C_tiled, 16)
    assert {k: v for k, v in want.items() if k[1] < 2} == got


def test_tiled_copy_c_atom_misuse():
    f16acc = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float16, (16, 8, 16)))
    wide = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    with pytest.raises(ValueError, match="more than the 4 accumulators"):
        cute.make_tiled_copy_C_atom(wide, f16acc)


def test_tiled_copy_c_atom_over_a_spread_sub_tile():
    # Over 4 warps in M, two values per thread reach rows 0-7, 16-23, 32-39, 48-55: not one block,
    # so the tiler is CuTe's layout tiler (sub-tile row i is row tiler_m(i) of the MMA's tile).
    tall = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)), (4, 1, 1))
    pair = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=64)
    sub = cute.make_tiled_copy_C_atom(pair, tall)
    tm, tn = sub.tiler_mn
    assert sorted(tm(i) for i in range(cute.size(tm))) == [r + 16 * w for w in range(4) for r in range(8)]
    assert sorted(tn(j) for j in range(cute.size(tn))) == list(range(8))
    got = tv_positions(sub.layout_tv_tiled, cute.size(tm))
    want = tv_positions(tall.tv_layout_C_tiled, 64)
    assert len(got) == 128 * 2
    for (t, v), (i, j) in got.items():
        assert want[(t, v)] == (tm(i), tn(j))


def test_annotation_types_exist():
    for name in ("TiledCopy", "TiledMma", "CopyAtom", "ThrMma", "MmaAtom", "ThrCopy"):
        assert getattr(cute, name) is getattr(cute.typing, name)
    tiled = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cutlass.Float32), (4, 8, 1))
    thr = tiled.get_slice(3)
    assert isinstance(tiled, cute.TiledMma) and isinstance(thr, cute.ThrMma) and isinstance(thr, cute.TiledMma)
    assert thr.size == 32 and thr.partition_shape_C((8, 8)) == (1, 2, 1)
    assert tiled.get_slice(3).thr_idx == 3


@cute.kernel
def outer_product_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, mD: cute.Tensor,
                         atom: cute.MmaAtom, ranked: cutlass.Constexpr):
    # One thread: the (M,K)x(N,K)->(M,N) and (M)x(N)->(M,N) dispatches of a one-value atom.
    rA = cute.make_rmem_tensor((4, 3), mA.element_type)
    rB = cute.make_rmem_tensor((5, 3), mA.element_type)
    rC = cute.make_rmem_tensor((4, 5), mA.element_type)
    cute.autovec_copy(cute.local_tile(mA, (4, 3), (0, 0)), rA)
    cute.autovec_copy(cute.local_tile(mB, (5, 3), (0, 0)), rB)
    cute.autovec_copy(cute.local_tile(mC, (4, 5), (0, 0)), rC)
    if cutlass.const_expr(ranked == 2):
        cute.gemm(atom, rC, rA, rB, rC)
    else:
        cute.gemm(atom, rC, rA[None, 0], rB[None, 0], rC)
    cute.autovec_copy(rC, cute.local_tile(mD, (4, 5), (0, 0)))


@cute.jit
def run_outer_product(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, mD: cute.Tensor, ranked: cutlass.Constexpr):
    atom = cute.make_mma_atom(cute.nvgpu.MmaUniversalOp(mA.element_type))
    outer_product_kernel(mA, mB, mC, mD, atom, ranked).launch(grid=(1, 1, 1), block=(1, 1, 1))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("ranked", [1, 2])
def test_universal_atom_rank_dispatch(dtype, ranked):
    rng = np.random.default_rng(5)
    A = (rng.integers(-4, 4, (4, 3)) / 4).astype(dtype)
    B = (rng.integers(-4, 4, (5, 3)) / 4).astype(dtype)
    C = (rng.integers(-4, 4, (4, 5)) / 4).astype(dtype)
    D = np.zeros((4, 5), dtype)
    cute.compile(run_outer_product, A, B, C, D, ranked, options="--target cpu")(A, B, C, D)
    a, b = (A, B) if ranked == 2 else (A[:, :1], B[:, :1])
    np.testing.assert_array_equal(D, (a.astype(np.float64) @ b.astype(np.float64).T + C).astype(dtype))
