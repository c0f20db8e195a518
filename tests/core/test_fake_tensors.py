"""Fake tensors and symbolic sizes (the seeds' "Compile with TVM FFI" chapter, fake tensor part):
`cute.sym_int` / `sym_int32` / `sym_int64`, `make_fake_compact_tensor`, `make_fake_tensor`,
`make_fake_stream`. A fake tensor describes a tensor for `cute.compile` only; a symbol shared by
two tensors is one run-time value, and a call checks that the tensors agree on it. These run with
the default ABI on the CPU emulator; tests/interop/test_tvm_ffi.py covers the TVM-FFI ABI."""
import re
import sys
from dataclasses import dataclass

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream, make_fake_tensor

CPU = "--target cpu"


@cute.kernel
def _add_one_kernel(a: cute.Tensor, b: cute.Tensor):
    tid = cute.arch.block_idx()[0] * 128 + cute.arch.thread_idx()[0]
    if tid < a.shape[0]:
        b[tid] = a[tid] + 1.0


@cute.jit
def add_one(a: cute.Tensor, b: cute.Tensor):
    n = a.shape[0]
    _add_one_kernel(a, b).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


@cute.jit
def print_tensor_type(t: cute.Tensor):
    print(t)


# ---- symbols ---------------------------------------------------------------------------------

def test_sym_int_prints_width_divisibility_and_symbol():
    assert str(cute.sym_int()) == "?"
    assert str(cute.sym_int(divisibility=16)) == "?{div=16}"
    assert str(cute.sym_int32(divisibility=8)) == "?{div=8}"
    assert str(cute.sym_int64()) == "?{i64}"
    assert str(cute.sym_int64(divisibility=8)) == "?{i64 div=8}"
    assert str(cute.sym_int(64, divisibility=4, symbol="k")) == "k?{i64 div=4}"
    assert isinstance(cute.sym_int(), cute.SymInt)


def test_sym_int_rejects_bad_width_and_divisibility():
    with pytest.raises(ValueError, match="width must be 32 or 64"):
        cute.sym_int(16)
    with pytest.raises(ValueError, match="divisibility must be a positive int"):
        cute.sym_int(divisibility=0)


def test_sym_int_arithmetic_propagates_divisibility():
    n = cute.sym_int(divisibility=8)
    assert (n * 4).divisibility == 32
    assert (3 * n).divisibility == 24
    assert (n // 4).divisibility == 2
    assert (n // 3).divisibility == 1
    assert (n % 12).divisibility == 4  # n % 12 is a multiple of gcd(8, 12)


# ---- fake tensors ----------------------------------------------------------------------------

def test_compact_fake_tensor_strides_follow_stride_order():
    # CuTe's convention: the mode with the smallest order is fastest; (0, 1, 2) is column-major.
    assert make_fake_compact_tensor(cutlass.Float32, (2, 3, 4)).stride == (1, 2, 6)
    row_major = make_fake_compact_tensor(cutlass.Float32, (2, 3, 4), stride_order=(2, 1, 0))
    assert row_major.stride == (12, 4, 1)
    assert str(row_major) == "FakeTensor<Float32, (2, 3, 4), (12, 4, 1)>"


def test_compact_fake_tensor_strides_after_a_symbol_are_symbols_with_divisibility():
    t = make_fake_compact_tensor(cutlass.Float16, (3, cute.sym_int32(divisibility=8)), stride_order=(1, 0))
    assert str(t) == "FakeTensor<Float16, (3, ?{div=8}), (?{i64 div=8}, 1)>"
    t = make_fake_compact_tensor(cutlass.Float16, (cute.sym_int(divisibility=4), 5, 7), use_32bit_stride=True)
    # strides: 1, then n (div 4), then 5n (div 20)
    assert str(t) == "FakeTensor<Float16, (?{div=4}, 5, 7), (1, ?{div=4}, ?{div=20})>"


def test_fake_tensor_reports_what_it_describes():
    n = cute.sym_int()
    t = make_fake_tensor(cutlass.Float32, (n, 4), (4, 1), assumed_align=16)
    assert t.shape == (n, 4) and t.stride == (4, 1)
    assert t.element_type is cutlass.Float32
    assert t.memspace == cute.AddressSpace.gmem
    assert t.assumed_align == 16
    assert str(t) == "FakeTensor<Float32, (?, 4), (4, 1)>"
    assert str(make_fake_tensor(cutlass.Int8, (5,), (1,))) == "FakeTensor<Int8, (5,), (1,)>"


def test_fake_tensor_refuses_data_access():
    t = make_fake_compact_tensor(cutlass.Float32, (4,))
    for access in (lambda: t.data_ptr, lambda: t.iterator, lambda: t[0], lambda: t.__dlpack__()):
        with pytest.raises(TypeError, match="a fake tensor has no data"):
            access()
    with pytest.raises(TypeError, match="a fake tensor has no data"):
        t[0] = 1.0


def test_fake_tensor_rejects_mismatched_ranks_and_bad_entries():
    with pytest.raises(ValueError, match="different ranks"):
        make_fake_tensor(cutlass.Float32, (2, 3), (1,))
    with pytest.raises(TypeError, match="ints or cute.sym_int"):
        make_fake_tensor(cutlass.Float32, (2.5,), (1,))
    with pytest.raises(ValueError, match="permutation"):
        make_fake_compact_tensor(cutlass.Float32, (2, 3), stride_order=(0, 0))


def test_fake_stream():
    s = make_fake_stream()
    assert str(s) == "FakeStream" and not s.use_tvm_ffi_env_stream
    assert make_fake_stream(use_tvm_ffi_env_stream=True).use_tvm_ffi_env_stream


@pytest.mark.parametrize("make, printed", [
    (lambda: make_fake_compact_tensor(cutlass.Float16, (3, 4), stride_order=(1, 0)),
     "tensor<ptr<f16, gmem> o (3,4):(4,1)>"),
    (lambda: make_fake_compact_tensor(cutlass.Float16, (3, cute.sym_int32(divisibility=8)), stride_order=(1, 0)),
     "tensor<ptr<f16, gmem> o (3,?{div=8}):(?{i64 div=8},1)>"),
    (lambda: make_fake_tensor(cutlass.Float16, (3, cute.sym_int32(divisibility=8)), stride=(4, 1)),
     "tensor<ptr<f16, gmem> o (3,?{div=8}):(4,1)>"),
    (lambda: make_fake_tensor(cutlass.Float16, (3, cute.sym_int32(divisibility=8)),
                              stride=(cute.sym_int32(divisibility=8), 1)),
     "tensor<ptr<f16, gmem> o (3,?{div=8}):(?{div=8},1)>"),
    (lambda: make_fake_tensor(cutlass.Float16, (3, cute.sym_int32(divisibility=8)),
                              stride=(cute.sym_int64(divisibility=8), 1)),
     "tensor<ptr<f16, gmem> o (3,?{div=8}):(?{i64 div=8},1)>"),
])
def test_compile_with_fake_tensor_traces_the_described_type(make, printed, capsys):
    # NVIDIA's dsl_tutorials/tvm_ffi/compile_with_fake_tensor.py, with the default ABI: compile only.
    cute.compile(print_tensor_type, make())
    assert capsys.readouterr().out.strip() == printed


# ---- shared symbols --------------------------------------------------------------------------

def _host_function_text(compiled):
    ir = compiled.__mlir__
    return ir[ir.index("func.func"):ir.index("\n", ir.index("func.func"))]


def test_a_shared_symbol_is_one_traced_value():
    n = cute.sym_int()
    f = cute.compile(add_one, make_fake_compact_tensor(cute.Float32, (n,)),
                     make_fake_compact_tensor(cute.Float32, (n,)), options=CPU)
    # Two pointers and ONE extent: b's extent is a's.
    host = _host_function_text(f)
    assert host.count(": !ptr<f32, gmem, align<4>>") == 2 and host.count(": i32") == 1, host
    g = cute.compile(add_one, make_fake_compact_tensor(cute.Float32, (cute.sym_int(),)),
                     make_fake_compact_tensor(cute.Float32, (cute.sym_int(),)), options=CPU)
    assert _host_function_text(g).count(": i32") == 2  # two symbols: two extents


def test_shared_symbol_runs_and_mismatch_raises():
    n = cute.sym_int()
    f = cute.compile(add_one, make_fake_compact_tensor(cute.Float32, (n,)),
                     make_fake_compact_tensor(cute.Float32, (n,)), options=CPU)
    a = np.arange(300, dtype=np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a + 1)
    with pytest.raises(ValueError, match=r"argument #1 \(b\): shape mode 0 is 299 but must equal shape mode 0 of "
                                         r"argument #0 \(300\)"):
        f(a, b[:299])


@cute.kernel
def _transpose_kernel(a: cute.Tensor, b: cute.Tensor):
    i = cute.arch.thread_idx()[0]
    j = cute.arch.block_idx()[0]
    b[j, i] = a[i, j]


@cute.jit
def transpose_square(a: cute.Tensor, b: cute.Tensor):
    _transpose_kernel(a, b).launch(grid=(a.shape[0], 1, 1), block=(a.shape[0], 1, 1))


def test_a_symbol_used_twice_in_one_tensor():
    n = cute.sym_int()
    fake = make_fake_compact_tensor(cute.Float32, (n, n), stride_order=(1, 0))
    f = cute.compile(transpose_square, fake, make_fake_compact_tensor(cute.Float32, (n, n), stride_order=(1, 0)),
                     options=CPU)
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a.T)
    with pytest.raises(ValueError, match=r"argument #0 \(a\): shape mode 1 is 3 but must equal shape mode 0"):
        f(np.zeros((4, 3), np.float32), np.zeros((4, 4), np.float32))


# ---- what the default ABI checks of fake-compiled functions ----------------------------------

def _constrained_add_one():
    n = cute.sym_int(divisibility=16)
    a = make_fake_compact_tensor(cute.Float32, (n,), assumed_align=16)
    b = make_fake_compact_tensor(cute.Float32, (n,), assumed_align=16)
    return cute.compile(add_one, a, b, options=CPU)


def test_default_abi_checks_divisibility_alignment_dtype_and_rank():
    f = _constrained_add_one()
    a, b = np.zeros(128, np.float32), np.zeros(128, np.float32)
    f(a, b)
    with pytest.raises(ValueError, match=r"shape mode 0 \(126\) is not divisible by 16"):
        f(a[:126], b[:126])
    a129, b129 = np.zeros(129, np.float32), np.zeros(129, np.float32)
    with pytest.raises(ValueError, match="is not aligned to the 16 bytes"):
        f(a129[1:], b129[1:])
    with pytest.raises(TypeError, match=r"has element type float64 but the function was compiled for float32"):
        f(a.astype(np.float64), b)
    with pytest.raises(ValueError, match=r"has layout \(2,64\):\(64,1\) but the function was compiled for"):
        f(a.reshape(2, 64), b)
    with pytest.raises(ValueError, match=r"argument #1 \(b\): shape mode 0 is 112 but must equal"):
        f(a, b[:112])


def test_default_abi_type_mismatch_raises():
    f = _constrained_add_one()
    with pytest.raises(Exception, match="expected a tensor argument"):
        f(np.zeros(16, np.float32), 1)


def test_tvm_ffi_option_without_the_package_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "tvm_ffi", None)  # import tvm_ffi now raises ImportError
    n = cute.sym_int()
    with pytest.raises(ImportError, match=r"pip install apache-tvm-ffi"):
        cute.compile(add_one, make_fake_compact_tensor(cute.Float32, (n,)), make_fake_compact_tensor(cute.Float32, (n,)),
                     options="--enable-tvm-ffi --target cpu")


# ---- NVIDIA's dsl_tutorials/dataclass_immutable.py on the emulator ---------------------------

@dataclass(frozen=True)
class CopyParams:
    num_threads: int
    src: cute.Tensor
    dst: cute.Tensor


@cute.kernel
def _memcpy_kernel(params: CopyParams, N: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    idx = bidx * params.num_threads + tidx
    if idx < N:
        params.dst[idx] = params.src[idx]


@cute.jit
def memcpy_jit(mSrc: cute.Tensor, mDst: cute.Tensor, num_threads: cutlass.Constexpr[int]):
    params = CopyParams(num_threads=num_threads, src=mSrc, dst=mDst)
    N = mSrc.shape[0]
    _memcpy_kernel(params, N).launch(grid=[cute.ceil_div(N, num_threads), 1, 1], block=[num_threads, 1, 1])


def test_frozen_dataclass_of_tensors_reaches_the_kernel():
    n = cute.sym_int64()
    src = make_fake_compact_tensor(cutlass.Float32, (n,), stride_order=(0,))
    dst = make_fake_compact_tensor(cutlass.Float32, (n,), stride_order=(0,))
    f = cute.compile(memcpy_jit, src, dst, num_threads=128, options=CPU)
    a = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(a, b)


# ---- NVIDIA's dsl_tutorials/torch_fake_tensor.py ---------------------------------------------

@cute.jit
def print_tensor(t: cute.Tensor):
    cute.print_tensor(t)


@pytest.mark.gpu
def test_torch_fake_tensor_mode_compiles_and_real_tensor_runs(capfd):
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode
    from cutlass.cute.runtime import from_dlpack
    with FakeTensorMode():
        fake = torch.zeros((3, 4), dtype=torch.float32)
        compiled = cute.compile(print_tensor, from_dlpack(fake))
    real = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    compiled(from_dlpack(real))
    out = capfd.readouterr().out
    assert re.search(r"\b11\.0", out) and re.search(r"\b0\.0", out), out
