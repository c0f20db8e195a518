"""SM90 warpgroup MMA (`cute.nvgpu.warpgroup`, wgmma) and `cutlass.utils.hopper_helpers`.

References: the atoms' thread-value layouts against the PTX ISA's wgmma fragment figures (written
out by hand), shared-memory descriptors against values computed by hand from the canonical layouts
of the PTX ISA / CuTe's make_gmma_desc, GEMM kernels on the CPU emulator against numpy, and the
PTX compiled to a cubin for sm_90a (libNVVM + nvJitLink)."""
import re

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import _core
from cutlass._dsl.errors import DSLUserCodeError
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup
from cutlass.utils import LayoutEnum
import toolchain

K_MAJOR, MN_MAJOR = OperandMajorMode.K, OperandMajorMode.MN
ROW, COL = LayoutEnum.ROW_MAJOR, LayoutEnum.COL_MAJOR


def line_of(marker):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# LINE " + marker):
                return n
    raise AssertionError(marker)


# Whether the kernels being traced run on the GPU (set by gpu_run): there, shared memory written by
# plain stores must be made visible to wgmma, which reads through the async proxy.
_TRACING_FOR_GPU = [False]


def fence_stores_for_wgmma():
    fence = getattr(cute.arch, "fence_proxy", None)
    if fence is not None:
        fence("async.shared", space="cta")
    elif _TRACING_FOR_GPU[0]:
        from cutlass._mlir.dialects import llvm
        llvm.inline_asm(None, [], "fence.proxy.async.shared::cta;", "", has_side_effects=True)


# ---- atom tables against the PTX ISA ("wgmma .m64nNk16 register fragments") ------------------

def ptx_d(thread, i):
    """(row, col) of accumulator i of `thread` of the warpgroup: warp w owns rows 16w..16w+15."""
    w, lane = thread // 32, thread % 32
    return (16 * w + lane // 4 + 8 * ((i // 2) % 2), 2 * (lane % 4) + i % 2 + 8 * (i // 4))


def ptx_a_regs(thread, i, per):
    """(row, k) of A value i (A from registers; `per` values per 32-bit register)."""
    w, lane = thread // 32, thread % 32
    return (16 * w + lane // 4 + 8 * ((i // per) % 2), per * (lane % 4) + i % per + 4 * per * (i // (2 * per)))


def tv_positions(tv, rows):
    nthr, nval = cute.size(tv, mode=[0]), cute.size(tv, mode=[1])
    return {(t, v): (tv((t, v)) % rows, tv((t, v)) // rows) for t in range(nthr) for v in range(nval)}


@pytest.mark.parametrize("n", [8, 64, 256])
def test_accumulator_layout_is_the_ptx_fragment(n):
    atom = cute.make_mma_atom(warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, n, 16)))
    assert atom.shape_mnk == (64, n, 16)
    assert cute.size(atom.thr_id) == 128
    c = tv_positions(atom.tv_layout_C, 64)
    assert len(c) == 64 * n
    assert all(c[(t, i)] == ptx_d(t, i) for (t, i) in c)


def test_smem_operands_are_whole_tiles_seen_by_every_thread():
    atom = cute.make_mma_atom(warpgroup.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (64, 128)))
    assert atom.shape_mnk == (64, 128, 16)
    a, b = tv_positions(atom.tv_layout_A, 64), tv_positions(atom.tv_layout_B, 128)
    assert all(a[(t, v)] == (v % 64, v // 64) for (t, v) in a)
    assert all(b[(t, v)] == (v % 128, v // 128) for (t, v) in b)


@pytest.mark.parametrize("dtype,per", [(cutlass.Float16, 2), (cutlass.Float8E4M3FN, 4)])
def test_register_a_layout_is_the_ptx_fragment(dtype, per):
    k = 16 if per == 2 else 32
    if per == 2:
        op = warpgroup.MmaF16BF16Op(dtype, cutlass.Float32, (64, 32), warpgroup.OperandSource.RMEM)
    else:
        op = warpgroup.MmaF8Op(dtype, dtype, cutlass.Float32, (64, 32), warpgroup.OperandSource.RMEM)
    atom = cute.make_mma_atom(op)
    a = tv_positions(atom.tv_layout_A, 64)
    assert len(a) == 64 * k
    assert all(a[(t, i)] == ptx_a_regs(t, i, per) for (t, i) in a)


# ---- shared-memory layout atoms and descriptors ---------------------------------------------

@pytest.mark.parametrize("kind,text", [
    ("MN_INTER", "S<0,4,3> o 0 o (8,8):(1,8)"), ("MN_SW32", "S<1,4,3> o 0 o (16,8):(1,16)"),
    ("MN_SW64", "S<2,4,3> o 0 o (32,8):(1,32)"), ("MN_SW128", "S<3,4,3> o 0 o (64,8):(1,64)"),
    ("K_INTER", "S<0,4,3> o 0 o (8,8):(8,1)"), ("K_SW32", "S<1,4,3> o 0 o (8,16):(16,1)"),
    ("K_SW64", "S<2,4,3> o 0 o (8,32):(32,1)"), ("K_SW128", "S<3,4,3> o 0 o (8,64):(64,1)"),
])
def test_smem_layout_atoms_f16(kind, text):
    assert str(warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind[kind], cutlass.Float16)) == text


def test_smem_layout_atom_8bit_spans_the_same_bytes():
    atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float8E4M3FN)
    assert str(atom) == "S<3,4,3> o 0 o (8,128):(128,1)"


def desc_fields(shape, stride, bits, swizzle, major):
    return _core.cute.gmma_descriptor_fields(cute.make_layout(shape, stride=stride), bits, swizzle,
                                             0 if major is K_MAJOR else 1)


# Hand-computed: f16 (T = 8 elements per 16 bytes); LBO / SBO in 16-byte units; layout type
# INTERLEAVE 0, 128B 1, 64B 2, 32B 3 (bits 62-63); LBO bits 16-29; SBO bits 32-45.
@pytest.mark.parametrize("shape,stride,swizzle,major,expected", [
    # K-major: rows of 128 / 64 / 32 bytes, 8-row groups 1024 / 512 / 256 bytes apart; LBO 1.
    (((8, 8), 16), ((64, 512), 1), 3, K_MAJOR, (1, 1, 64)),
    (((8, 8), 16), ((32, 256), 1), 2, K_MAJOR, (2, 1, 32)),
    (((8, 8), 16), ((16, 128), 1), 1, K_MAJOR, (3, 1, 16)),
    # K-major, no swizzle: 8x16-byte core matrices; 8-row groups 128 bytes apart (SBO 8), the
    # second K chunk 1024 bytes away (LBO 64).
    (((8, 8), (8, 2)), ((8, 64), (1, 512)), 0, K_MAJOR, (0, 64, 8)),
    # MN-major 128B: 64 elements of M per row, K rows 128 bytes apart, 8-row groups of K 1024
    # bytes apart (SBO 64); a second 64-wide atom of N 2048 bytes away (LBO 128).
    ((64, (8, 2)), (1, (64, 512)), 3, MN_MAJOR, (1, 0, 64)),
    (((64, 2), (8, 2)), ((1, 1024), (64, 512)), 3, MN_MAJOR, (1, 128, 64)),
    (((32, 2), (8, 2)), ((1, 512), (32, 256)), 2, MN_MAJOR, (2, 64, 32)),
    # MN-major, no swizzle: 16-byte M chunks 256 bytes apart (SBO 16), 8-row groups of K 128
    # bytes apart (LBO 8).
    (((8, 8), (8, 2)), ((1, 128), (8, 64)), 0, MN_MAJOR, (0, 8, 16)),
])
def test_descriptor_fields_by_hand(shape, stride, swizzle, major, expected):
    layout_type, lbo, sbo, bits = desc_fields(shape, stride, 16, swizzle, major)
    assert (layout_type, lbo, sbo) == expected
    assert bits == (expected[0] << 62) | (expected[2] << 32) | (expected[1] << 16)


def test_descriptor_of_the_helpers_layouts():
    # make_smem_layout_a's K-major 128B layout: the first (64, 16) block of the tile.
    layout = sm90_utils.make_smem_layout_a(ROW, (64, 64, 64), cutlass.Float16, 1)
    assert str(layout.inner) == "S<3,4,3>"
    tile = cute.slice_(layout.outer, (None, None, 0))
    first = cute.composition(tile, cute.make_layout((64, 16)))
    _, lbo, sbo, _ = _core.cute.gmma_descriptor_fields(first, 16, 3, 0)
    assert (lbo, sbo) == (1, 64)


def test_non_canonical_layout_is_rejected():
    # Row-major rows of 16 elements (32 bytes) are not the 16-byte core-matrix rows INTERLEAVE needs.
    with pytest.raises(DSLUserCodeError, match="not a K-major wgmma layout"):
        desc_fields((64, 16), (16, 1), 16, 0, K_MAJOR)
    with pytest.raises(DSLUserCodeError, match="K must span 32 bytes"):
        desc_fields((64, 32), (64, 1), 16, 3, K_MAJOR)


# ---- GEMMs on the emulator ---------------------------------------------------------------------

@cute.kernel
def wgmma_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
                 a_enum: cutlass.Constexpr, b_enum: cutlass.Constexpr, dtype: cutlass.Constexpr,
                 M: cutlass.Constexpr, N: cutlass.Constexpr, K: cutlass.Constexpr,
                 a_regs: cutlass.Constexpr, accumulate_c: cutlass.Constexpr, dynamic_loop: cutlass.Constexpr,
                 acc_dtype: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    nthr = cute.size(tiled_mma)
    sA_layout = sm90_utils.make_smem_layout_a(a_enum, (M, N, K), dtype, 1)
    sB_layout = sm90_utils.make_smem_layout_b(b_enum, (M, N, K), dtype, 1)
    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(dtype, sA_layout.outer, 1024, sA_layout.inner)
    sB = smem.allocate_tensor(dtype, sB_layout.outer, 1024, sB_layout.inner)
    # Plain per-thread copies into the swizzled tiles (converted to the MMA's type).
    for j in cutlass.range_constexpr(M * K // nthr):
        i = tidx + j * nthr
        sA[(i % M, i // M, 0)] = mA[(i % M, i // M)].to(dtype)
    for j in cutlass.range_constexpr(N * K // nthr):
        i = tidx + j * nthr
        sB[(i % N, i // N, 0)] = mB[(i % N, i // N)].to(dtype)
    fence_stores_for_wgmma()
    cute.arch.sync_threads()

    thr_mma = tiled_mma.get_slice(tidx)
    tCsA = thr_mma.partition_A(sA)
    tCsB = thr_mma.partition_B(sB)
    tCrA = tiled_mma.make_fragment_A(tCsA)
    tCrB = tiled_mma.make_fragment_B(tCsB)
    if cutlass.const_expr(a_regs):
        for i in cutlass.range_constexpr(cute.size(tCrA)):
            tCrA[i] = tCsA[i]
    tCgC = thr_mma.partition_C(cute.local_tile(mC, (M, N), (0, 0)))
    acc = cute.make_rmem_tensor(tCgC.shape, acc_dtype)
    for i in cutlass.range_constexpr(cute.size(acc)):
        acc[i] = tCgC[i]
    tiled_mma.set(warpgroup.Field.ACCUMULATE, accumulate_c)
    warpgroup.fence()
    if cutlass.const_expr(dynamic_loop == 2):
        # A dynamic value, as NVIDIA's fmha.py sets it: overwrite at the first k-block only.
        for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll=1):
            tiled_mma.set(warpgroup.Field.ACCUMULATE, kb != 0)
            cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, 0)], tCrB[(None, None, kb, 0)], acc)
    elif cutlass.const_expr(dynamic_loop):
        # A loop traced once: the field set in the first iteration reaches the next ones.
        for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll=1):
            cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, 0)], tCrB[(None, None, kb, 0)], acc)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
    else:
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, 0)], tCrB[(None, None, kb, 0)], acc)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()
    warpgroup.wait_group(0)
    for i in cutlass.range_constexpr(cute.size(acc)):
        tCgC[i] = acc[i]


@cute.jit
def run_wgmma(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, dtype: cutlass.Constexpr, a_enum: cutlass.Constexpr,
              b_enum: cutlass.Constexpr, M: cutlass.Constexpr, N: cutlass.Constexpr, K: cutlass.Constexpr,
              a_regs: cutlass.Constexpr = False, accumulate_c: cutlass.Constexpr = False,
              dynamic_loop: cutlass.Constexpr = False, acc_dtype: cutlass.Constexpr = cutlass.Float32):
    src = warpgroup.OperandSource.RMEM if a_regs else warpgroup.OperandSource.SMEM
    tiled_mma = sm90_utils.make_trivial_tiled_mma(dtype, dtype, a_enum.sm90_mma_major_mode(),
                                                  b_enum.sm90_mma_major_mode(), acc_dtype, (M // 64, 1, 1),
                                                  (64, N), src)
    wgmma_kernel(mA, mB, mC, tiled_mma, a_enum, b_enum, dtype, M, N, K, a_regs, accumulate_c, dynamic_loop,
                 acc_dtype).launch(
        grid=(1, 1, 1), block=(cute.size(tiled_mma), 1, 1))


def operands(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    # Small integers: exact in every input type and in the f32 sums.
    A = rng.integers(-3, 4, (M, K)).astype(np.float32)
    B = rng.integers(-3, 4, (N, K)).astype(np.float32)
    return A, B


@pytest.mark.parametrize("dtype,a_enum,b_enum,M,N", [
    (cutlass.Float16, ROW, ROW, 64, 64),     # K-major A and B, 128B swizzle, one warpgroup
    (cutlass.BFloat16, COL, COL, 64, 128),   # MN-major A and B: two 64-wide swizzle atoms of B's N
    (cutlass.Float16, ROW, COL, 128, 32),    # two warpgroups; B MN-major with a 64B swizzle
    (cutlass.BFloat16, COL, ROW, 128, 64),
])
def test_wgmma_gemm_on_the_emulator(dtype, a_enum, b_enum, M, N):
    K = 64
    A, B = operands(M, N, K)
    C = np.zeros((M, N), np.float32)
    compiled = cute.compile(run_wgmma, A, B, C, dtype, a_enum, b_enum, M, N, K, options="--target cpu")
    compiled(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


@pytest.mark.parametrize("dtype,b_enum", [(cutlass.Float16, COL), (cutlass.Float8E4M3FN, ROW)])
def test_wgmma_register_a_on_the_emulator(dtype, b_enum):
    M, N, K = 64, 32, 64
    A, B = operands(M, N, K, seed=1)
    C = np.zeros((M, N), np.float32)
    compiled = cute.compile(run_wgmma, A, B, C, dtype, ROW, b_enum, M, N, K, True, options="--target cpu")
    compiled(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)
    gpu = cute.compile(run_wgmma, A, B, C, dtype, ROW, b_enum, M, N, K, True)
    toolchain.ptx_of(gpu)
    assert gpu.__cubin__  # nvJitLink accepted the PTX for sm_90a


@pytest.mark.gpu
def test_fp8_register_a_on_the_gpu():
    M, N, K = 64, 32, 64
    A, B = operands(M, N, K, seed=1)
    C = gpu_run(run_wgmma, (A, B, np.zeros((M, N), np.float32)), cutlass.Float8E4M3FN, ROW, ROW, M, N, K, True)
    np.testing.assert_array_equal(C, A @ B.T)


def test_accumulate_field_from_a_dynamic_value():
    M, N, K = 64, 16, 64
    A, B = operands(M, N, K, seed=7)
    C = np.full((M, N), 5.0, np.float32)
    compiled = cute.compile(run_wgmma, A, B, C, cutlass.Float16, ROW, ROW, M, N, K, False, True, 2,
                            options="--target cpu")
    compiled(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


def test_f16_accumulators_on_the_emulator_and_ptx():
    M, N, K = 64, 32, 32
    A, B = operands(M, N, K, seed=5)
    C0 = np.arange(M * N, dtype=np.float32).reshape(M, N) % 5
    C = C0.astype(np.float16)
    args = (cutlass.Float16, ROW, COL, M, N, K, False, True, False, cutlass.Float16)
    compiled = cute.compile(run_wgmma, A, B, C, *args, options="--target cpu")
    compiled(A, B, C)
    np.testing.assert_array_equal(C.astype(np.float32), A @ B.T + C0)
    gpu = cute.compile(run_wgmma, A, B, C, *args)
    toolchain.ptx_of(gpu)
    assert "wgmma.mma_async.sync.aligned.m64n32k16.f16.f16.f16" in gpu.__ptx__
    assert gpu.__cubin__


def test_n256_bf16_ptx_is_accepted_for_sm90a():
    # 128 f32 accumulators per thread in one instruction.
    A, B = operands(64, 256, 64)
    C = np.zeros((64, 256), np.float32)
    compiled = cute.compile(run_wgmma, A, B, C, cutlass.BFloat16, COL, ROW, 64, 256, 64)
    toolchain.ptx_of(compiled)
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in compiled.__ptx__
    assert compiled.__cubin__


def test_wgmma_result_type_is_spelled_once_in_the_nvvm_ir():
    # 128 accumulators: the struct the inline asm returns is named once, not spelled out at each
    # of the 4 x 128 extractvalues (libNVVM parses FA4's forward a third smaller).
    A, B = operands(64, 256, 64)
    C = np.zeros((64, 256), np.float32)
    compiled = cute.compile(run_wgmma, A, B, C, cutlass.BFloat16, COL, ROW, 64, 256, 64, options="--target cpu")
    ir = compiled.nvvm_ir
    literal = "{ " + ", ".join(["float"] * 128) + " }"
    assert ir.count(literal) == 1
    (name,) = re.findall(r"^(%opencute\.struct\.\d+) = type " + re.escape(literal) + "$", ir, re.M)
    assert ir.count(f"call {name} asm sideeffect \"{{ .reg .pred p; setp.ne.b32 p, $") == 4
    assert ir.count(f"extractvalue {name} ") == 4 * 128


def test_descriptors_are_computed_in_32_bits():
    # Only address bits [4, 18) of the shared pointer reach a descriptor: its math on the 64-bit
    # shared pointer costs ptxas a funnel shift and a carry per descriptor in the loop
    # (USHF.R.U64, UIADD3.X). The k-block loop's PTX (one block, `nounroll`) must shift, mask and
    # or in 32 bits, and build each of wgmma's 64-bit descriptors from two 32-bit halves.
    A, B = operands(64, 64, 64)
    C = np.zeros((64, 64), np.float32)
    compiled = cute.compile(run_wgmma, A, B, C, cutlass.Float16, ROW, ROW, 64, 64, 64, False, False, True)
    toolchain.ptx_of(compiled)
    (loop,) = re.findall(r'^(\$L__BB\d+_\d+):\n\t\.pragma "nounroll";\n(.*?)\n\t@%p\d+ bra \t\1;', compiled.__ptx__,
                         re.M | re.S)
    body = loop[1]
    (descs,) = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 \{[^}]*\}, (%rd\d+), (%rd\d+), p", body)
    for desc in descs:
        assert re.search(r"^\tmov\.b64 " + desc + r", \{%r\d+, %r\d+\};$", body, re.M), desc
    wide = re.findall(r"^\t((?:shr|shl|and|or)\.[bsu]64)\b", body, re.M)
    assert wide == []
    narrow = re.findall(r"^\t((?:shr\.u32|and\.b32|or\.b32))\b", body, re.M)
    assert narrow.count("shr.u32") == 2 and narrow.count("and.b32") == 2 and narrow.count("or.b32") == 2


@pytest.mark.parametrize("accumulate,dynamic_loop", [(False, False), (True, False), (False, True), (True, True)])
def test_accumulate_field_adds_or_overwrites_c(accumulate, dynamic_loop):
    M, N, K = 64, 16, 64
    A, B = operands(M, N, K, seed=2)
    C0 = np.arange(M * N, dtype=np.float32).reshape(M, N) % 7
    C = C0.copy()
    compiled = cute.compile(run_wgmma, A, B, C, cutlass.Float16, ROW, ROW, M, N, K, False, accumulate, dynamic_loop,
                            options="--target cpu")
    compiled(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T + (C0 if accumulate else 0))


@cute.kernel
def fp8_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma):
    tidx, _, _ = cute.arch.thread_idx()
    dtype = cutlass.Float8E4M3FN
    sA_layout = sm90_utils.make_smem_layout_a(ROW, (64, 32, 64), dtype, 1)
    sB_layout = sm90_utils.make_smem_layout_b(ROW, (64, 32, 64), dtype, 1)
    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(dtype, sA_layout.outer, 1024, sA_layout.inner)
    sB = smem.allocate_tensor(dtype, sB_layout.outer, 1024, sB_layout.inner)
    for j in cutlass.range_constexpr(64 * 64 // 128):
        i = tidx + j * 128
        sA[(i % 64, i // 64, 0)] = mA[(i % 64, i // 64)].to(dtype)
    for j in cutlass.range_constexpr(32 * 64 // 128):
        i = tidx + j * 128
        sB[(i % 32, i // 32, 0)] = mB[(i % 32, i // 32)].to(dtype)
    fence_stores_for_wgmma()
    cute.arch.sync_threads()
    thr_mma = tiled_mma.get_slice(tidx)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
    tCgC = thr_mma.partition_C(cute.local_tile(mC, (64, 32), (0, 0)))
    acc = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
    tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
    warpgroup.fence()
    # One gemm over both k-blocks: the second accumulates onto the first.
    cute.gemm(tiled_mma, acc, tCrA[(None, None, None, 0)], tCrB[(None, None, None, 0)], acc)
    warpgroup.commit_group()
    warpgroup.wait_group(0)
    for i in cutlass.range_constexpr(cute.size(acc)):
        tCgC[i] = acc[i]


@cute.jit
def run_fp8(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    tiled_mma = sm90_utils.make_trivial_tiled_mma(cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, K_MAJOR, K_MAJOR,
                                                  cutlass.Float32, (1, 1, 1), (64, 32))
    fp8_kernel(mA, mB, mC, tiled_mma).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_fp8_wgmma_on_the_emulator_and_ptx():
    A, B = operands(64, 32, 64, seed=3)
    C = np.zeros((64, 32), np.float32)
    compiled = cute.compile(run_fp8, A, B, C, options="--target cpu")
    compiled(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)
    gpu = cute.compile(run_fp8, A, B, C)
    toolchain.ptx_of(gpu)
    assert "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3" in gpu.__ptx__
    assert gpu.__cubin__  # nvJitLink accepted the PTX for sm_90a


@pytest.mark.parametrize("a_regs,b_enum,instruction,operands_text", [
    (False, COL, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "p, 1, 1, 0, 1;"),
    (True, ROW, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "p, 1, 1, 0;"),
])
def test_ptx_is_accepted_for_sm90a(a_regs, b_enum, instruction, operands_text):
    A, B = operands(64, 64, 64)
    C = np.zeros((64, 64), np.float32)
    compiled = cute.compile(run_wgmma, A, B, C, cutlass.Float16, ROW, b_enum, 64, 64, 64, a_regs)
    toolchain.ptx_of(compiled)
    ptx = compiled.__ptx__
    lines = [line for line in ptx.splitlines() if instruction in line]
    assert len(lines) == 4 and all(line.rstrip().endswith(operands_text + " }") for line in lines)
    for text in ("wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;"):
        assert text in ptx
    assert compiled.__cubin__  # nvJitLink accepted the PTX for sm_90a


# ---- misuse ------------------------------------------------------------------------------------------

def test_op_constraints_raise():
    with pytest.raises(DSLUserCodeError, match="acc_dtype must be Float32 when ab_dtype is BFloat16"):
        warpgroup.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float16, (64, 64, 16))
    with pytest.raises(DSLUserCodeError, match="N a multiple of 8 in"):
        warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 12, 16))
    with pytest.raises(DSLUserCodeError, match="instruction_shape must be"):
        warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 64, 16))
    with pytest.raises(DSLUserCodeError, match="8-bit operands must be K-major"):
        warpgroup.MmaF8Op(cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, cutlass.Float32, (64, 64), a_major_mode=MN_MAJOR)
    with pytest.raises(DSLUserCodeError, match="from registers .* must be K-major"):
        warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 64), warpgroup.OperandSource.RMEM, MN_MAJOR)
    with pytest.raises(TypeError, match="differ"):
        sm90_utils.make_trivial_tiled_mma(cutlass.Float16, cutlass.BFloat16, K_MAJOR, K_MAJOR, cutlass.Float32,
                                          (1, 1, 1), (64, 64))


@cute.jit
def make_op_for_arch():
    warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 64, 16))  # LINE arch


def test_wgmma_for_sm80_raises_at_the_users_line():
    with pytest.raises(DSLUserCodeError, match="needs sm_90a, but the program is compiled for sm_80") as info:
        cute.compile(make_op_for_arch, options="--gpu-arch sm_80")
    assert info.value.line == line_of("arch")


@cute.kernel
def misuse_kernel(mA: cute.Tensor, tiled_mma: cute.TiledMma, which: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    layout = sm90_utils.make_smem_layout_a(ROW, (64, 64, 64), cutlass.Float16, 1)
    thr_mma = tiled_mma.get_slice(tidx)
    if cutlass.const_expr(which == "dtype"):
        s32 = smem.allocate_tensor(cutlass.Float32, layout.outer, 1024, layout.inner)
        tiled_mma.make_fragment_A(thr_mma.partition_A(s32))  # LINE dtype
    if cutlass.const_expr(which == "composed"):
        sc = smem.allocate_tensor(cutlass.Float16, layout, 1024)
        tiled_mma.make_fragment_A(thr_mma.partition_A(sc))  # LINE composed
    if cutlass.const_expr(which == "gmem"):
        tiled_mma.make_fragment_A(thr_mma.partition_A(cute.local_tile(mA, (64, 64), (0, 0))))  # LINE gmem
    if cutlass.const_expr(which in ("acc_dtype", "acc_shape")):
        sA = smem.allocate_tensor(cutlass.Float16, layout.outer, 1024, layout.inner)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sA))
        acc_dtype = cutlass.Float16 if which == "acc_dtype" else cutlass.Float32
        acc_shape = thr_mma.partition_shape_C((64, 64)) if which == "acc_dtype" else (16, 1, 1)
        acc = cute.make_rmem_tensor(acc_shape, acc_dtype)
        if cutlass.const_expr(which == "acc_dtype"):
            cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, 0)], tCrB[(None, None, 0, 0)], acc)  # LINE acc_dtype
        else:
            cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, 0)], tCrB[(None, None, 0, 0)], acc)  # LINE acc_shape


@cute.jit
def run_misuse(mA: cute.Tensor, which: cutlass.Constexpr):
    tiled_mma = sm90_utils.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K_MAJOR, K_MAJOR,
                                                  cutlass.Float32, (1, 1, 1), (64, 64))
    misuse_kernel(mA, tiled_mma, which).launch(grid=(1, 1, 1), block=(128, 1, 1))


@pytest.mark.parametrize("which,match", [
    ("dtype", "holds Float32 but the MMA atom takes Float16"),
    ("composed", "swizzle must be on the pointer"),
    ("gmem", "from shared memory"),
    ("acc_dtype", "operand C holds Float16 but the MMA atom takes Float32"),
    ("acc_shape", "has 16 values; the MMA atom takes 32"),
])
def test_fragment_misuse_raises_at_the_users_line(which, match):
    A = np.zeros((64, 64), np.float16)
    with pytest.raises(DSLUserCodeError, match=match) as info:
        cute.compile(run_misuse, A, which, options="--target cpu")
    assert info.value.line == line_of(which)


# ---- hopper_helpers --------------------------------------------------------------------------------

def test_get_smem_layout_atom_picks_the_widest_swizzle():
    f16, f8 = cutlass.Float16, cutlass.Float8E4M3FN
    kinds = warpgroup.SmemLayoutAtomKind
    assert sm90_utils.get_smem_layout_atom(ROW, f16, 64) == kinds.K_SW128
    assert sm90_utils.get_smem_layout_atom(ROW, f16, 32) == kinds.K_SW64
    assert sm90_utils.get_smem_layout_atom(COL, f16, 16) == kinds.MN_SW32
    assert sm90_utils.get_smem_layout_atom(COL, f16, 8) == kinds.MN_INTER
    assert sm90_utils.get_smem_layout_atom(ROW, f8, 128) == kinds.K_SW128


def test_staged_smem_layouts():
    a = sm90_utils.make_smem_layout_a(ROW, (128, 256, 64), cutlass.Float16, 4)
    # K-major 128B atoms (8,64):(64,1) stacked along M, then stages.
    assert str(a.inner) == "S<3,4,3>" and cute.size(a.outer) == 128 * 64 * 4
    assert [a.outer((m, k, s)) for m, k, s in ((1, 0, 0), (8, 0, 0), (0, 1, 0), (0, 0, 1))] == [64, 512, 1, 8192]
    b = sm90_utils.make_smem_layout_b(COL, (128, 256, 64), cutlass.Float16, 4)
    assert str(b.inner) == "S<3,4,3>" and cute.size(b.outer) == 256 * 64 * 4
    # MN-major: N is contiguous.
    assert b.outer((1, 0, 0)) == 1
    epi = sm90_utils.make_smem_layout_epi(cutlass.Float16, ROW, (64, 32), 4)
    assert str(epi.inner) == "S<2,4,3>" and cute.size(epi.outer) == 64 * 32 * 4


def test_epilogue_tile_and_store_op():
    assert sm90_utils.compute_tile_shape_or_override((128, 256, 64), cutlass.Float16, is_cooperative=True) == (128, 32)
    assert sm90_utils.compute_tile_shape_or_override((64, 256, 64), cutlass.Float16) == (64, 32)
    assert sm90_utils.compute_tile_shape_or_override((64, 256, 64), cutlass.Float8E4M3FN) == (64, 64)
    assert sm90_utils.compute_tile_shape_or_override((64, 16, 64), cutlass.Float16, epi_tile_override=(8, 8)) == (8, 8)
    stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), cutlass.Float16)
    stmatrix_t = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(True, 4), cutlass.Float16)
    universal = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
    assert str(sm90_utils.sm90_get_smem_store_op(ROW, cutlass.Float16, cutlass.Float32)) == str(stmatrix)
    assert str(sm90_utils.sm90_get_smem_store_op(COL, cutlass.Float16, cutlass.Float32)) == str(stmatrix_t)
    assert str(sm90_utils.get_smem_store_op(ROW, cutlass.Float32, cutlass.Float32)) == str(universal)


def test_cutlass_utils_sm90_is_the_same_module_surface():
    import cutlass.utils.sm90 as sm90
    assert sm90.make_trivial_tiled_mma is sm90_utils.make_trivial_tiled_mma
    assert warpgroup.OperandMajorMode is cute.nvgpu.OperandMajorMode is cutlass.utils.OperandMajorMode


# ---- a kernel shaped like NVIDIA's dense_gemm.py (no TMA / pipelines) -------------------------------
# Two warpgroups (cooperative 128 x 128 tile, atom layout (2,1,1)), a dynamic k loop over a ring of
# two smem stages, the k-block loop unrolled with ACCUMULATE set inside it, and the stmatrix
# epilogue over the warpgroup accumulators.

TM, TN, TK = 128, 128, 64
STAGES = 2


@cute.kernel
def cooperative_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma, a_s: cute.ComposedLayout,
      b_s: cute.ComposedLayout, epi_s: cute.ComposedLayout, epi_tile: cutlass.Constexpr, c_layout: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    smem = cutlass.utils.SmemAllocator()
    sA_raw = smem.allocate_tensor(cutlass.Float16, a_s.outer, 1024, a_s.inner)
    sB = smem.allocate_tensor(cutlass.Float16, b_s.outer, 1024, b_s.inner)
    sA = sA_raw
    sC_ptr = cute.recast_ptr(sA.iterator, epi_s.inner, dtype=cutlass.Float16)
    sC = cute.make_tensor(sC_ptr, epi_s.outer)
    gA = cute.local_tile(mA, (TM, TK), (0, None))     # (TM, TK, k)
    gB = cute.local_tile(mB, (TN, TK), (0, None))
    gC = cute.local_tile(mC, (TM, TN), (0, 0))
    wg = cute.arch.make_warp_uniform(tidx // 128)
    thr_mma = tiled_mma.get_slice(cute.make_layout(2, stride=128)(wg))
    tCgC = thr_mma.partition_C(gC)
    tCsA = thr_mma.partition_A(sA)
    tCsB = thr_mma.partition_B(sB)
    tCrA = tiled_mma.make_fragment_A(tCsA)
    tCrB = tiled_mma.make_fragment_B(tCsB)
    acc = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
    k_tiles = cute.size(gA, mode=[2])
    tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
    for kt in cutlass.range(k_tiles, unroll=1):
        stage = kt % STAGES
        for j in cutlass.range_constexpr(TM * TK // 256):
            i = tidx + j * 256
            sA[(i % TM, i // TM, stage)] = gA[(i % TM, i // TM, kt)]
        for j in cutlass.range_constexpr(TN * TK // 256):
            i = tidx + j * 256
            sB[(i % TN, i // TN, stage)] = gB[(i % TN, i // TN, kt)]
        fence_stores_for_wgmma()
        cute.arch.sync_threads()
        warpgroup.fence()
        for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
            cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, stage)], tCrB[(None, None, kb, stage)], acc)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        warpgroup.commit_group()
        warpgroup.wait_group(0)
        cute.arch.sync_threads()
    # The epilogue of NVIDIA's dense_gemm.py: stmatrix through make_tiled_copy_C_atom, retiled accumulators.
    copy_atom_r2s = sm90_utils.sm90_get_smem_store_op(c_layout, elem_ty_d=cutlass.Float16, elem_ty_acc=cutlass.Float32)
    copy_atom_C = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(c_layout.is_m_major_c(), 4), cutlass.Float16)
    tiled_copy_C_Atom = cute.make_tiled_copy_C_atom(copy_atom_C, tiled_mma)
    tiled_copy_r2s = cute.make_tiled_copy_S(copy_atom_r2s, tiled_copy_C_Atom)
    thr_copy_r2s = tiled_copy_r2s.get_slice(tidx)
    tRS_sD = thr_copy_r2s.partition_D(sC)
    tRS_rAcc = tiled_copy_r2s.retile(acc)
    rD_shape = cute.shape(thr_copy_r2s.partition_S(sC))
    tRS_rD_layout = cute.make_layout(rD_shape[:3])
    tRS_rD = cute.make_rmem_tensor_like(tRS_rD_layout, cutlass.Float32)
    size_tRS_rD = cute.size(tRS_rD)
    tCgC_epi = cute.zipped_divide(gC, epi_tile)
    epi_tile_num = cute.size(tCgC_epi, mode=[1])
    epi_tile_shape = tCgC_epi.shape[1]
    epi_tile_layout = cute.make_layout(epi_tile_shape, stride=(epi_tile_shape[1], 1))
    for epi_idx in cutlass.range_constexpr(epi_tile_num):
        for epi_v in cutlass.range_constexpr(size_tRS_rD):
            tRS_rD[epi_v] = tRS_rAcc[epi_idx * size_tRS_rD + epi_v]
        tRS_rD_out = cute.make_rmem_tensor_like(tRS_rD_layout, cutlass.Float16)
        tRS_rD_out.store(tRS_rD.load().to(cutlass.Float16))
        epi_buffer = epi_idx % cute.size(tRS_sD, mode=[3])
        cute.copy(tiled_copy_r2s, tRS_rD_out, tRS_sD[(None, None, None, epi_buffer)])
        cute.arch.sync_threads()
        gmem_coord = epi_tile_layout.get_hier_coord(epi_idx)
        gtile = tCgC_epi[(None, gmem_coord)]
        stile = sC[(None, None, epi_buffer)]
        for j in cutlass.range_constexpr(cute.size(gtile) // 256):
            i = tidx + j * 256
            gtile[i] = stile[i]
        cute.arch.sync_threads()

@cute.jit
def run_cooperative(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    a_layout = LayoutEnum.from_tensor(mA)
    b_layout = LayoutEnum.from_tensor(mB)
    c_layout = LayoutEnum.from_tensor(mC)
    tiled_mma = sm90_utils.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, a_layout.sm90_mma_major_mode(),
        b_layout.sm90_mma_major_mode(), cutlass.Float32, (2, 1, 1), tiler_mn=(64, TN))
    tile = (TM, TN, TK)
    epi_tile = sm90_utils.compute_tile_shape_or_override(tile, cutlass.Float16, is_cooperative=True)
    a_s = sm90_utils.make_smem_layout_a(a_layout, tile, cutlass.Float16, STAGES)
    b_s = sm90_utils.make_smem_layout_b(b_layout, tile, cutlass.Float16, STAGES)
    epi_s = sm90_utils.make_smem_layout_epi(cutlass.Float16, c_layout, epi_tile, 2)
    cooperative_kernel(mA, mB, mC, tiled_mma, a_s, b_s, epi_s, epi_tile, c_layout).launch(grid=(1, 1, 1), block=(256, 1, 1))



@pytest.mark.parametrize("a_major,b_major", [("k", "k"), ("m", "n")])
def test_dense_gemm_shaped_kernel_on_the_emulator(a_major, b_major):
    M, N, K = TM, TN, 192
    A, B = operands(M, N, K, seed=4)
    A, B = A.astype(np.float16), B.astype(np.float16)
    A = A if a_major == "k" else np.asfortranarray(A)
    B = B if b_major == "k" else np.asfortranarray(B)
    C = np.zeros((M, N), np.float16)
    compiled = cute.compile(run_cooperative, A, B, C, options="--target cpu")
    compiled(A, B, C)
    np.testing.assert_array_equal(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32).T)


def test_layout_coordinates_of_an_index():
    layout = cute.make_layout((2, 4), stride=(4, 1))
    assert [layout.get_hier_coord(i) for i in (0, 1, 5, 7)] == [(0, 0), (0, 1), (1, 1), (1, 3)]
    nested = cute.make_layout(((2, 2), 3), stride=((1, 6), 2))
    assert nested.get_hier_coord(9) == ((1, 1), 1)
    assert nested.get_flat_coord(9) == (3, 1)
    assert nested.get_1d_coord(9) == 7


# ---- shared memory still being read by a wgmma in flight ---------------------------------------------

@cute.kernel
def early_overwrite_kernel(mA: cute.Tensor, tiled_mma: cute.TiledMma, wait_first: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    layout = sm90_utils.make_smem_layout_a(ROW, (64, 16, 16), cutlass.Float16, 1)
    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(cutlass.Float16, layout.outer, 1024, layout.inner)
    sB = smem.allocate_tensor(cutlass.Float16, layout.outer, 1024, layout.inner)
    for j in cutlass.range_constexpr(64 * 16 // 128):
        sA[tidx + j * 128] = cutlass.Float16(1.0)
        sB[tidx + j * 128] = cutlass.Float16(1.0)
    fence_stores_for_wgmma()
    cute.arch.sync_threads()
    thr_mma = tiled_mma.get_slice(tidx)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
    acc = cute.make_rmem_tensor(thr_mma.partition_shape_C((64, 64)), cutlass.Float32)
    tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
    warpgroup.fence()
    cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, 0)], tCrB[(None, None, 0, 0)], acc)
    warpgroup.commit_group()
    if cutlass.const_expr(wait_first):
        warpgroup.wait_group(0)
        cute.arch.sync_threads()  # every warp's wgmma has read sB
    sB[tidx] = cutlass.Float16(2.0)  # reuses the buffer the wgmma reads
    mA[tidx] = acc[0]


@cute.jit
def run_early_overwrite(mA: cute.Tensor, wait_first: cutlass.Constexpr):
    tiled_mma = sm90_utils.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K_MAJOR, K_MAJOR,
                                                  cutlass.Float32, (1, 1, 1), (64, 64))
    early_overwrite_kernel(mA, tiled_mma, wait_first).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_overwriting_smem_before_wait_group_is_reported():
    out = np.zeros(128, np.float32)
    compiled = cute.compile(run_early_overwrite, out, False, options="--target cpu")
    with pytest.raises(cutlass.DSLRuntimeError, match="that a wgmma.* may still be reading: its group has not been "
                                                      "retired by warpgroup.wait_group"):
        compiled(out)
    compiled = cute.compile(run_early_overwrite, out, True, options="--target cpu")
    compiled(out)
    assert (out == 16.0).all()  # K = 16 products of ones


# ---- the same kernels on the H100 (run by the lead; wgmma needs sm_90a) -------------------------------

def gpu_run(fn, arrays, *static):
    """Runs `fn` on the GPU over torch copies of `arrays` (keeping column-major ones column-major);
    returns the last array's result as numpy."""
    torch = pytest.importorskip("torch")

    def to_device(x):
        t = torch.from_numpy(np.ascontiguousarray(x.T) if x.flags.f_contiguous and not x.flags.c_contiguous else x)
        t = t.cuda()
        return t.T if x.flags.f_contiguous and not x.flags.c_contiguous else t

    ts = [to_device(x) for x in arrays]
    _TRACING_FOR_GPU[0] = True
    try:
        compiled = cute.compile(fn, *ts, *static)
    finally:
        _TRACING_FOR_GPU[0] = False
    compiled(*ts)
    torch.cuda.synchronize()
    return ts[-1].cpu().numpy()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,a_enum,b_enum,M,N", [
    (cutlass.Float16, ROW, ROW, 64, 64), (cutlass.BFloat16, COL, COL, 64, 128), (cutlass.Float16, ROW, COL, 128, 32),
    (cutlass.BFloat16, COL, ROW, 128, 64), (cutlass.BFloat16, ROW, ROW, 128, 256), (cutlass.Float16, COL, COL, 64, 256),
])
def test_wgmma_gemm_on_the_gpu(dtype, a_enum, b_enum, M, N):
    K = 64
    A, B = operands(M, N, K)
    A = A if a_enum is ROW else np.asfortranarray(A)
    B = B if b_enum is ROW else np.asfortranarray(B)
    C = gpu_run(run_wgmma, (A, B, np.zeros((M, N), np.float32)), dtype, a_enum, b_enum, M, N, K)
    np.testing.assert_array_equal(C, A @ B.T)


@pytest.mark.gpu
@pytest.mark.parametrize("a_regs,accumulate,dynamic_loop,acc_dtype", [
    (True, False, False, cutlass.Float32), (False, True, False, cutlass.Float32), (False, False, True, cutlass.Float32),
    (False, True, True, cutlass.Float32), (False, True, False, cutlass.Float16), (False, False, 2, cutlass.Float32),
])
def test_wgmma_variants_on_the_gpu(a_regs, accumulate, dynamic_loop, acc_dtype):
    M, N, K = 64, 32, 64
    A, B = operands(M, N, K, seed=6)
    np_acc = np.float16 if acc_dtype is cutlass.Float16 else np.float32
    C0 = (np.arange(M * N).reshape(M, N) % 5).astype(np_acc)
    C = gpu_run(run_wgmma, (A, B, C0.copy()), cutlass.Float16, ROW, COL, M, N, K, a_regs, accumulate, dynamic_loop,
                acc_dtype)
    added = accumulate and dynamic_loop != 2
    np.testing.assert_array_equal(C.astype(np.float32), A @ B.T + (C0.astype(np.float32) if added else 0))


@pytest.mark.gpu
def test_fp8_wgmma_on_the_gpu():
    A, B = operands(64, 32, 64, seed=3)
    C = gpu_run(run_fp8, (A, B, np.zeros((64, 32), np.float32)))
    np.testing.assert_array_equal(C, A @ B.T)


@pytest.mark.gpu
@pytest.mark.parametrize("a_major,b_major", [("k", "k"), ("m", "n")])
def test_dense_gemm_shaped_kernel_on_the_gpu(a_major, b_major):
    M, N, K = TM, TN, 192
    A, B = operands(M, N, K, seed=4)
    A, B = A.astype(np.float16), B.astype(np.float16)
    A = A if a_major == "k" else np.asfortranarray(A)
    B = B if b_major == "k" else np.asfortranarray(B)
    C = gpu_run(run_cooperative, (A, B, np.zeros((M, N), np.float16)))
    np.testing.assert_array_equal(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32).T)


@cute.kernel
def diverged_kernel(mA: cute.Tensor, tiled_mma: cute.TiledMma):
    tidx, _, _ = cute.arch.thread_idx()
    layout = sm90_utils.make_smem_layout_a(ROW, (64, 16, 16), cutlass.Float16, 1)
    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(cutlass.Float16, layout.outer, 1024, layout.inner)
    thr_mma = tiled_mma.get_slice(tidx)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sA))
    acc = cute.make_rmem_tensor(thr_mma.partition_shape_C((64, 64)), cutlass.Float32)
    acc.fill(0.0)
    if tidx % 32 < 16:
        cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, 0)], tCrB[(None, None, 0, 0)], acc)
    mA[tidx] = acc[0]


@cute.jit
def run_diverged(mA: cute.Tensor):
    tiled_mma = sm90_utils.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K_MAJOR, K_MAJOR,
                                                  cutlass.Float32, (1, 1, 1), (64, 64))
    diverged_kernel(mA, tiled_mma).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_wgmma_in_a_diverged_warp_is_reported_by_the_emulator():
    out = np.zeros(128, np.float32)
    compiled = cute.compile(run_diverged, out, options="--target cpu")
    with pytest.raises(cutlass.DSLRuntimeError, match="wgmma.mma_async executed by a partial warp"):
        compiled(out)


def test_remembered_descriptor_tiles_stay_keyed_by_layout_swizzle_and_major():
    # Tiles that passed are remembered per process (mma_sm90.cpp); asking again, or for a tile one
    # stride, the swizzle or the major mode away, must give what a fresh check gives.
    tile = (((8, 8), 16), ((64, 512), 1))
    for _ in range(2):
        assert desc_fields(*tile, 16, 3, K_MAJOR)[:3] == (1, 1, 64)
    # 8-row groups 1024 elements (2048 bytes) apart instead of 512: SBO 128 sixteen-byte units, not 64.
    assert desc_fields(((8, 8), 16), ((64, 1024), 1), 16, 3, K_MAJOR)[:3] == (1, 1, 128)
    with pytest.raises(DSLUserCodeError, match="not a K-major wgmma layout with swizzle S<2,4,3>"):
        desc_fields(*tile, 16, 2, K_MAJOR)
    with pytest.raises(DSLUserCodeError, match="not a MN-major wgmma layout"):
        desc_fields(*tile, 16, 3, MN_MAJOR)
    # A rejected tile stays rejected.
    for _ in range(2):
        with pytest.raises(DSLUserCodeError, match="element \\(0,1\\) is at offset 2"):
            desc_fields(((8, 8), 16), ((64, 512), 2), 16, 3, K_MAJOR)
