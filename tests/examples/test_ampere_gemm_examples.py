"""NVIDIA's Ampere GEMM examples (cute/ampere/kernel/dense_gemm/tensorop_gemm.py, sgemm.py, BSD-3),
loaded at run time when the examples are present next to the repository. Their kernel classes are
driven as each example's `run()` does, with numpy arrays on the CPU emulator (small problems) and
checked against numpy; the PTX of the same compile is checked for what makes them fast (tensor-core
and asynchronous-copy instructions, no local memory)."""
import importlib.util
import os
import re
import sys
import types

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream
import toolchain

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CANDIDATES = [os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(ROOT, "..", "shared", "nvidia-examples"),
              os.path.join(ROOT, "..", "..", "shared", "nvidia-examples")]
CPU = "--target cpu"


def _cuda_bindings_stand_in(monkeypatch):
    """The examples import cuda.bindings.driver for the CUstream annotation; this machine may not
    have it. A stand-in with the names they touch at import time is enough off the GPU."""
    try:
        import cuda.bindings.driver  # noqa: F401
        return
    except ImportError:
        pass
    cuda, bindings, driver = (types.ModuleType(n) for n in ("cuda", "cuda.bindings", "cuda.bindings.driver"))

    class CUstream(int):
        pass

    driver.CUstream = CUstream
    driver.CUstream_flags = types.SimpleNamespace(CU_STREAM_DEFAULT=0)
    cuda.bindings, bindings.driver = bindings, driver
    for name, module in (("cuda", cuda), ("cuda.bindings", bindings), ("cuda.bindings.driver", driver)):
        monkeypatch.setitem(sys.modules, name, module)


def load_example(monkeypatch, relative):
    _cuda_bindings_stand_in(monkeypatch)
    for base in CANDIDATES:
        path = os.path.join(base, relative)
        if base and os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("example_" + os.path.basename(path)[:-3], path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    pytest.skip(f"NVIDIA's {relative} is not present")


def _small_ints(rng, shape):
    return rng.integers(-2, 3, size=shape).astype(np.float32)


def _aligned(values, dtype, align=128):
    """A C-contiguous copy of `values` whose data starts on an `align`-byte boundary."""
    nbytes = values.size * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    out = raw[start:start + nbytes].view(dtype).reshape(values.shape)
    out[...] = values
    return out


def _bf16_bits(x):
    """bfloat16 storage (uint16) of values exact in bfloat16."""
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


@pytest.mark.parametrize("dtype_name,arch", [("Float16", "sm_80"), ("BFloat16", "sm_90a")])
def test_tensorop_gemm_example_on_the_emulator(monkeypatch, dtype_name, arch):
    tg = load_example(monkeypatch, "cute/ampere/kernel/dense_gemm/tensorop_gemm.py")
    dtype = getattr(cutlass, dtype_name)
    m, n, k, l = 128, 128, 96, 1  # k: three k-tiles of 32, more than the pipeline's stages - 1
    rng = np.random.default_rng(1)
    # The example's default majors: A m-major ((l, k, m) storage read as (l, m, k)), B and C n-major.
    a32, b32 = _small_ints(rng, (l, k, m)), _small_ints(rng, (l, k, n))
    if dtype_name == "Float16":
        a, b, c = a32.astype(np.float16), b32.astype(np.float16), np.zeros((l, m, n), np.float16)
    else:
        a, b, c = _bf16_bits(a32), _bf16_bits(b32), np.zeros((l, m, n), np.uint16)
    a = a.transpose(0, 2, 1)

    def tensor(x, leading_dim):  # what the example's mark_dynamic_layout makes
        t = from_dlpack(x, assumed_align=16)
        t.element_type = dtype
        t.mark_layout_dynamic(leading_dim=leading_dim)
        return t.mark_compact_shape_dynamic(mode=leading_dim, stride_order=(0, 1, 2) if leading_dim == 2 else (0, 2, 1),
                                            divisibility=8)

    a_, b_, c_ = tensor(a, 1), tensor(b, 2), tensor(c, 2)
    gemm = tg.TensorOpGemm(dtype, dtype, cutlass.Float32, (2, 2, 1), False)
    f = cute.compile(tg.bmm, gemm, a_, b_, c_, make_fake_stream(), lambda x: x, options=f"{CPU} --gpu-arch {arch}")
    f(a_, b_, c_, _default_stream())
    got = c.astype(np.float32) if dtype_name == "Float16" else (c.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(got, np.matmul(a32.transpose(0, 2, 1), b32))
    ptx = toolchain.ptx_of(f)
    for want in ("cp.async.cg.shared.global", "ldmatrix.sync.aligned.m8n8.x4", "mma.sync.aligned.m16n8k16"):
        assert want in ptx, want
    # The fragments live in registers: no local memory anywhere in the kernel.
    assert "ld.local" not in ptx and "st.local" not in ptx
    assert f".target {arch}" in ptx
    if dtype_name == "Float16":
        # ... and in the 32-bit registers ldmatrix fills and mma.sync reads: no operand is
        # re-packed from 16-bit halves (ptxas turned those into PRMTs in the main loop).
        assert not re.search(r"mov\.b32\s+%r\d+, \{%rs", ptx)


def test_tensorop_gemm_example_irregular_sizes(monkeypatch):
    tg = load_example(monkeypatch, "cute/ampere/kernel/dense_gemm/tensorop_gemm.py")
    # m, n not multiples of the 128x128 tile and k not of 32 (the residual k-tile comes first);
    # two batches; C m-major (the example then swaps A and B).
    m, n, k, l = 136, 72, 80, 2
    rng = np.random.default_rng(2)
    a32, b32 = _small_ints(rng, (l, k, m)), _small_ints(rng, (l, k, n))
    a, b = a32.astype(np.float16).transpose(0, 2, 1), b32.astype(np.float16)
    c = np.zeros((l, n, m), np.float16).transpose(0, 2, 1)
    a_, b_, c_ = tg.mark_dynamic_layout(a, b, c, 1, 2, 1, cutlass.Float16, cutlass.Float16)
    gemm = tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1), True)
    f = cute.compile(tg.bmm, gemm, a_, b_, c_, make_fake_stream(), lambda x: x, options=CPU)
    f(a_, b_, c_, _default_stream())
    np.testing.assert_array_equal(c.astype(np.float32), np.matmul(a32.transpose(0, 2, 1), b32))


@pytest.mark.parametrize("a_major,b_major", [("m", "n"), ("k", "k")])
def test_tensorop_gemm_example_fp8(monkeypatch, a_major, b_major):
    # m/n-major FP8 (the example's default majors) reads shared memory with 8-bit universal copies,
    # k-major with ldmatrix; both meet the cp.async writes through the same swizzle.
    tg = load_example(monkeypatch, "cute/ampere/kernel/dense_gemm/tensorop_gemm.py")
    m, n, k, l = 144, 80, 160, 1
    rng = np.random.default_rng(6)
    a32, b32 = _small_ints(rng, (l, m, k)), _small_ints(rng, (l, k, n))
    a_src = np.ascontiguousarray(a32.transpose(0, 2, 1)).transpose(0, 2, 1) if a_major == "m" else a32
    b_src = b32 if b_major == "n" else np.ascontiguousarray(b32.transpose(0, 2, 1)).transpose(0, 2, 1)
    a = np.zeros((l, k, m), np.uint8).transpose(0, 2, 1) if a_major == "m" else np.zeros((l, m, k), np.uint8)
    b = np.zeros((l, k, n), np.uint8) if b_major == "n" else np.zeros((l, n, k), np.uint8).transpose(0, 2, 1)
    c = np.zeros((l, m, n), np.float16)
    e4m3 = cutlass.Float8E4M3FN
    a_, b_, c_ = tg.mark_dynamic_layout(a, b, c, 1 if a_major == "m" else 2, 2 if b_major == "n" else 1, 2,
                                        e4m3, cutlass.Float16, a_src, b_src, None)
    gemm = tg.TensorOpGemm(e4m3, cutlass.Float16, cutlass.Float32, (2, 2, 1), False)
    f = cute.compile(tg.bmm, gemm, a_, b_, c_, make_fake_stream(), lambda x: x, options=CPU)
    f(a_, b_, c_, _default_stream())
    # Integers in [-2, 2] are exact in e4m3, their sums in f16.
    np.testing.assert_array_equal(c.astype(np.float32), np.matmul(a32, b32))
    ptx = toolchain.ptx_of(f)
    assert "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx


@pytest.mark.parametrize("a_major,b_major,static_a", [("m", "k", True), ("m", "k", False), ("k", "n", False)])
def test_sgemm_example_on_the_emulator(monkeypatch, a_major, b_major, static_a):
    sg = load_example(monkeypatch, "cute/ampere/kernel/dense_gemm/sgemm.py")
    M, N, K = 128, 128, 24
    rng = np.random.default_rng(3)

    def operand(mode0, mode1, mode0_major):
        x = _small_ints(rng, (mode1, mode0) if mode0_major else (mode0, mode1))
        return x.T if mode0_major else x

    a, b, c = operand(M, K, a_major == "m"), operand(N, K, b_major == "n"), np.zeros((M, N), np.float32)

    def tensor(x, mode0_major):
        return (from_dlpack(x, assumed_align=16).mark_layout_dynamic(leading_dim=0 if mode0_major else 1)
                .mark_compact_shape_dynamic(mode=0 if mode0_major else 1, divisibility=x.shape[0 if mode0_major else 1]))

    # The example's default (static_shape=False) passes A with its static layout, the others marked.
    a_t = from_dlpack(a, assumed_align=16) if static_a else tensor(a, a_major == "m")
    b_t, c_t = tensor(b, b_major == "n"), tensor(c, False)
    f = cute.compile[cute.GenerateLineInfo](sg.SGemm(), a_t, b_t, c_t, stream=make_fake_stream(), options=CPU)
    f(a_t, b_t, c_t)
    np.testing.assert_array_equal(c, a @ b.T)


def _default_stream():
    import cuda.bindings.driver as driver  # the real one or the stand-in
    return driver.CUstream(0)


def _examples_root(monkeypatch):
    for base in CANDIDATES:
        if base and os.path.isfile(os.path.join(base, "cute", "ampere", "kernel", "dense_gemm", "tensorop_gemm.py")):
            monkeypatch.syspath_prepend(base)  # the tutorials import `cute.ampere.kernel...`
            return base
    pytest.skip("NVIDIA's examples are not present")


def test_call_bypass_dlpack_tutorial(monkeypatch):
    _examples_root(monkeypatch)
    t = load_example(monkeypatch, "dsl_tutorials/call_bypass_dlpack.py")
    m, n, k, l = 128, 64, 64, 2
    rng = np.random.default_rng(4)
    a = _aligned(_small_ints(rng, (l, k, m)), np.float16)  # as the tutorial: (l,k,m) storage read (m,k,l)
    b = _aligned(_small_ints(rng, (l, k, n)), np.float16)
    c = _aligned(np.zeros((l, m, n)), np.float16)
    ptrs = [cute.runtime.make_ptr(cutlass.Float16, x.ctypes.data, cute.AddressSpace.gmem, assumed_align=32)
            for x in (a, b, c)]
    t.tensor_op_gemm_wrapper(*ptrs, m, n, k, l, _default_stream())  # as the tutorial calls it
    ref = np.einsum("lkm,lkn->lmn", a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_array_equal(c.astype(np.float32), ref)


def test_call_from_jit_tutorial_custom_argument(monkeypatch):
    _examples_root(monkeypatch)
    t = load_example(monkeypatch, "dsl_tutorials/call_from_jit.py")
    m, n, k, l = 128, 128, 64, 2
    rng = np.random.default_rng(5)
    a = _aligned(_small_ints(rng, (l, m, k)), np.float16)
    b = _aligned(_small_ints(rng, (l, n, k)), np.float16)
    c = _aligned(np.zeros((l, m, n)), np.float16)

    def buffer(x):
        return t.BufferWithLayout(cute.runtime.make_ptr(cutlass.Float16, x.ctypes.data, cute.AddressSpace.gmem,
                                                        assumed_align=32), (2, 1, 0))

    # As the tutorial calls it (no GPU here: the kernel runs on the emulator).
    t.tensor_op_gemm_wrapper(buffer(a), buffer(b), buffer(c), (m, n, k, l), cutlass.Float32, (2, 2, 1),
                             _default_stream())
    np.testing.assert_array_equal(c.astype(np.float32), np.einsum("lmk,lnk->lmn", a.astype(np.float32),
                                                                  b.astype(np.float32)))


def test_tensorop_gemm_compiled_from_fake_tensors_for_tvm_ffi(monkeypatch):
    # As dsl_tutorials/tvm_ffi/ampere_gemm_with_fake_tensor.py does (it needs torch; this drives
    # the same calls): k-major A with a symbolic m of no known divisibility, n and k divisible by
    # 16, compiled once from fake tensors, then called through TVM-FFI with host arrays.
    pytest.importorskip("tvm_ffi")
    tg = load_example(monkeypatch, "cute/ampere/kernel/dense_gemm/tensorop_gemm.py")
    from cutlass.cute.runtime import make_fake_compact_tensor
    import cuda.bindings.driver as driver  # the real one or the stand-in

    @cute.jit
    def bmm(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream: driver.CUstream):
        gemm_op = tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
        a = cute.make_tensor(a.iterator, cute.select(a.layout, mode=[1, 2, 0]))
        b = cute.make_tensor(b.iterator, cute.select(b.layout, mode=[2, 1, 0]))
        c = cute.make_tensor(c.iterator, cute.select(c.layout, mode=[1, 2, 0]))
        gemm_op(a, b, c, stream)

    m, n, k, l = cute.sym_int(), cute.sym_int(divisibility=16), cute.sym_int(divisibility=16), cute.sym_int()
    fakes = [make_fake_compact_tensor(cutlass.Float16, shape, stride_order=(2, 1, 0), assumed_align=16)
             for shape in ((l, m, k), (l, k, n), (l, m, n))]
    f = cute.compile(bmm, *fakes, make_fake_stream(), options="--enable-tvm-ffi --target cpu")
    rng = np.random.default_rng(7)
    M, N, K, L = 72, 48, 80, 2
    a, b = _small_ints(rng, (L, M, K)).astype(np.float16), _small_ints(rng, (L, K, N)).astype(np.float16)
    c = np.zeros((L, M, N), np.float16)
    f(a, b, c, _default_stream())
    np.testing.assert_array_equal(c.astype(np.float32), np.matmul(a.astype(np.float32), b.astype(np.float32)))
    ptx = toolchain.ptx_of(f)
    assert "ld.local" not in ptx and "st.local" not in ptx
