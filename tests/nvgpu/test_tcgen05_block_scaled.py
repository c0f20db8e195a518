"""Block-scaled tcgen05.mma (tcgen05.MmaMXF8Op / MmaMXF4Op / MmaMXF4NVF4Op, Field.SFA / SFB) on the CPU
emulator (and, for the products, the PTX executor too) for sm_100a, against numpy: A and B dequantised with their scale factors (one per block of
K elements of a row of A / column of B), then multiplied. The scale factors are placed in tensor
memory by the test in the layout of CuTe C++'s tmem_sf_frg (mma_traits_sm100_frag.hpp): row r of A
(column r of B) in lane r % 32 of each 32-lane subpartition (replicated four times), column r // 32,
the factors of consecutive K blocks side by side in the bytes of a column; the MMA finds the byte
through the 8-bit tensor-memory pointer (its top two bits), which the atom moves into the instruction
descriptor's scale-factor IDs. The instruction descriptor's bits against the PTX ISA's table."""
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
K_MAJOR = OperandMajorMode.K
ONE = tcgen05.CtaGroup.ONE


def make_op(kind, sf_dtype, N):
    if kind == "mxf8":
        return tcgen05.MmaMXF8Op(cutlass.Float8E4M3FN, (128, N), ONE, tcgen05.OperandSource.SMEM, K_MAJOR, K_MAJOR)
    if kind == "mxf4":
        return tcgen05.MmaMXF4Op((128, N), ONE, tcgen05.OperandSource.SMEM)
    return tcgen05.MmaMXF4NVF4Op(sf_dtype, (128, N), ONE, tcgen05.OperandSource.SMEM)


@cute.kernel
def scaled_mma_kernel(mA: cute.Tensor, mB: cute.Tensor, mW: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
                      dtype: cutlass.Constexpr, sf_dtype: cutlass.Constexpr, M: cutlass.Constexpr,
                      N: cutlass.Constexpr, K: cutlass.Constexpr, W: cutlass.Constexpr, nsf: cutlass.Constexpr,
                      fault: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    sA_l = sm100_utils.make_smem_layout_a(tiled_mma, (M, N, K), dtype, 1)
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, (M, N, K), dtype, 1)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bar = smem.allocate_array(cutlass.Int64, 1)
    sA = smem.allocate_tensor(dtype, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(dtype, sB_l.outer, 1024, sB_l.inner)
    gC = cute.make_tensor(mC.iterator, cute.make_layout((M, N), stride=(N, 1)))
    gW = cute.make_tensor(mW.iterator, cute.make_layout((128, W), stride=(W, 1)))
    kb = tiled_mma.shape_mnk[2]
    if cutlass.const_expr(dtype.width == 8):
        gA = cute.make_tensor(mA.iterator, cute.make_layout((M, K), stride=(K, 1)))
        gB = cute.make_tensor(mB.iterator, cute.make_layout((N, K), stride=(K, 1)))
        for j in cutlass.range_constexpr(M * K // 128):
            i = tidx + j * 128
            m, k = i % M, i // M
            sA[((m, k % kb), 0, k // kb, 0)] = gA[(m, k)].to(dtype)
        for j in cutlass.range_constexpr(N * K // 128):
            i = tidx + j * 128
            n, k = i % N, i // N
            sB[((n, k % kb), 0, k // kb, 0)] = gB[(n, k)].to(dtype)
    else:
        # 4-bit elements share bytes: the host packed the pairs (even k in the low nibble); each
        # byte goes to the byte of the smem tile viewed as Uint8.
        gA = cute.make_tensor(mA.iterator, cute.make_layout((M, K // 2), stride=(K // 2, 1)))
        gB = cute.make_tensor(mB.iterator, cute.make_layout((N, K // 2), stride=(K // 2, 1)))
        sA8 = cute.recast_tensor(sA, cutlass.Uint8)
        sB8 = cute.recast_tensor(sB, cutlass.Uint8)
        hb = kb // 2
        for j in cutlass.range_constexpr(M * K // 256):
            i = tidx + j * 128
            m, k = i % M, i // M
            sA8[((m, k % hb), 0, k // hb, 0)] = gA[(m, k)]
        for j in cutlass.range_constexpr(N * K // 256):
            i = tidx + j * 128
            n, k = i % N, i // N
            sB8[((n, k % hb), 0, k // hb, 0)] = gB[(n, k)]
    cute.arch.fence_proxy("async.shared", space="cta")
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    if warp == 0:
        cute.arch.alloc_tmem(256, holder)
    cute.arch.barrier()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)
    tCtAcc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((M, N)))
    tCtAcc = cute.make_tensor(tmem_ptr, tCtAcc.layout)
    # The scale-factor words (precomputed in their tensor-memory layout) into columns 128 .. 128 + W.
    words_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Int32, 16, holder) + 128
    tW = cute.make_tensor(words_ptr, cute.make_layout((128, W), stride=(65536, 1)))
    ld = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x4), cutlass.Int32), tW)
    st = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.St32x32bOp(tcgen05.Repetition.x4), cutlass.Int32), tW)
    tWg = ld.get_slice(tidx).partition_D(gW)
    words = cute.make_rmem_tensor(tWg.shape, cutlass.Int32)
    cute.autovec_copy(tWg, words)
    cute.copy(st, words, st.get_slice(tidx).partition_D(tW))
    cute.arch.fence_view_async_tmem_store()
    cute.arch.barrier()
    sf_ptr = cute.arch.retrieve_tmem_ptr(sf_dtype, 16, holder)
    per_column = 4 // nsf  # K blocks whose factors share a column
    b_columns = (N + 31) // 32
    groups = (K // kb + per_column - 1) // per_column
    if warp == 0:
        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
        for k in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            group, byte = k // per_column, (k % per_column) * nsf
            # Element offsets of 8-bit tensor memory: 4 per column.
            if cutlass.const_expr(fault == "sfa_outside"):
                tiled_mma.set(tcgen05.Field.SFA, sf_ptr + 4 * 254)  # columns 254-257 of 256 allocated
            elif cutlass.const_expr(fault != "no_sfa"):
                tiled_mma.set(tcgen05.Field.SFA, sf_ptr + (4 * (128 + 4 * group) + byte))
            tiled_mma.set(tcgen05.Field.SFB, sf_ptr + (4 * (128 + 4 * groups + b_columns * group) + byte))
            cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, k, 0)], tCrB[(None, None, k, 0)], tCtAcc)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        tcgen05.commit(bar)
    cute.arch.mbarrier_wait(bar, 0)
    store_accumulator(tiled_mma, tCtAcc, gC, tidx)
    cute.arch.barrier()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(tmem_ptr, 256)


@cute.jit
def run_scaled_mma(mA: cute.Tensor, mB: cute.Tensor, mW: cute.Tensor, mC: cute.Tensor, kind: cutlass.Constexpr,
                   sf_dtype: cutlass.Constexpr, M: cutlass.Constexpr, N: cutlass.Constexpr, K: cutlass.Constexpr,
                   W: cutlass.Constexpr, fault: cutlass.Constexpr = None):
    op = make_op(kind, sf_dtype, N)
    tiled_mma = cute.make_tiled_mma(op)
    nsf = op.shape_mnk[2] // op.sf_vec_size
    scaled_mma_kernel(mA, mB, mW, mC, tiled_mma, op.a_dtype, op.sf_dtype, M, N, K, W, nsf, fault).launch(
        grid=(1, 1, 1), block=(128, 1, 1))


def scale_words(sfa, sfb, nsf, N):
    """The (128 lanes, W columns) 32-bit words of the factors, as the kernel addresses them: the K
    blocks' factors of A in groups of 4 columns, then B's in groups of ceil(N / 32) columns; in a
    group, row (column) r at lane r % 32 of every subpartition, column r // 32, K block k's nsf
    factors at byte (k % (4 // nsf)) * nsf."""
    per_column = 4 // nsf
    blocks = sfa.shape[1] // nsf
    groups = -(-blocks // per_column)
    b_columns = -(-N // 32)
    W = 4 * groups + b_columns * groups
    W = 1 << max(2, (W - 1).bit_length())  # a power of two: whole repetitions of the 32x32b.x4 copy
    words = np.zeros((128, W), np.uint32)
    for mat, base, rows, columns in ((sfa, 0, 128, 4), (sfb, 4 * groups, N, b_columns)):
        for blk in range(blocks):
            group, byte = blk // per_column, (blk % per_column) * nsf
            for r in range(rows):
                for j in range(nsf):
                    v = np.uint32(mat[r, blk * nsf + j]) << np.uint32(8 * (byte + j))
                    for sp in range(4):
                        words[32 * sp + r % 32, base + columns * group + r // 32] |= v
    return words.view(np.int32), W


E2M1_MAGNITUDES = [0, 0.5, 1, 1.5, 2, 3, 4, 6]


def pack_e2m1(x):
    """E2M1 codes (sign bit 8, magnitude index 0-7), two to a byte, even K in the low nibble."""
    codes = np.array([[E2M1_MAGNITUDES.index(abs(v)) | (8 if v < 0 else 0) for v in row] for row in x], np.uint8)
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def e8m0(bits):
    return np.ldexp(1.0, bits.astype(np.int32) - 127)


def e4m3(bits):  # the unsigned E4M3 factors the test draws (normal numbers)
    b = bits.astype(np.int32)
    e, m = (b >> 3) & 0xF, b & 7
    return np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * np.ldexp(1.0, e - 7))


def run_case(kind, sf_dtype, N, K, seed=0, target="cpu"):
    M = 128
    rng = np.random.default_rng(seed)
    vec = 16 if kind == "nvf4" else 32
    if kind == "mxf8":
        A = rng.integers(-8, 9, (M, K)).astype(np.float32) / 2  # exact in e4m3
        B = rng.integers(-8, 9, (N, K)).astype(np.float32) / 2
    else:
        grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)  # e2m1 values
        A, B = rng.choice(grid, (M, K)), rng.choice(grid, (N, K))
    if sf_dtype is cutlass.Float8E8M0FNU:
        sfa, sfb = (rng.integers(120, 135, (r, K // vec)).astype(np.uint8) for r in (M, N))
        dec = e8m0
    else:
        sfa, sfb = (rng.integers(0x20, 0x50, (r, K // vec)).astype(np.uint8) for r in (M, N))
        dec = e4m3
    nsf = (32 if kind == "mxf8" else 64) // vec
    words, W = scale_words(sfa, sfb, nsf, N)
    C = np.zeros((M, N), np.float32)
    a_in, b_in = (A, B) if kind == "mxf8" else (pack_e2m1(A), pack_e2m1(B))
    options = f"--gpu-arch sm_100a --target {target}"
    cute.compile(run_scaled_mma, a_in, b_in, words, C, kind, sf_dtype, M, N, K, W, options=options)(a_in, b_in, words, C)
    Ad = A.astype(np.float64) * np.repeat(dec(sfa), vec, axis=1)
    Bd = B.astype(np.float64) * np.repeat(dec(sfb), vec, axis=1)
    # f32 accumulation: the error is bounded by a few ulps of the sum of the products' magnitudes.
    bound = 1e-6 * (np.abs(Ad) @ np.abs(Bd).T)
    assert np.all(np.abs(C - Ad @ Bd.T) <= bound), np.max(np.abs(C - Ad @ Bd.T) - bound)
    # The factors matter: without them the product differs.
    assert not np.allclose(C, A.astype(np.float64) @ B.T.astype(np.float64), rtol=1e-3)


# Both CPU targets: the IR emulator and the PTX executor (the PTX libNVVM makes, run on the CPU).
TARGETS = ["cpu", pytest.param("ptx", marks=needs_libnvvm)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("N,K", [(32, 32), (64, 128)])
def test_mxf8_e4m3_with_ue8m0_factors_against_numpy(N, K, target):
    run_case("mxf8", cutlass.Float8E8M0FNU, N, K, target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("N,K", [(32, 64), (64, 256)])
def test_mxf4_e2m1_with_ue8m0_factors_against_numpy(N, K, target):
    run_case("mxf4", cutlass.Float8E8M0FNU, N, K, seed=1, target=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("sf_dtype", [cutlass.Float8E4M3FN, cutlass.Float8E8M0FNU])
def test_nvf4_e2m1_with_factors_per_16_against_numpy(sf_dtype, target):
    run_case("nvf4", sf_dtype, 64, 128, seed=2, target=target)


def test_block_scaled_instruction_descriptor_bits():
    # PTX ISA / CuTe's InstrDescriptorBlockScaled: A / B format [7,10) / [10,13) (mxf8f6f4: E4M3 0,
    # E5M2 1; mxf4 / mxf4nvf4: E2M1 1), N >> 3 at 17, scale format at 23 (1 UE8M0, 0 UE4M3),
    # M >> 4 at 24; no D format; the scale-factor IDs (bits 4-5, 29-30) come from the SFA / SFB
    # addresses at the call.
    d = _core.cute.tcgen05_instruction_descriptor
    mx8 = tcgen05.MmaMXF8Op(cutlass.Float8E5M2, (128, 64), ONE, tcgen05.OperandSource.SMEM, K_MAJOR, K_MAJOR)
    assert d(mx8._atom) == (1 << 7) | (1 << 10) | (8 << 17) | (1 << 23) | (8 << 24)
    mx4 = tcgen05.MmaMXF4Op((128, 256), ONE)
    assert d(mx4._atom) == (1 << 7) | (1 << 10) | (32 << 17) | (1 << 23) | (8 << 24)
    nv4 = tcgen05.MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (256, 128), tcgen05.CtaGroup.TWO)
    assert d(nv4._atom) == (1 << 7) | (1 << 10) | (16 << 17) | (16 << 24)
    assert mx8.shape_mnk == (128, 64, 32) and mx4.shape_mnk == (128, 256, 64) and nv4.sf_vec_size == 16


def test_block_scaled_ops_refuse_bad_types_and_shapes():
    with pytest.raises(cutlass.DSLUserCodeError, match="sf_dtype must be Float8E8M0FNU or Float8E4M3FN"):
        tcgen05.MmaMXF4NVF4Op(cutlass.Float16, (128, 64))
    with pytest.raises(cutlass.DSLUserCodeError, match="A and B must be Float8E4M3FN or Float8E5M2"):
        tcgen05.MmaMXF8Op(cutlass.Float16, (128, 64))
    with pytest.raises(cutlass.DSLUserCodeError, match="instruction_shape must be \\(M, N\\) or \\(M, N, 64\\) with M = 128"):
        tcgen05.MmaMXF4Op((64, 64))


@cute.kernel
def round_trip_kernel(x: cute.Tensor, y: cute.Tensor, dtype: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    y[tidx] = x[tidx].to(dtype).to(cutlass.Float32)


@cute.jit
def round_trip(x: cute.Tensor, y: cute.Tensor, dtype: cutlass.Constexpr):
    round_trip_kernel(x, y, dtype).launch(grid=(1, 1, 1), block=(6, 1, 1))


def test_float8_e8m0fnu_converts_as_powers_of_two():
    x = np.array([1.0, 3.0, 0.25, 1e-3, 2.0 ** 100, 0.0], np.float32)
    y = np.zeros(6, np.float32)
    cute.compile(round_trip, x, y, cutlass.Float8E8M0FNU, options=EMU)(x, y)
    # Round toward zero to a power of two; values at or below 2^-127 (zero too) become 2^-127.
    np.testing.assert_array_equal(y, np.array([1.0, 2.0, 0.25, 2.0 ** -10, 2.0 ** 100, 2.0 ** -127], np.float32))
    gpu = cute.compile(round_trip, x, y, cutlass.Float8E8M0FNU, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is not None:
        assert gpu.__cubin__


@pytest.mark.parametrize("dtype,expected", [
    # E2M3: steps of 1/8 in [1, 2), 0.5 in [4, 7.5]; E3M2: steps of 1/4 in [1, 2), 4 in [16, 28].
    (cutlass.Float6E2M3FN, [1.0, 1.25, 4.0, 7.5, -7.5, 0.125]),
    (cutlass.Float6E3M2FN, [1.0, 1.25, 4.0, 28.0, -28.0, 0.125]),
])
def test_float6_types_round_to_nearest_even_and_saturate(dtype, expected):
    assert dtype.width == 6
    x = np.array([1.0625, 1.3, 4.1, 100.0, -np.inf, 0.13], np.float32)
    y = np.zeros(6, np.float32)
    cute.compile(round_trip, x, y, dtype, options=EMU)(x, y)
    np.testing.assert_array_equal(y, np.array(expected, np.float32))
    # The GPU's conversions: internal helpers from the same model (no 6-bit cvt on every target).
    gpu = cute.compile(round_trip, x, y, dtype, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is not None:
        assert gpu.__cubin__


@pytest.mark.parametrize("kind,sf,text", [
    ("mxf8", cutlass.Float8E8M0FNU, "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X"),
    ("mxf4", cutlass.Float8E8M0FNU, "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::2X"),
    ("nvf4", cutlass.Float8E4M3FN, "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X"),
])
def test_block_scaled_ptx_for_sm100a_is_accepted_by_nvjitlink(kind, sf, text):
    M, N, K = 128, 64, 128
    A = np.zeros((M, K if kind == "mxf8" else K // 2), np.float32 if kind == "mxf8" else np.uint8)
    B = np.zeros((N, A.shape[1]), A.dtype)
    words, C = np.zeros((128, 8), np.int32), np.zeros((M, N), np.float32)
    gpu = cute.compile(run_scaled_mma, A, B, words, C, kind, sf, M, N, K, 8, options="--gpu-arch sm_100a")
    if gpu.__ptx__ is None:
        pytest.skip("no libNVVM here: PTX was not generated")
    assert text in gpu.__ptx__ and "[%r" in gpu.__ptx__.split(text)[1].split(";")[0]
    assert gpu.__cubin__


def test_scale_factors_outside_the_allocation_are_reported():
    M, N, K = 128, 32, 32
    A, B = np.ones((M, K), np.float32), np.ones((N, K), np.float32)
    words, C = np.zeros((128, 8), np.int32), np.zeros((M, N), np.float32)
    with pytest.raises(cutlass.DSLRuntimeError, match="tcgen05.mma: SFA reaches tensor-memory column 256"):
        cute.compile(run_scaled_mma, A, B, words, C, "mxf8", cutlass.Float8E8M0FNU, M, N, K, 8, "sfa_outside",
                     options=EMU)(A, B, words, C)


def test_gemm_without_the_sfa_field_is_refused():
    M, N, K = 128, 32, 32
    A, B = np.ones((M, K), np.float32), np.ones((N, K), np.float32)
    words, C = np.zeros((128, 8), np.int32), np.zeros((M, N), np.float32)
    with pytest.raises(cutlass.DSLUserCodeError, match="set tiled_mma.set\\(tcgen05.Field.SFA, ptr\\) before cute.gemm"):
        cute.compile(run_scaled_mma, A, B, words, C, "mxf8", cutlass.Float8E8M0FNU, M, N, K, 8, "no_sfa", options=EMU)
