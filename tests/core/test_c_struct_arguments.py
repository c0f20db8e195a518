"""C structures as JIT arguments, in the style of NVIDIA's ffi/jit_argument.py (the seed's chapter
on custom JIT argument types): a user class describes its C storage with `__get_mlir_types__`
(LLVM struct and pointer types from `cutlass._mlir.dialects.llvm`), hands its address over with
`__c_pointers__`, and wraps the traced struct with `__new_from_mlir_values__`; the jit function
picks fields out with `llvm.extractvalue`. Structs here are ctypes structures (the example's are
made by a nanobind module; the last test builds that module when NVIDIA's examples are present).
Kernels run on the CPU emulator against numpy."""
import ctypes
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass._mlir import ir
from cutlass._mlir.dialects import llvm


class CTensor2D(ctypes.Structure):
    """struct { void* ptr; int32_t shape[2]; int32_t strides[2]; } (shape and strides as
    nested structs, as the example's MockTensor)."""

    class Int2(ctypes.Structure):
        _fields_ = [("v", ctypes.c_int32 * 2)]

    _fields_ = [("ptr", ctypes.c_void_p), ("shape", Int2), ("strides", Int2)]


class TensorStructValue(ir.Value):
    """The traced struct: fields through llvm.extractvalue, as the example's ExampleTensorValue."""

    @property
    def data_ptr(self):
        address = llvm.extractvalue(llvm.PointerType.get(), self, [0])
        return cute.make_ptr(cutlass.Float32, address)

    def _pair(self, field):
        i32 = ir.IntegerType.get_signless(32)
        pair = llvm.extractvalue(llvm.StructType.get_literal([i32] * 2), self, [field])
        return tuple(llvm.extractvalue(i32, pair, [i]) for i in range(2))

    @property
    def shape(self):
        return self._pair(1)

    @property
    def stride(self):
        return self._pair(2)


class StructTensor:
    """A view of a float32 matrix held by a C struct the function reads at call time."""

    def __init__(self, array):
        self.array = array
        self.c_struct = CTensor2D(array.ctypes.data, CTensor2D.Int2((array.shape[0], array.shape[1])),
                                  CTensor2D.Int2(tuple(s // array.itemsize for s in array.strides)))

    def __get_mlir_types__(self):
        i32 = ir.IntegerType.get_signless(32)
        pair = llvm.StructType.get_literal([i32] * 2)
        return [llvm.StructType.get_literal([llvm.PointerType.get(), pair, pair])]

    def __new_from_mlir_values__(self, values):
        return TensorStructValue(values[0])

    def __c_pointers__(self):
        return [ctypes.addressof(self.c_struct)]


@cute.kernel
def scale_rows_kernel(m: cute.Tensor, factor: cutlass.Float32):
    i, j, _ = cute.arch.thread_idx()
    if i < m.shape[0] and j < m.shape[1]:
        m[i, j] = m[i, j] * factor + cutlass.Float32(i)


@cute.jit
def scale_struct_tensor(t, factor: cutlass.Float32):
    m = cute.make_tensor(t.data_ptr, cute.make_layout(t.shape, stride=t.stride))
    scale_rows_kernel(m, factor).launch(grid=(1, 1, 1), block=(8, 8, 1))


def test_struct_fields_make_a_tensor_that_a_kernel_updates():
    a = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    want = a * 2 + np.arange(6, dtype=np.float32)[:, None]
    scale_struct_tensor(StructTensor(a), 2.0)
    np.testing.assert_array_equal(a, want)


def test_struct_is_read_at_call_time_not_baked_in():
    # One compiled function; the second call's struct has another pointer, shape and strides
    # (a transposed view): every field is a runtime value.
    compiled = cute.compile(scale_struct_tensor, StructTensor(np.zeros((2, 2), np.float32)), 1.0)
    a = np.ones((3, 4), np.float32)
    compiled(StructTensor(a), 3.0)
    np.testing.assert_array_equal(a, np.broadcast_to(3 + np.arange(3, dtype=np.float32)[:, None], (3, 4)))
    b = np.zeros((7, 4), np.float32).T  # shape (4, 7), strides (1, 4)
    b[:] = np.arange(28, dtype=np.float32).reshape(4, 7)
    want = b * 0.5 + np.arange(4, dtype=np.float32)[:, None]
    compiled(StructTensor(b), 0.5)
    np.testing.assert_array_equal(b, want)


class Mixed(ctypes.Structure):
    """Fields of every width with C padding between them: { int8; int64; float; int16; double; uint8 }."""
    _fields_ = [("a", ctypes.c_int8), ("b", ctypes.c_int64), ("c", ctypes.c_float), ("d", ctypes.c_int16),
                ("e", ctypes.c_double), ("f", ctypes.c_uint8)]


class MixedArg:
    def __init__(self, **fields):
        self.c = Mixed(**fields)

    def __get_mlir_types__(self):
        return [llvm.StructType.get_literal([cutlass.Int8.mlir_type, cutlass.Int64.mlir_type, ir.F32Type.get(),
                                             ir.IntegerType.get_signless(16), ir.F64Type.get(),
                                             ir.IntegerType.get_unsigned(8)])]

    def __new_from_mlir_values__(self, values):
        return values[0]

    def __c_pointers__(self):
        return [ctypes.addressof(self.c)]


@cute.jit
def unpack_mixed(s, out: cute.Tensor):
    for i in cutlass.range_constexpr(6):
        out[i] = cutlass.Float64(llvm.extractvalue(None, s, [i]))


def test_struct_fields_are_read_at_their_c_offsets():
    # The layout flatten_type computes must be ctypes' (the C compiler's) for the values to come out.
    assert [off for _, off in llvm.flatten_type(MixedArg().__get_mlir_types__()[0])] == \
        [getattr(Mixed, f).offset for f, _ in Mixed._fields_]
    out = np.zeros(6, np.float64)
    unpack_mixed(MixedArg(a=-5, b=-(1 << 40), c=1.5, d=-300, e=2.25, f=250), out)
    np.testing.assert_array_equal(out, [-5, -(1 << 40), 1.5, -300, 2.25, 250])


class TwoStructs:
    """Two pointers, two types: a scalar int32 and a struct, each from its own storage."""

    def __init__(self, n, pair):
        self.n = ctypes.c_int32(n)
        self.pair = CTensor2D.Int2(pair)

    def __get_mlir_types__(self):
        i32 = ir.IntegerType.get_signless(32)
        return [i32, llvm.StructType.get_literal([i32, i32])]

    def __new_from_mlir_values__(self, values):
        return values

    def __c_pointers__(self):
        return [ctypes.addressof(self.n), ctypes.addressof(self.pair)]


@cute.jit
def sum_two(v, out: cute.Tensor):
    n, pair = v
    out[0] = Int32(n) * 100 + llvm.extractvalue(None, pair, [0]) * 10 + llvm.extractvalue(None, pair, [1])


def test_several_c_pointers_each_with_its_own_type():
    out = np.zeros(1, np.int32)
    sum_two(TwoStructs(3, (4, 5)), out)
    assert out[0] == 345


def test_struct_argument_errors_name_the_problem():
    class TooBig(MixedArg):
        def __get_mlir_types__(self):
            return [llvm.StructType.get_literal([ir.F64Type.get()] * 4096)]

    with pytest.raises(cutlass.DSLUserCodeError, match="too large"):
        unpack_mixed(TooBig(), np.zeros(6, np.float64))

    class WrongField(MixedArg):
        pass

    @cute.jit
    def read_as_wrong_type(s, out: cute.Tensor):
        out[0] = cutlass.Float64(llvm.extractvalue(ir.IntegerType.get_signless(32), s, [2]))

    with pytest.raises(cutlass.DSLUserCodeError, match="not"):
        read_as_wrong_type(WrongField(), np.zeros(1, np.float64))


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_EXAMPLE_DIR = next((os.path.join(c, "dsl_tutorials", "ffi") for c in (
    os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(_ROOT, "..", "shared", "nvidia-examples"),
    os.path.join(_ROOT, "..", "..", "shared", "nvidia-examples")) if c and os.path.isdir(c)), "")


@pytest.mark.skipif(not os.path.exists(os.path.join(_EXAMPLE_DIR, "tensor.cpp")) or shutil.which("cmake") is None
                    or os.environ.get("OPENCUTE_BUILD_FFI_EXAMPLE") != "1",
                    reason="builds NVIDIA's ffi example module (~1 min on 2 cores): set OPENCUTE_BUILD_FFI_EXAMPLE=1 "
                           "(needs ../shared and cmake)")
def test_example_c_module_struct_through_jit_argument_protocol(tmp_path, capfd):
    """The example's own C module (built with its CMakeLists.txt) makes the struct; a jit function
    of ours reads it through the protocol and prints the tensor as the example's foo does."""
    pytest.importorskip("nanobind")
    build = tmp_path / "build"
    for cmd in (["cmake", "-B", str(build), os.path.abspath(_EXAMPLE_DIR), "-DCMAKE_BUILD_TYPE=Release"],
                ["cmake", "--build", str(build), "-j2"]):
        subprocess.run(cmd, check=True, capture_output=True)
    sys.path.insert(0, str(build))
    try:
        import tensor as example_tensor_module
    finally:
        sys.path.remove(str(build))

    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    capsule = example_tensor_module.make_tensor(x.ctypes.data, list(x.shape), [s // 4 for s in x.strides])
    address = example_tensor_module.pycapsule_get_pointer(capsule)

    class Rank3:
        def __get_mlir_types__(self):
            i32 = ir.IntegerType.get_signless(32)
            triple = llvm.StructType.get_literal([i32] * 3)
            return [llvm.StructType.get_literal([llvm.PointerType.get(), triple, triple])]

        def __new_from_mlir_values__(self, values):
            return values[0]

        def __c_pointers__(self):
            return [address]

    @cute.jit
    def show(s):
        i32 = ir.IntegerType.get_signless(32)
        triple = llvm.StructType.get_literal([i32] * 3)
        shape = tuple(llvm.extractvalue(i32, llvm.extractvalue(triple, s, [1]), [i]) for i in range(3))
        stride = tuple(llvm.extractvalue(i32, llvm.extractvalue(triple, s, [2]), [i]) for i in range(3))
        ptr = cute.make_ptr(cutlass.Float32, llvm.extractvalue(llvm.PointerType.get(), s, [0]))
        cute.printf("shape: {} stride: {}", shape, stride)
        t = cute.make_tensor(ptr, cute.make_layout(shape, stride=stride))
        cute.printf("last: {}", t[1, 2, 3])

    capfd.readouterr()
    show(Rank3())
    out = capfd.readouterr().out
    assert "shape: (2,3,4) stride: (12,4,1)" in out
    assert "last: 23.0" in out


@cute.kernel
def struct_view_kernel(t: TensorStructValue, out: cute.Tensor):
    # the struct view itself is the kernel argument (its leaves become kernel parameters)
    i, _, _ = cute.arch.thread_idx()
    m = cute.make_tensor(t.data_ptr, cute.make_layout(t.shape, stride=t.stride))
    out[i] = m[i, 1] + cutlass.Float32(t.shape[0] * 10)


@cute.jit
def pass_struct_view(t, out: cute.Tensor):
    struct_view_kernel(t, out).launch(grid=(1, 1, 1), block=(out.shape[0], 1, 1))


def test_struct_view_passes_to_a_kernel_through_the_value_protocol():
    a = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)
    out = np.zeros(4, np.float32)
    pass_struct_view(StructTensor(a), out)
    np.testing.assert_array_equal(out, a[:, 1] + 40)


@cute.jit
def sum_rows_in_loop(t, out: cute.Tensor, n: Int32):
    view = t
    acc = cutlass.Float32(0)
    for _ in range(n):
        m = cute.make_tensor(view.data_ptr, cute.make_layout(view.shape, stride=view.stride))
        acc = acc + m[0, 0]
        view = TensorStructValue(view._v)  # reassigned in the loop: carried as its leaves
    out[0] = acc


def test_struct_view_carried_through_a_dynamic_loop():
    a = np.full((2, 2), 1.5, np.float32)
    out = np.zeros(1, np.float32)
    sum_rows_in_loop(StructTensor(a), out, 4)
    assert out[0] == 6.0


def test_c_pointers_asked_once_per_call():
    class Counting(StructTensor):
        calls = 0

        def __c_pointers__(self):
            Counting.calls += 1
            return super().__c_pointers__()

    a = np.ones((2, 3), np.float32)
    compiled = cute.compile(scale_struct_tensor, Counting(a), 1.0)
    Counting.calls = 0
    compiled(Counting(a), 2.0)
    assert Counting.calls == 1  # one call for the struct's seven fields
    np.testing.assert_array_equal(a, np.broadcast_to(2 + np.arange(2, dtype=np.float32)[:, None], (2, 3)))
