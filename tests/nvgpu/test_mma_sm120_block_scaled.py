"""The SM120 (GeForce Blackwell) warp-level block-scaled MMA atoms (warp.MmaMXF4NVF4Op, MmaMXF4Op,
MmaMXF8Op, MmaMXF8F6F4Op): their thread-value tables against CuTe C++'s mma_traits_sm120.hpp and
the PTX ISA's fragment figures, one mma.sync .block_scale on the emulator against numpy (operands,
scale factors and the lanes that hold them written out here from the PTX ISA), the errors of bad
combinations, and the cubin ptxas / nvJitLink make of it for sm_120a."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._dsl.errors import DSLUserCodeError
import toolchain

warp = cute.nvgpu.warp
F4, E4M3, E5M2, E8M0 = cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, cutlass.Float8E5M2, cutlass.Float8E8M0FNU

# E2M1 codes 0..15 (sign, 2 exponent bits, 1 mantissa bit).
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def e4m3(b):
    """The value of an E4M3 (fn) byte (the PTX ISA's .e4m3; .ue4m3 factors have sign 0)."""
    s, e, m = (b >> 7) & 1, (b >> 3) & 0xF, b & 7
    v = (m / 8) * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if s else v


def tv_positions(tv, rows):
    nthr, nval = cute.size(tv, mode=[0]), cute.size(tv, mode=[1])
    return {(t, v): (tv((t, v)) % rows, tv((t, v)) // rows) for t in range(nthr) for v in range(nval)}


# ---- the atoms' tables --------------------------------------------------------------------------

def test_fp4_atom_layouts_are_the_ptx_m16n8k64_fragments():
    atom = cute.make_mma_atom(warp.MmaMXF4NVF4Op(F4, cutlass.Float32, E4M3))
    assert atom.shape_mnk == (16, 8, 64)
    a, b = tv_positions(atom.tv_layout_A, 16), tv_positions(atom.tv_layout_B, 8)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i in range(32):  # PTX ISA m16n8k64 .e2m1 A: rows g / g+8, columns 8t + (i & 7) (+32 for i >= 16)
            assert a[(lane, i)] == (g if i < 8 or 16 <= i < 24 else g + 8, 8 * t + (i & 7) + (32 if i >= 16 else 0))
        for i in range(16):  # B: row k = 8t + (i & 7) (+32 for i >= 8), column g
            assert b[(lane, i)] == (g, 8 * t + (i & 7) + (32 if i >= 8 else 0))
    # CuTe's SFALayout ((2,2,8),64):((8,0,1),16) and SFBLayout ((4,8),64):((0,1),8): every K value of
    # row m in lanes 4 (m % 8) + m / 8 (+2); of column n in the lanes of quad n.
    sfa, sfb = tv_positions(atom.tv_layout_SFA, 16), tv_positions(atom.tv_layout_SFB, 8)
    for lane in range(32):
        for k in range(64):
            assert sfa[(lane, k)] == ((lane // 4) + 8 * (lane % 2), k)
            assert sfb[(lane, k)] == (lane // 4, k)


def test_fp8_atom_layouts_are_the_m16n8k32_fragments():
    atom = cute.make_mma_atom(warp.MmaMXF8Op(E4M3, cutlass.Float32, E8M0))
    assert atom.shape_mnk == (16, 8, 32) and atom.sf_vec_size == 32
    a = tv_positions(atom.tv_layout_A, 16)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i in range(16):
            assert a[(lane, i)] == (g + (8 if (i // 4) % 2 else 0), 4 * t + i % 4 + (16 if i >= 8 else 0))


def test_block_scaled_ops_check_their_types():
    assert warp.MmaMXF4Op(F4, cutlass.Float32, E8M0).sf_vec_size == 32
    assert warp.MmaMXF4NVF4Op(F4, cutlass.Float32, E4M3).sf_vec_size == 16
    assert "MXF4NVF4" in str(warp.MmaMXF4NVF4Op(F4, cutlass.Float32, E4M3))
    with pytest.raises(DSLUserCodeError, match="sf_dtype must be Float8E8M0FNU"):
        warp.MmaMXF4Op(F4, cutlass.Float32, E4M3)
    with pytest.raises(DSLUserCodeError, match="ab_dtype must be Float4E2M1FN"):
        warp.MmaMXF4NVF4Op(E4M3, cutlass.Float32, E4M3)
    with pytest.raises(DSLUserCodeError, match="acc_dtype must be Float32"):
        warp.MmaMXF8Op(E4M3, cutlass.Float16, E8M0)
    assert (F4, E4M3) in warp.mma.MXF8F6F4_SUPPORTED_PAIRS


# ---- one mma.sync .block_scale on the emulator ----------------------------------------------------

@cute.kernel
def one_block_scaled_mma(a_words: cute.Tensor, b_words: cute.Tensor, sfa: cute.Tensor, sfb: cute.Tensor,
                         c: cute.Tensor, d: cute.Tensor, op: cutlass.Constexpr):
    lane, _, _ = cute.arch.thread_idx()
    atom = cute.make_mma_atom(op)
    ra = cute.make_rmem_tensor((4,), cutlass.Int32)
    rb = cute.make_rmem_tensor((2,), cutlass.Int32)
    rc = cute.make_rmem_tensor((4,), cutlass.Float32)
    for i in cutlass.range_constexpr(4):
        ra[i] = a_words[lane, i]
        rc[i] = c[lane, i]
    for i in cutlass.range_constexpr(2):
        rb[i] = b_words[lane, i]
    nsf = op.shape_mnk[2] // op.sf_vec_size
    # The factors of one atom: K values, each block of sf_vec_size sharing one byte (stride 0).
    bytes_a = cute.make_rmem_tensor((4,), cutlass.Uint8)
    bytes_b = cute.make_rmem_tensor((4,), cutlass.Uint8)
    for j in cutlass.range_constexpr(4):
        bytes_a[j] = sfa[lane, j]
        bytes_b[j] = sfb[lane, j]
    sf_layout = cute.make_layout((op.sf_vec_size, nsf), stride=(0, 1))
    ra_sf = cute.make_tensor(cute.recast_tensor(bytes_a, op.sf_dtype).iterator, sf_layout)
    rb_sf = cute.make_tensor(cute.recast_tensor(bytes_b, op.sf_dtype).iterator, sf_layout)
    fa = cute.recast_tensor(ra, op.a_dtype if op.shape_mnk[2] == 64 else cutlass.Uint8)
    fb = cute.recast_tensor(rb, op.b_dtype if op.shape_mnk[2] == 64 else cutlass.Uint8)
    cute.gemm(atom, rc, [fa, ra_sf], [fb, rb_sf], rc)
    for i in cutlass.range_constexpr(4):
        d[lane, i] = rc[i]


@cute.jit
def run_one_block_scaled_mma(a_words: cute.Tensor, b_words: cute.Tensor, sfa: cute.Tensor, sfb: cute.Tensor,
                             c: cute.Tensor, d: cute.Tensor, op: cutlass.Constexpr):
    one_block_scaled_mma(a_words, b_words, sfa, sfb, c, d, op).launch(grid=(1, 1, 1), block=(32, 1, 1))


def fragments(rng, K, scale_vec, ue8m0, fp8_a=None):
    """Random A (16 x K), B (K x 8), C, scale factors and each lane's registers, per the PTX ISA:
    A / B values of m16n8k64 (E2M1, eight to a register) or m16n8k32 (8-bit, four to a register);
    the factors of row m of A in lane 4 (m % 8) + m / 8, of column n of B in lane 4 n, byte j for
    the j-th K / scale_vec elements."""
    per = 8 if K == 64 else 4
    if per == 8:
        codes_a, codes_b = rng.integers(0, 16, (16, K)), rng.integers(0, 16, (K, 8))
        A, B = E2M1[codes_a], E2M1[codes_b]
    else:  # E4M3 bytes of moderate magnitude (exponent field 5..9), either sign
        def draw(shape):
            return (rng.integers(0, 2, shape) << 7) | (rng.integers(5, 10, shape) << 3) | rng.integers(0, 8, shape)
        codes_a, codes_b = draw((16, K)), draw((K, 8))
        A, B = np.vectorize(e4m3)(codes_a), np.vectorize(e4m3)(codes_b)
    a_words, b_words = np.zeros((32, 4), np.uint32), np.zeros((32, 2), np.uint32)
    bits = 32 // per
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for r in range(4):
            for e in range(per):
                row, col = g + 8 * (r & 1), per * t + e + 4 * per * (r >> 1)
                a_words[lane, r] |= np.uint32(int(codes_a[row, col]) << (bits * e))
        for r in range(2):
            for e in range(per):
                a = per * t + e + 4 * per * r
                b_words[lane, r] |= np.uint32(int(codes_b[a, g]) << (bits * e))
    if ue8m0:
        fa, fb = rng.integers(124, 131, (16, scale_vec)), rng.integers(124, 131, (8, scale_vec))
        va, vb = 2.0 ** (fa - 127), 2.0 ** (fb - 127)
    else:  # positive E4M3 factors 0.5 .. 3.75
        fa, fb = rng.integers(0x30, 0x46, (16, scale_vec)), rng.integers(0x30, 0x46, (8, scale_vec))
        va, vb = np.vectorize(e4m3)(fa), np.vectorize(e4m3)(fb)
    sfa, sfb = np.zeros((32, 4), np.uint8), np.zeros((32, 4), np.uint8)
    for m in range(16):
        sfa[4 * (m % 8) + m // 8, :scale_vec] = fa[m]
    for n in range(8):
        sfb[4 * n, :scale_vec] = fb[n]
    C = rng.standard_normal((16, 8)).astype(np.float32)
    c_lanes = np.zeros((32, 4), np.float32)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i in range(4):
            c_lanes[lane, i] = C[g + 8 * (i >= 2), 2 * t + (i & 1)]
    block = K // scale_vec
    As = A * np.repeat(va, block, axis=1)
    Bs = B * np.repeat(vb, block, axis=1).T
    D = As @ Bs + C
    return a_words.view(np.int32), b_words.view(np.int32), sfa, sfb, c_lanes, D


@pytest.mark.parametrize("name,op,scale_vec,ue8m0", [
    ("nvf4 e4m3", warp.MmaMXF4NVF4Op(F4, cutlass.Float32, E4M3), 4, False),
    ("nvf4 e8m0", warp.MmaMXF4NVF4Op(F4, cutlass.Float32, E8M0), 4, True),
    ("mxf4", warp.MmaMXF4Op(F4, cutlass.Float32, E8M0), 2, True),
    ("mxf8", warp.MmaMXF8Op(E4M3, cutlass.Float32, E8M0), 1, True),
])
def test_block_scaled_mma_on_the_emulator_matches_numpy(name, op, scale_vec, ue8m0):
    rng = np.random.default_rng(7)
    a_words, b_words, sfa, sfb, c, want = fragments(rng, op.shape_mnk[2], scale_vec, ue8m0)
    d = np.zeros((32, 4), np.float32)
    compiled = cute.compile(run_one_block_scaled_mma, a_words, b_words, sfa, sfb, c, d, op,
                            options="--target cpu --gpu-arch sm_120a")
    compiled(a_words, b_words, sfa, sfb, c, d)
    got = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i in range(4):
            got[g + 8 * (i >= 2), 2 * t + (i & 1)] = d[lane, i]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)
    assert np.abs(want).max() > 1


def test_gemm_without_scale_factors_is_refused():
    @cute.jit
    def plain():
        atom = cute.make_mma_atom(warp.MmaMXF4NVF4Op(F4, cutlass.Float32, E4M3))
        a = cute.make_rmem_tensor((32,), F4)
        b = cute.make_rmem_tensor((16,), F4)
        c = cute.make_rmem_tensor((4,), cutlass.Float32)
        cute.gemm(atom, c, a, b, c)

    with pytest.raises(DSLUserCodeError, match="needs its scale factors"):
        cute.compile(plain, options="--target cpu --gpu-arch sm_120a")


@pytest.mark.parametrize("op,instruction", [
    (warp.MmaMXF4NVF4Op(F4, cutlass.Float32, E4M3),
     "mma.sync.aligned.kind::mxf4nvf4.block_scale.scale_vec::4X.m16n8k64.row.col.f32.e2m1.e2m1.f32.ue4m3"),
    (warp.MmaMXF4Op(F4, cutlass.Float32, E8M0),
     "mma.sync.aligned.kind::mxf4.block_scale.scale_vec::2X.m16n8k64.row.col.f32.e2m1.e2m1.f32.ue8m0"),
    (warp.MmaMXF8Op(E5M2, cutlass.Float32, E8M0),
     "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e5m2.e5m2.f32.ue8m0"),
], ids=["mxf4nvf4", "mxf4", "mxf8"])
def test_block_scaled_mma_links_an_sm120a_cubin(op, instruction, monkeypatch):
    toolchain.require_cubin()
    monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")
    rng = np.random.default_rng(1)
    a_words, b_words, sfa, sfb, c, _ = fragments(rng, op.shape_mnk[2], op.shape_mnk[2] // op.sf_vec_size, True)
    d = np.zeros((32, 4), np.float32)
    compiled = cute.compile(run_one_block_scaled_mma, a_words, b_words, sfa, sfb, c, d, op,
                            options="--target cpu --gpu-arch sm_120a")
    ptx = compiled.__ptx__
    assert ".target sm_120a" in ptx and instruction in ptx
    cubin = compiled.__cubin__
    assert cubin is not None and bytes(cubin[:4]) == b"\x7fELF", "no sm_120a cubin"


# ---- ldmatrix of packed Float4E2M1FN into the atom's A fragment ------------------------------------

@cute.kernel
def ldmatrix_fp4_fragment(a_bytes: cute.Tensor, out: cute.Tensor):
    lane, _, _ = cute.arch.thread_idx()
    tiled = cute.make_tiled_mma(warp.MmaMXF4NVF4Op(F4, cutlass.Float32, E4M3))
    smem = cutlass.utils.SmemAllocator()
    s_bytes = smem.allocate_tensor(cutlass.Uint8, cute.make_layout((16, 32), stride=(32, 1)), 128)
    for j in cutlass.range_constexpr(16):  # lane l stores half a row: row l // 2, bytes 16 (l % 2) + j
        s_bytes[lane // 2, 16 * (lane % 2) + j] = a_bytes[lane // 2, 16 * (lane % 2) + j]
    cute.arch.sync_threads()
    sA = cute.recast_tensor(s_bytes, F4)  # (16, 64) values, K contiguous
    thr = tiled.get_slice(lane)
    tCrA = tiled.make_fragment_A(thr.partition_A(sA))
    copy = cute.make_tiled_copy_A(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), F4), tiled)
    thr_copy = copy.get_slice(lane)
    cute.copy(copy, thr_copy.partition_S(sA), thr_copy.retile(tCrA))
    words = cute.recast_tensor(tCrA, cutlass.Int32)
    for i in cutlass.range_constexpr(4):
        out[lane, i] = words[i]


@cute.jit
def run_ldmatrix_fp4_fragment(a_bytes: cute.Tensor, out: cute.Tensor):
    ldmatrix_fp4_fragment(a_bytes, out).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_ldmatrix_of_packed_fp4_fills_the_m16n8k64_a_fragment():
    # LdMatrix8x8x16bOp moving Float4E2M1FN: 16-bit units of four values each; the registers each
    # lane gets are the PTX ISA's m16n8k64 A fragment (eight values to a register, lowest nibble first).
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 16, (16, 64))
    a_bytes = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    out = np.zeros((32, 4), np.int32)
    cute.compile(run_ldmatrix_fp4_fragment, a_bytes, out, options="--target cpu --gpu-arch sm_120a")(a_bytes, out)
    want = np.zeros((32, 4), np.uint32)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for r in range(4):
            for e in range(8):
                want[lane, r] |= np.uint32(int(codes[g + 8 * (r & 1), 8 * t + e + 32 * (r >> 1)]) << (4 * e))
    np.testing.assert_array_equal(out.view(np.uint32), want)
