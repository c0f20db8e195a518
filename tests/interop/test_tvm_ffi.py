"""Compiled functions with the TVM-FFI ABI (`--enable-tvm-ffi`), the seeds' "Compile with TVM FFI"
chapter: the compiled function is a `tvm_ffi.Function` taking DLPack tensors (numpy here, torch on
the GPU), Python scalars, tuples (typed, variadic, named), pointers, streams and keyword
arguments; its compiled-in checks raise the documented messages word for word. Kernels run on the
CPU emulator; the `gpu` tests are the chapter's torch examples."""
import ctypes
from typing import NamedTuple, Tuple

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor, make_fake_stream, make_fake_tensor

tvm_ffi = pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")

FFI = "--enable-tvm-ffi --target cpu"
SIG = "`add_one(a: Tensor([n0], float32), b: Tensor([n0], float32))`"


@cute.kernel
def device_add_one(a: cute.Tensor, b: cute.Tensor):
    threads_per_block = 128
    cta_x_, _, _ = cute.arch.block_idx()
    tid_x, _, _ = cute.arch.thread_idx()
    tid = cta_x_ * threads_per_block + tid_x
    if tid < a.shape[0]:
        b[tid] = a[tid] + 1.0


@cute.jit
def add_one(a: cute.Tensor, b: cute.Tensor):
    n = a.shape[0]
    threads_per_block = 128
    blocks = (n + threads_per_block - 1) // threads_per_block
    device_add_one(a, b).launch(grid=(blocks, 1, 1), block=(threads_per_block, 1, 1))


def fake_pair(n=None, **kw):
    n = cute.sym_int() if n is None else n
    return make_fake_compact_tensor(cute.Float32, (n,), **kw), make_fake_compact_tensor(cute.Float32, (n,), **kw)


def test_compiled_function_is_a_tvm_ffi_function_taking_numpy_arrays():
    f = cute.compile(add_one, *fake_pair(), options=FFI)
    assert isinstance(f, tvm_ffi.Function)
    a = np.arange(10, dtype=np.float32)
    b = np.empty(10, dtype=np.float32)
    assert f(a, b) is None
    np.testing.assert_array_equal(b, a + 1)
    b2 = np.zeros(1000, np.float32)
    f(np.arange(1000, dtype=np.float32), b2)  # the same function, another size
    np.testing.assert_array_equal(b2, np.arange(1000, dtype=np.float32) + 1)
    assert f.__mlir__ and f.signature == SIG.strip("`")


def test_option_forms_and_environment_variable(monkeypatch):
    f = cute.compile[cute.EnableTVMFFI](add_one, *fake_pair(), options="--target cpu")
    assert isinstance(f, tvm_ffi.Function)
    monkeypatch.setenv("CUTE_DSL_ENABLE_TVM_FFI", "1")
    g = cute.compile(add_one, *fake_pair(), options="--target cpu")
    assert isinstance(g, tvm_ffi.Function)
    monkeypatch.setenv("CUTE_DSL_ENABLE_TVM_FFI", "0")
    h = cute.compile(add_one, *fake_pair(), options="--target cpu")
    assert not isinstance(h, tvm_ffi.Function)


# ---- the chapter's error handling example, word for word -------------------------------------

def constrained_add_one():
    n = cute.sym_int(divisibility=16)
    # aligned to 16 bytes (4 float32), and a and b share the shape variable n
    a_cute, b_cute = fake_pair(n, assumed_align=16)
    return cute.compile(add_one, a_cute, b_cute, options=FFI)


def test_type_mismatch_message():
    f = constrained_add_one()
    a = np.zeros(128, dtype=np.float32)
    with pytest.raises(TypeError) as e:
        f(a, 1)
    assert str(e.value) == f"Mismatched type on argument #1 when calling: {SIG}, expected Tensor"


def test_shape_match_message():
    f = constrained_add_one()
    a, b = np.zeros(128, dtype=np.float32), np.zeros(128, dtype=np.float32)
    with pytest.raises(ValueError) as e:
        f(a, b[:126])
    assert str(e.value) == f"Mismatched b.shape[0] on argument #1 when calling: {SIG}, expected to match a.shape[0]"


def test_divisibility_message():
    f = constrained_add_one()
    a, b = np.zeros(128, dtype=np.float32), np.zeros(128, dtype=np.float32)
    with pytest.raises(ValueError) as e:
        f(a[:126], b[:126])
    assert str(e.value) == f"Invalid a.shape[0] on argument #0 when calling: {SIG}, expected to be divisible by 16"


def test_alignment_message():
    f = constrained_add_one()
    a, b = np.zeros(129, dtype=np.float32), np.zeros(129, dtype=np.float32)
    assert a.ctypes.data % 16 == 0  # numpy aligns allocations; a[1:] is then 4 bytes off
    with pytest.raises(ValueError) as e:
        f(a[1:], b[1:])
    assert str(e.value) == f"Misaligned Tensor data on argument #0 when calling: {SIG}, expected data alignment=16 bytes"


def test_dtype_rank_and_count_messages():
    f = constrained_add_one()
    a, b = np.zeros(128, dtype=np.float32), np.zeros(128, dtype=np.float32)
    with pytest.raises(TypeError) as e:
        f(a, b.astype(np.float64))  # the silent reinterpretation of issue 14
    assert str(e.value) == f"Mismatched b.dtype on argument #1 when calling: {SIG}, expected float32"
    with pytest.raises(TypeError) as e:
        f(a.astype(np.int32), b)
    assert str(e.value) == f"Mismatched a.dtype on argument #0 when calling: {SIG}, expected float32"
    with pytest.raises(ValueError) as e:
        f(a.reshape(8, 16), b)
    assert str(e.value) == f"Mismatched a.ndim on argument #0 when calling: {SIG}, expected 1"
    with pytest.raises(TypeError) as e:
        f(a, b, a)
    assert str(e.value) == f"Expected 2 arguments but got 3 when calling: {SIG}"
    np.testing.assert_array_equal(b, 0)  # nothing ran


def test_device_mismatch_message():
    # Kernels compiled for the GPU (no GPU needed to compile) refuse host arrays before launching.
    f = cute.compile(add_one, *fake_pair(), options="--enable-tvm-ffi --target gpu")
    with pytest.raises(ValueError) as e:
        f(np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert str(e.value) == f"Mismatched a.device_type on argument #0 when calling: {SIG}, expected cuda"


def test_static_layout_and_stride_messages():
    # NVIDIA's error_reporting.py: a static layout (from_dlpack without mark_layout_dynamic).
    a = np.arange(10, dtype=np.float32)
    b = np.zeros(10, np.float32)
    f = cute.compile(add_one, from_dlpack(a, enable_tvm_ffi=True), from_dlpack(b, enable_tvm_ffi=True), options=FFI)
    sig = "`add_one(a: Tensor([10], float32), b: Tensor([10], float32))`"
    with pytest.raises(ValueError) as e:
        f(np.arange(5, dtype=np.float32), b)
    assert str(e.value) == f"Mismatched a.shape[0] on argument #0 when calling: {sig}, expected 10"
    with pytest.raises(ValueError) as e:
        f(a, np.zeros(20, np.float32)[::2])
    assert str(e.value) == f"Mismatched b.stride[0] on argument #1 when calling: {sig}, expected 1"


# ---- argument kinds --------------------------------------------------------------------------

def test_runtime_tensors_and_framework_arrays():
    # NVIDIA's jit_and_use_in_torch.py with numpy: compile from from_dlpack(enable_tvm_ffi=True)
    # tensors marked dynamic, call with them, then with the arrays directly.
    a = np.arange(10, dtype=np.float32)
    b = np.zeros(10, dtype=np.float32)
    a_cute = from_dlpack(a, enable_tvm_ffi=True).mark_layout_dynamic()
    b_cute = from_dlpack(b, enable_tvm_ffi=True).mark_layout_dynamic()
    f = cute.compile(add_one, a_cute, b_cute, options=FFI)
    f(a_cute, b_cute)
    np.testing.assert_array_equal(b, a + 1)
    a2 = a + 1
    f(a2, b)
    np.testing.assert_array_equal(b, a + 2)


@cute.kernel
def device_add_one_c(a: cute.Tensor, b: cute.Tensor, c: cute.Float32):
    tid = cute.arch.block_idx()[0] * 128 + cute.arch.thread_idx()[0]
    if tid < a.shape[0]:
        b[tid] = a[tid] + c


@cute.jit
def add_one_with_tuple(a: Tuple[cute.Tensor, cute.Tensor, cute.Float32]):
    n = a[0].shape[0]
    device_add_one_c(a[0], a[1], a[2]).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def test_tuples():
    a_cute, b_cute = fake_pair()
    f = cute.compile(add_one_with_tuple, (a_cute, b_cute, cute.Float32(4)), options=FFI)
    a, b = np.arange(10, dtype=np.float32), np.empty(10, np.float32)
    f((a, b, 5))
    np.testing.assert_array_equal(b, a + 5)
    f((a, b, cute.Float32(2.5)))  # DSL scalars pass as their Python value
    np.testing.assert_array_equal(b, a + 2.5)
    sig = "`add_one_with_tuple(a: Tuple[Tensor([n0], float32), Tensor([n0], float32), float32])`"
    with pytest.raises(TypeError) as e:
        f((a, b))
    assert str(e.value) == (f"Mismatched type on argument #0 when calling: {sig}, "
                            "expected Tuple[Tensor([n0], float32), Tensor([n0], float32), float32]")
    with pytest.raises(ValueError) as e:
        f((a, b[:5], 1))
    assert str(e.value) == f"Mismatched a[1].shape[0] on argument #0 when calling: {sig}, expected to match a[0].shape[0]"


@cute.kernel
def device_add_one_extra(a: cute.Tensor, b: cute.Tensor, extra_value: tuple):
    tid = cute.arch.block_idx()[0] * 128 + cute.arch.thread_idx()[0]
    if tid < a.shape[0]:
        if cutlass.const_expr(len(extra_value) != 0):
            b[tid] = a[tid] + 1 + extra_value[0]
        else:
            b[tid] = a[tid] + 1


@cute.jit
def add_one_with_extra_value(a: cute.Tensor, b: cute.Tensor, extra_value: tuple):
    n = a.shape[0]
    device_add_one_extra(a, b, extra_value).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def test_variadic_tuples():
    a_cute, b_cute = fake_pair()
    no_extra = cute.compile(add_one_with_extra_value, a_cute, b_cute, (), options=FFI)
    with_extra = cute.compile(add_one_with_extra_value, a_cute, b_cute, (cute.Float32(4),), options=FFI)
    a, b = np.arange(10, dtype=np.float32), np.empty(10, np.float32)
    no_extra(a, b, ())
    np.testing.assert_array_equal(b, a + 1)
    with_extra(a, b, (4,))
    np.testing.assert_array_equal(b, a + 5)
    with pytest.raises(TypeError, match=r"expected Tuple\[float32\]"):
        with_extra(a, b, ())


class CuteNamedTuple(NamedTuple):
    a: cute.Tensor
    b: cute.Tensor
    c: cute.Float32 = cute.Float32(1)

    def __new_from_mlir_values__(self, values):
        return CuteNamedTuple(*values)


class ArrayNamedTuple(NamedTuple):
    a: np.ndarray
    b: np.ndarray
    c: float = 1


@cute.kernel
def device_add_one_named_tuple(value: CuteNamedTuple):
    tid = cute.arch.block_idx()[0] * 128 + cute.arch.thread_idx()[0]
    a = value.a
    b = value.b
    c = value.c
    if tid < a.shape[0]:
        b[tid] = a[tid] + c


@cute.jit
def add_one_with_named_tuple(value: CuteNamedTuple):
    n = value.a.shape[0]
    device_add_one_named_tuple(value).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def test_named_tuples():
    a_cute, b_cute = fake_pair()
    f = cute.compile(add_one_with_named_tuple, CuteNamedTuple(a=a_cute, b=b_cute), options=FFI)
    # Named tuples travel as plain tuples: the signature shows one.
    assert f.signature == ("add_one_with_named_tuple(value: Tuple[Tensor([n0], float32), Tensor([n0], float32), "
                           "float32])")
    a, b = np.arange(10, dtype=np.float32), np.empty(10, np.float32)
    f(ArrayNamedTuple(a=a, b=b))
    np.testing.assert_array_equal(b, a + 1)
    f(ArrayNamedTuple(a=a, b=b, c=3))
    np.testing.assert_array_equal(b, a + 3)


@cute.jit
def add_constant(a: cute.Tensor, b: cute.Tensor, offset: cutlass.Float32 = cutlass.Float32(1)):
    n = a.shape[0]
    device_add_one_c(a, b, offset).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def test_keyword_arguments_and_defaults():
    f = cute.compile(add_constant, *fake_pair(), options=FFI)
    a, b = np.arange(10, dtype=np.float32), np.empty(10, np.float32)
    f(a, b)
    np.testing.assert_array_equal(b, a + 1)
    f(a, b, offset=4)
    np.testing.assert_array_equal(b, a + 4)
    f(b=b, a=a, offset=2.5)
    np.testing.assert_array_equal(b, a + 2.5)
    f(a, b, 7)
    np.testing.assert_array_equal(b, a + 7)
    with pytest.raises(TypeError, match="unexpected keyword argument 'scale'"):
        f(a, b, scale=2)
    sig = "`add_constant(a: Tensor([n0], float32), b: Tensor([n0], float32), offset: float32)`"
    with pytest.raises(TypeError, match="missing required argument 'b'"):
        f(a, offset=3)
    with pytest.raises(TypeError) as e:
        f(a)
    assert str(e.value) == f"Expected 3 arguments but got 1 when calling: {sig}"
    with pytest.raises(TypeError) as e:
        f(a, b, "4")
    assert str(e.value) == f"Mismatched type on argument #2 when calling: {sig}, expected float32"


@cute.jit
def add_one_with_stream(a: cute.Tensor, b: cute.Tensor, stream):
    n = a.shape[0]
    device_add_one(a, b).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


def test_stream_argument_and_environment_stream():
    f = cute.compile(add_one_with_stream, *fake_pair(), make_fake_stream(), options=FFI)
    assert f.signature == "add_one_with_stream(a: Tensor([n0], float32), b: Tensor([n0], float32), stream: Stream)"
    a, b = np.arange(10, dtype=np.float32), np.empty(10, np.float32)
    f(a, b, None)
    np.testing.assert_array_equal(b, a + 1)
    with pytest.raises(TypeError, match="expected Stream"):
        f(a, b, "default")
    env = cute.compile(add_one_with_stream, *fake_pair(), make_fake_stream(use_tvm_ffi_env_stream=True),
                       options=FFI)
    # The environment stream is no argument: TVM-FFI supplies it.
    assert env.signature == "add_one_with_stream(a: Tensor([n0], float32), b: Tensor([n0], float32))"
    b[:] = 0
    env(a, b)
    np.testing.assert_array_equal(b, a + 1)


@cute.kernel
def device_fill(t: cute.Tensor, start: cutlass.Int32):
    for i in range(4):
        t[i] = start + i


@cute.jit
def fill_through_pointer(p: cute.Pointer, start: cutlass.Int32):
    device_fill(cute.make_tensor(p, cute.make_layout(4)), start).launch(grid=(1, 1, 1), block=(1, 1, 1))


class OpaqueBuffer:
    def __init__(self, array):
        self.array = array

    def __tvm_ffi_opaque_ptr__(self):
        return self.array.ctypes.data


def test_pointer_arguments():
    buf = np.zeros(4, np.int32)
    ptr = cute.runtime.make_ptr(cutlass.Int32, buf.ctypes.data, cute.AddressSpace.gmem)
    f = cute.compile(fill_through_pointer, ptr, 0, options=FFI)
    f(ctypes.c_void_p(buf.ctypes.data), 10)
    np.testing.assert_array_equal(buf, [10, 11, 12, 13])
    f(ptr, 20)  # cute.Pointer implements __tvm_ffi_opaque_ptr__
    np.testing.assert_array_equal(buf, [20, 21, 22, 23])
    f(OpaqueBuffer(buf), 30)
    np.testing.assert_array_equal(buf, [30, 31, 32, 33])
    with pytest.raises(TypeError) as e:
        f(buf, 1)
    assert str(e.value) == ("Mismatched type on argument #0 when calling: `fill_through_pointer(p: Pointer, "
                            "start: int32)`, expected Pointer")


def test_fake_tensors_with_static_strides_and_64bit_symbols():
    n = cute.sym_int64(divisibility=8)
    t = make_fake_tensor(cutlass.Float16, (3, n), stride=(cute.sym_int64(divisibility=8), 1))
    f = cute.compile(device_free_copy, t, make_fake_compact_tensor(cutlass.Float16, (3, n), stride_order=(1, 0)),
                     options=FFI)
    src = np.arange(3 * 24, dtype=np.float16).reshape(3, 24)
    dst = np.zeros((3, 16), np.float16)
    f(src[:, :16], dst)
    np.testing.assert_array_equal(dst, src[:, :16])
    with pytest.raises(ValueError, match=r"Invalid t.stride\[0\] on argument #0 .*expected to be divisible by 8"):
        f(np.zeros((3, 20), np.float16)[:, :16], dst)


@cute.kernel
def _copy2d_kernel(t: cute.Tensor, out: cute.Tensor):
    i = cute.arch.thread_idx()[0]
    for j in range(t.shape[1]):
        out[i, j] = t[i, j]


@cute.jit
def device_free_copy(t: cute.Tensor, out: cute.Tensor):
    _copy2d_kernel(t, out).launch(grid=(1, 1, 1), block=(t.shape[0], 1, 1))


@cute.jit
def add_one_invalid_launch(a: cute.Tensor, b: cute.Tensor):
    # Deliberately past the 1024 threads a block may have.
    device_add_one(a, b).launch(grid=(1, 1, 1), block=(4096, 1, 1))


def test_a_failed_launch_is_a_runtime_error():
    a = np.zeros(10, np.float32)
    f = cute.compile(add_one_invalid_launch, from_dlpack(a, enable_tvm_ffi=True), from_dlpack(a, enable_tvm_ffi=True),
                     options=FFI)
    with pytest.raises(RuntimeError, match="launched with 4096 threads per block; at most 1024 are allowed"):
        f(a, a)


def test_from_dlpack_under_the_environment_variable(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_ENABLE_TVM_FFI", "1")
    a, b = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    a_cute, b_cute = from_dlpack(a), from_dlpack(b)
    f = cute.compile(add_one, a_cute, b_cute, options="--target cpu")
    assert isinstance(f, tvm_ffi.Function)
    f(a_cute, b_cute)
    np.testing.assert_array_equal(b, a + 1)


# ---- the chapter's torch examples (GPU) ------------------------------------------------------

@pytest.mark.gpu
def test_torch_tensors_streams_and_env_stream():
    torch = pytest.importorskip("torch")
    f = cute.compile(add_one, *fake_pair(), options="--enable-tvm-ffi")
    a = torch.arange(10, dtype=torch.float32, device="cuda")
    b = torch.empty(10, dtype=torch.float32, device="cuda")
    f(a, b)
    torch.testing.assert_close(b, a + 1)
    g = cute.compile(add_one_with_stream, *fake_pair(), make_fake_stream(), options="--enable-tvm-ffi")
    s = torch.cuda.Stream()
    b.zero_()
    g(a, b, s)
    s.synchronize()
    torch.testing.assert_close(b, a + 1)
    e = cute.compile(add_one_with_stream, *fake_pair(), make_fake_stream(use_tvm_ffi_env_stream=True),
                     options="--enable-tvm-ffi")
    b.zero_()
    with torch.cuda.stream(s):
        e(a, b)
    s.synchronize()
    torch.testing.assert_close(b, a + 1)


@pytest.mark.gpu
def test_torch_tuples_kwargs_and_errors():
    torch = pytest.importorskip("torch")
    a = torch.arange(10, dtype=torch.float32, device="cuda")
    b = torch.empty(10, dtype=torch.float32, device="cuda")
    f = cute.compile(add_one_with_tuple, (*fake_pair(), cute.Float32(4)), options="--enable-tvm-ffi")
    f((a, b, 5))
    torch.testing.assert_close(b, a + 5)
    k = cute.compile(add_constant, *fake_pair(), options="--enable-tvm-ffi")
    k(a, b, offset=4)
    torch.testing.assert_close(b, a + 4)
    n = cute.sym_int(divisibility=16)
    c = cute.compile(add_one, *fake_pair(n, assumed_align=16), options="--enable-tvm-ffi")
    x, y = torch.zeros(128, device="cuda"), torch.zeros(128, device="cuda")
    with pytest.raises(ValueError, match=r"expected to match a.shape\[0\]"):
        c(x, y[:126])
    with pytest.raises(ValueError, match="Mismatched a.device_type"):
        c(torch.zeros(128), y)


@pytest.mark.gpu
def test_cuda_error_is_a_runtime_error():
    torch = pytest.importorskip("torch")
    a = torch.zeros((10,), dtype=torch.float32, device="cuda")
    b = torch.zeros((10,), dtype=torch.float32, device="cuda")
    f = cute.compile(add_one_invalid_launch, from_dlpack(a, enable_tvm_ffi=True), from_dlpack(b, enable_tvm_ffi=True),
                     options="--enable-tvm-ffi")
    with pytest.raises(RuntimeError, match="CUDA Error"):
        f(a, b)


# ---- NVIDIA's example files, unchanged, where the shared examples folder is present -----------

def _nvidia_example(relative):
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for base in (os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(root, "..", "shared", "nvidia-examples"),
                 os.path.join(root, "..", "..", "shared", "nvidia-examples")):
        path = os.path.join(base, relative)
        if base and os.path.exists(path):
            return path
    pytest.skip(f"NVIDIA's {relative} is not present (set OPENCUTE_NVIDIA_EXAMPLES)")


def _run_example(relative, tmp_path):
    import os
    import subprocess
    import sys
    path = _nvidia_example(relative)
    # The same `cutlass` this test process imports (the installed package, or PYTHONPATH's).
    return subprocess.run([sys.executable, path], capture_output=True, text=True, cwd=str(tmp_path),
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))


def test_nvidia_compile_with_fake_tensor(tmp_path):
    p = _run_example("dsl_tutorials/tvm_ffi/compile_with_fake_tensor.py", tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["tensor<ptr<f16, gmem> o (3,4):(4,1)>",
                                     "tensor<ptr<f16, gmem> o (3,?{div=8}):(?{i64 div=8},1)>",
                                     "tensor<ptr<f16, gmem> o (3,?{div=8}):(4,1)>",
                                     "tensor<ptr<f16, gmem> o (3,?{div=8}):(?{div=8},1)>",
                                     "tensor<ptr<f16, gmem> o (3,?{div=8}):(?{i64 div=8},1)>"]


@pytest.mark.gpu
def test_nvidia_jit_and_use_in_torch(tmp_path):
    p = _run_example("dsl_tutorials/tvm_ffi/jit_and_use_in_torch.py", tmp_path)
    assert p.returncode == 0, p.stderr
    assert "tensor([ 1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10.], device='cuda:0')" in p.stdout
    assert "tensor([ 2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11.], device='cuda:0')" in p.stdout


@pytest.mark.gpu
def test_nvidia_error_reporting(tmp_path):
    p = _run_example("dsl_tutorials/tvm_ffi/error_reporting.py", tmp_path)
    assert p.returncode != 0
    assert ("ValueError: Mismatched a.shape[0] on argument #0 when calling: `add_one(a: Tensor([10], float32), "
            "b: Tensor([10], float32))`, expected 10") in p.stderr


@pytest.mark.gpu
def test_nvidia_dataclass_immutable(tmp_path):
    p = _run_example("dsl_tutorials/dataclass_immutable.py", tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith("PASS")


@pytest.mark.gpu
def test_nvidia_torch_fake_tensor(tmp_path):
    p = _run_example("dsl_tutorials/torch_fake_tensor.py", tmp_path)
    assert p.returncode == 0, p.stderr


@cute.jit
def add_scalars(a: cutlass.Int32, b: cutlass.Float32):
    return a + b


def test_scalar_arguments_and_result():
    f = cute.compile(add_scalars, 1, 2.0, options=FFI)
    assert f.signature == "add_scalars(a: int32, b: float32)"
    assert f(2, 3.5) == 5.5
    assert f(b=1.25, a=4) == 5.25
    assert f(True, 1) == 2.0  # bools and ints convert like Python's
    with pytest.raises(TypeError) as e:
        f(1.5, 1.0)  # a float for an integer parameter
    assert str(e.value) == ("Mismatched type on argument #0 when calling: `add_scalars(a: int32, b: float32)`, "
                            "expected int32")


@cute.kernel
def _iota_kernel(t: cute.Tensor):
    i = cute.arch.thread_idx()[0]
    t[i] = i * 1.0


@cute.jit
def iota_with_shape(buf: cute.Tensor, shape: cute.Shape):
    t = cute.make_tensor(buf.iterator, cute.make_layout(shape))
    _iota_kernel(t).launch(grid=(1, 1, 1), block=(cute.size(shape), 1, 1))


def test_shapes_as_tuples_or_tvm_ffi_shapes():
    f = cute.compile(iota_with_shape, make_fake_compact_tensor(cute.Float32, (cute.sym_int(),)), (2, 4), options=FFI)
    sig = "`iota_with_shape(buf: Tensor([n0], float32), shape: Tuple[int32, int32])`"
    assert f.signature == sig.strip("`")
    buf = np.zeros(16, np.float32)
    f(buf, (2, 3))
    np.testing.assert_array_equal(buf[:8], [0, 1, 2, 3, 4, 5, 0, 0])
    f(buf, tvm_ffi.Shape((3, 3)))
    np.testing.assert_array_equal(buf[:10], [0, 1, 2, 3, 4, 5, 6, 7, 8, 0])
    with pytest.raises(TypeError) as e:
        f(buf, tvm_ffi.Shape((3,)))
    assert str(e.value) == f"Mismatched type on argument #1 when calling: {sig}, expected Tuple[int32, int32]"
