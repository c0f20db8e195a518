"""The smaller pieces NVIDIA's Ampere examples use: FP8 numeric types and conversions,
cutlass.utils.LayoutEnum and tensor_helpers, pipeline.NamedBarrier, the Float32 fast paths of
cute.arch, Float32.inf / .zero and loop unroll hints. Kernels run on the CPU emulator and are
checked against numpy models written here."""
import math
import warnings

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass import Float32, Int32
import toolchain


# ---- an independent model of the FP8 formats ---------------------------------------------------

def fp8_values(exp_bits, man_bits, bias, has_inf):
    """Value of every code 0..255 (NaN where the format has one), from the format's definition."""
    vals = []
    for code in range(256):
        s, e, m = code >> 7, (code >> man_bits) & ((1 << exp_bits) - 1), code & ((1 << man_bits) - 1)
        top = (1 << exp_bits) - 1
        if has_inf and e == top:
            v = math.inf if m == 0 else math.nan
        elif not has_inf and e == top and m == (1 << man_bits) - 1:
            v = math.nan
        elif e == 0:
            v = m * 2.0 ** (1 - bias - man_bits)
        else:
            v = (1 + m / 2 ** man_bits) * 2.0 ** (e - bias)
        vals.append(-v if s else v)
    return vals


E4M3 = fp8_values(4, 3, 7, False)
E5M2 = fp8_values(5, 2, 15, True)


def fp8_encode(x, table):
    """Round to nearest (ties to the even code), saturating to the largest finite value; NaN -> 0x7F."""
    if math.isnan(x):
        return 0x7F
    finite = [(v, c) for c, v in enumerate(table) if math.isfinite(v)]
    vmax = max(v for v, _ in finite)
    if abs(x) >= vmax:
        return [c for v, c in finite if v == math.copysign(vmax, x)][0]
    best = None
    for v, c in finite:
        if v == 0 and (c >> 7) != (1 if math.copysign(1, x) < 0 else 0):
            continue  # zero keeps the sign of x
        d = abs(v - x)
        if best is None or d < best[0] or (d == best[0] and (c & 1) == 0 and (best[1] & 1) == 1):
            best = (d, c)
    return best[1]


@cute.kernel
def fp8_kernel(src: cute.Tensor, codes4: cute.Tensor, back4: cute.Tensor, codes5: cute.Tensor, back5: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    i = b * 64 + t
    if i < cute.size(src):
        x = src[i]
        e4 = x.to(cutlass.Float8E4M3FN)
        e5 = x.to(cutlass.Float8E5M2)
        codes4[i] = e4.bitcast(cutlass.Uint8)
        codes5[i] = e5.bitcast(cutlass.Uint8)
        back4[i] = e4.to(Float32)
        back5[i] = e5.to(Float32)


@cute.jit
def fp8_host(src: cute.Tensor, codes4: cute.Tensor, back4: cute.Tensor, codes5: cute.Tensor, back5: cute.Tensor):
    fp8_kernel(src, codes4, back4, codes5, back5).launch(grid=((cute.size(src) + 63) // 64, 1, 1),
                                                         block=(64, 1, 1))


def test_fp8_conversions_round_to_nearest_even_and_saturate():
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, 1.0, -1.5, 448.0, 449.0, 464.0, 480.0, 1e9, -1e9, np.inf, -np.inf, np.nan,
               57344.0, 61440.0, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, 1e-30,
               0.1, 0.3, 1.0625, 1.1875, 240.0, 248.0, -0.0009765625]
    # every value halfway between two neighbouring codes tests ties-to-even
    halfway = [(a + b) / 2 for t in (E4M3, E5M2) for a, b in zip(t[:0x7E], t[1:0x7F]) if math.isfinite(b)]
    x = np.array(special + halfway + list(rng.normal(0, 30, 300)) + list(rng.normal(0, 0.02, 100)),
                 dtype=np.float32)
    outs = [np.zeros(x.size, np.uint8), np.zeros(x.size, np.float32), np.zeros(x.size, np.uint8),
            np.zeros(x.size, np.float32)]
    cute.compile(fp8_host, x, *outs, options="--target cpu")(x, *outs)
    codes4, back4, codes5, back5 = outs
    for codes, back, table in ((codes4, back4, E4M3), (codes5, back5, E5M2)):
        want = np.array([fp8_encode(float(v), table) for v in x], dtype=np.uint8)
        bad = np.nonzero(codes != want)[0]
        assert bad.size == 0, [(float(x[i]), int(codes[i]), int(want[i])) for i in bad[:8]]
        np.testing.assert_array_equal(back, np.array([table[c] for c in want], dtype=np.float32))


def test_fp8_dtype_names_and_properties():
    assert cutlass.Float8E4M3FN.width == 8 and cutlass.Float8E5M2.width == 8
    assert cutlass.Float8E4M3FN.is_float
    assert cutlass.dtype("Float8E4M3FN") is cutlass.Float8E4M3FN
    assert utils.is_fp8_dtype(cutlass.Float8E5M2) and not utils.is_fp8_dtype(cutlass.Float16)


def test_create_cute_tensor_for_fp8_converts_the_f32_source():
    src = np.array([[1.0, -2.5, 500.0], [0.1, -1e-3, 3.0]], dtype=np.float32)
    storage = np.zeros(src.shape, dtype=np.uint8)
    t = utils.tensor_helpers.create_cute_tensor_for_fp8(storage, cutlass.Float8E4M3FN, 1, source_f32_tensor=src)
    assert t.element_type is cutlass.Float8E4M3FN
    want = np.array([[fp8_encode(float(v), E4M3) for v in row] for row in src], dtype=np.uint8)
    np.testing.assert_array_equal(storage, want)


# ---- LayoutEnum ------------------------------------------------------------------------------------

def test_layout_enum_from_tensor():
    seen = {}

    @cute.jit
    def f(row: cute.Tensor, col: cute.Tensor):
        seen["row"] = utils.LayoutEnum.from_tensor(row)
        seen["col"] = utils.LayoutEnum.from_tensor(col)

    row = np.zeros((2, 4, 8), np.float32).transpose(1, 2, 0)  # (M, K, L) with K contiguous
    col = np.zeros((2, 8, 4), np.float32).transpose(2, 1, 0)  # (M, K, L) with M contiguous
    f(row, col)
    assert seen == {"row": utils.LayoutEnum.ROW_MAJOR, "col": utils.LayoutEnum.COL_MAJOR}
    assert utils.LayoutEnum.ROW_MAJOR.mma_major_mode() == utils.OperandMajorMode.K
    assert utils.LayoutEnum.COL_MAJOR.mma_major_mode() == utils.OperandMajorMode.MN
    assert utils.LayoutEnum.COL_MAJOR.is_m_major_c() and utils.LayoutEnum.ROW_MAJOR.is_n_major_c()
    assert utils.LayoutEnum.ROW_MAJOR.value == "row_major"


def test_layout_enum_rejects_a_tensor_without_unit_stride():
    @cute.jit
    def f(t: cute.Tensor):
        utils.LayoutEnum.from_tensor(t)

    with pytest.raises(ValueError, match="neither row- nor column-major"):
        f(np.zeros((4, 6), np.float32)[:, ::2])


# ---- NamedBarrier ----------------------------------------------------------------------------------

@cute.kernel
def named_barrier_kernel(out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    smem = cute.make_tensor(cute.arch.alloc_smem(Int32, 128), cute.make_layout(128))
    warp = t // 32
    # warps 2 and 3 produce and only arrive at barrier 2; warps 0 and 1 consume after waiting on it.
    if warp >= 2:
        smem[t] = t * 10
        pipeline.NamedBarrier(barrier_id=2, num_threads=128).arrive()
    else:
        pipeline.NamedBarrier(barrier_id=2, num_threads=128).arrive_and_wait()
        out[t] = smem[t + 64]
    # warps 0 and 1 alone synchronise on barrier 1 (64 threads)
    if warp < 2:
        smem[t] = t + 1
        pipeline.NamedBarrier(barrier_id=1, num_threads=64).arrive_and_wait()
        out[t + 128] = smem[63 - t]


@cute.jit
def named_barrier_host(out: cute.Tensor):
    named_barrier_kernel(out).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_named_barriers_on_the_emulator():
    out = np.full(256, -1, dtype=np.int32)
    cute.compile(named_barrier_host, out, options="--target cpu")(out)
    np.testing.assert_array_equal(out[:64], (np.arange(64) + 64) * 10)
    np.testing.assert_array_equal(out[128:192], 64 - np.arange(64))
    assert (out[64:128] == -1).all() and (out[192:] == -1).all()


@cute.kernel
def named_deadlock_kernel(out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    if t < 32:
        pipeline.NamedBarrier(barrier_id=3, num_threads=64).arrive_and_wait()
    out[t] = t


@cute.jit
def named_deadlock_host(out: cute.Tensor):
    named_deadlock_kernel(out).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_named_barrier_that_never_completes_is_reported():
    out = np.zeros(64, dtype=np.int32)
    with pytest.raises(cutlass.DSLRuntimeError, match=r"named barrier deadlock.*barrier 3 \(32 of 64 threads"):
        cute.compile(named_deadlock_host, out, options="--target cpu")(out)


def test_named_barrier_arguments_are_checked():
    with pytest.raises(ValueError, match=r"barrier_id must be in \[0, 15\]"):
        pipeline.NamedBarrier(barrier_id=16, num_threads=64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # barrier 0 is valid (NVIDIA's Blackwell GEMMs name it): no warning
        assert pipeline.NamedBarrier(barrier_id=0, num_threads=64).barrier_id == 0

    @cute.kernel
    def k():
        pipeline.NamedBarrier(barrier_id=1, num_threads=48).arrive_and_wait()

    @cute.jit
    def h():
        k().launch(grid=(1, 1, 1), block=(64, 1, 1))

    with pytest.raises(cutlass.DSLUserCodeError, match="multiple of 32") as info:
        h()
    assert info.value.code == "ARCH_BARRIER_COUNT"


@pytest.fixture
def no_file_cache(monkeypatch):
    # these tests read the generated NVVM IR, which a compile-cache hit does not regenerate
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "1")


def test_named_barrier_ptx(no_file_cache):
    out = np.zeros(256, dtype=np.int32)
    compiled = cute.compile(named_barrier_host, out)
    assert 'bar.sync $0, $1;' in compiled.nvvm_ir and 'bar.arrive $0, $1;' in compiled.nvvm_ir
    toolchain.ptx_of(compiled)
    assert "bar.sync" in compiled.__ptx__ and "bar.arrive" in compiled.__ptx__


# ---- cute.arch Float32 fast paths, Float32.inf / zero -------------------------------------------------

@cute.kernel
def fast_math_kernel(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    out[0, t] = cute.arch.fmax(a[t], b[t])
    out[1, t] = cute.arch.rcp_approx(a[t])
    out[2, t] = cute.arch.exp2(b[t])
    out[3, t] = cute.math.exp2(b[t], fastmath=True)
    m = -Float32.inf
    m = cute.arch.fmax(m, a[t])
    out[4, t] = m + Float32.zero


@cute.jit
def fast_math_host(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor):
    fast_math_kernel(a, b, out).launch(grid=(1, 1, 1), block=(a.shape[0], 1, 1))


def test_arch_float32_fast_paths(no_file_cache):
    rng = np.random.default_rng(3)
    a = rng.uniform(-4, 4, 32).astype(np.float32)
    b = rng.uniform(-8, 8, 32).astype(np.float32)
    a[0], b[0] = np.nan, 1.0       # fmax ignores a NaN operand
    a[1] = 1e-39                   # subnormal: flushed to zero, 1/0 = inf
    out = np.zeros((5, 32), np.float32)
    compiled = cute.compile(fast_math_host, a, b, out, options="--target cpu")
    compiled(a, b, out)
    np.testing.assert_array_equal(out[0], np.fmax(a, b))
    np.testing.assert_allclose(out[1, 2:], (1 / a[2:].astype(np.float64)).astype(np.float32), rtol=2e-7)
    assert out[1, 1] == np.inf
    np.testing.assert_allclose(out[2], np.exp2(b.astype(np.float64)), rtol=2e-7)
    np.testing.assert_array_equal(out[3], out[2])
    np.testing.assert_array_equal(out[4], np.where(np.isnan(a), -np.inf, a))
    ir = compiled.nvvm_ir
    assert "rcp.approx.ftz.f32" in ir and "ex2.approx.ftz.f32" in ir and "@llvm.nvvm.fmax.f" in ir


def test_float_inf_and_zero():
    assert Float32.inf == math.inf and -Float32.inf == -math.inf
    assert Float32.zero == 0.0 and cutlass.Float16.inf == math.inf
    with pytest.raises(AttributeError, match="inf is defined on float types, not Int32"):
        Int32.inf


# ---- loop unroll hints -----------------------------------------------------------------------------

@cute.kernel
def unroll_kernel(out: cute.Tensor, n: Int32):
    acc = Int32(0)
    for i in cutlass.range(8, unroll_full=True):
        acc = acc + i
    for i in cutlass.range(n, unroll=4):
        acc = acc + i
    for i in range(n, unroll_full=True):
        acc = acc + 2 * i
    out[0] = acc


@cute.jit
def unroll_host(out: cute.Tensor, n: Int32):
    unroll_kernel(out, n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_unroll_hints_become_llvm_loop_metadata(no_file_cache):
    out = np.zeros(1, np.int32)
    compiled = cute.compile(unroll_host, out, 5, options="--target cpu")
    compiled(out, 5)
    assert out[0] == 28 + 10 + 20
    ir = compiled.nvvm_ir
    assert ir.count('!{!"llvm.loop.unroll.full"}') == 2
    assert ir.count("!llvm.loop !") == 3
    assert '!{!"llvm.loop.unroll.count", i32 4}' in ir


@cute.kernel
def ssa_exp2_kernel(a: cute.Tensor, out: cute.Tensor):
    frag = cute.make_rmem_tensor((8,), Float32)
    for i in cutlass.range_constexpr(8):
        frag[i] = a[i]
    frag.store(cute.math.exp2(frag.load() * 0.5 - 1.0, fastmath=True))
    for i in cutlass.range_constexpr(8):
        out[i] = frag[i]


@cute.jit
def ssa_exp2_host(a: cute.Tensor, out: cute.Tensor):
    ssa_exp2_kernel(a, out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_tensor_ssa_fastmath_exp2(no_file_cache):
    a = np.linspace(-6, 6, 8).astype(np.float32)
    out = np.zeros(8, np.float32)
    compiled = cute.compile(ssa_exp2_host, a, out, options="--target cpu")
    compiled(a, out)
    np.testing.assert_allclose(out, np.exp2(a.astype(np.float64) * 0.5 - 1.0), rtol=2e-7)
    assert compiled.nvvm_ir.count("ex2.approx.ftz.f32") == 8


# ---- the same kernels on the GPU (skipped without one) ------------------------------------------------

def _on_gpu(host, *arrays):
    torch = pytest.importorskip("torch")
    cutlass.cuda.initialize_cuda_context()
    dev = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in arrays]
    cute.compile(host, *dev)(*dev)
    torch.cuda.synchronize()
    return [d.cpu().numpy() for d in dev]


@pytest.mark.gpu
def test_gpu_fp8_conversions_match_the_model():
    rng = np.random.default_rng(1)
    x = np.concatenate([np.array([0.0, -0.0, 448.0, 464.0, 1e9, -np.inf, 57344.0, 61440.0, 2.0 ** -10,
                                  3 * 2.0 ** -10, 2.0 ** -17], np.float32),
                        rng.normal(0, 30, 500).astype(np.float32), rng.normal(0, 0.02, 200).astype(np.float32)])
    outs = [np.zeros(x.size, np.uint8), np.zeros(x.size, np.float32), np.zeros(x.size, np.uint8),
            np.zeros(x.size, np.float32)]
    _, codes4, back4, codes5, back5 = _on_gpu(fp8_host, x, *outs)
    np.testing.assert_array_equal(codes4, [fp8_encode(float(v), E4M3) for v in x])
    np.testing.assert_array_equal(codes5, [fp8_encode(float(v), E5M2) for v in x])
    np.testing.assert_array_equal(back4, np.array([E4M3[c] for c in codes4], np.float32))
    np.testing.assert_array_equal(back5, np.array([E5M2[c] for c in codes5], np.float32))


@pytest.mark.gpu
def test_gpu_named_barriers():
    out, = _on_gpu(named_barrier_host, np.full(256, -1, dtype=np.int32))
    np.testing.assert_array_equal(out[:64], (np.arange(64) + 64) * 10)
    np.testing.assert_array_equal(out[128:192], 64 - np.arange(64))


@pytest.mark.gpu
def test_gpu_float32_fast_paths():
    rng = np.random.default_rng(3)
    a = rng.uniform(-4, 4, 32).astype(np.float32)
    b = rng.uniform(-8, 8, 32).astype(np.float32)
    _, _, out = _on_gpu(fast_math_host, a, b, np.zeros((5, 32), np.float32))
    np.testing.assert_array_equal(out[0], np.fmax(a, b))
    np.testing.assert_allclose(out[1], 1 / a.astype(np.float64), rtol=1e-6)   # rcp.approx: within 1 ulp
    np.testing.assert_allclose(out[2], np.exp2(b.astype(np.float64)), rtol=1e-6)  # ex2.approx: 2 ulp
