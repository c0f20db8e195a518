"""cute.runtime.make_ptr and cute.Pointer parameters: bypassing DLPack as the CuTe DSL's
call_bypass_dlpack example does, here with numpy buffers on the CPU emulator."""
import ctypes
import re

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._dsl.jit import _traced_tensor
from cutlass.cute.runtime import make_ptr


@pytest.fixture(autouse=True)
def on_the_emulator(monkeypatch):
    # The kernels here read numpy (host) memory, which only the CPU emulator can.
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")


def aligned_zeros(n, dtype, align):
    """A zeroed numpy array of n elements whose data starts at a multiple of `align` bytes."""
    item = np.dtype(dtype).itemsize
    base = np.zeros(n + align // item, dtype=dtype)
    skip = (-base.ctypes.data % align) // item
    return base[skip:skip + n]


def test_address_space_enum():
    assert cutlass.AddressSpace is cute.AddressSpace
    assert [int(s) for s in cute.AddressSpace] == [0, 1, 3, 4, 5, 6, 7]
    assert [str(s) for s in cute.AddressSpace] == ["generic", "gmem", "smem", "cmem", "rmem", "tmem", "dsmem"]


def test_make_ptr_attributes_and_printing():
    p = make_ptr(cutlass.Float16, 0x1000, cute.AddressSpace.gmem, assumed_align=32)
    assert str(p) == "Ptr<0x0000000000001000@gmem>"
    assert p.type_string() == "ptr<f16, gmem, align<32>>"
    assert (p.dtype, p.value_type, p.memspace, p.alignment) == (cutlass.Float16, cutlass.Float16,
                                                                 cute.AddressSpace.gmem, 32)
    assert isinstance(p, cute.Pointer)
    default = make_ptr(cutlass.Float32, 0x1000)
    assert (default.memspace, default.alignment) == (cute.AddressSpace.generic, 4)


def test_runtime_pointer_arithmetic_moves_by_elements_and_tracks_alignment():
    p = make_ptr(cutlass.Float16, 0x1000, cute.AddressSpace.gmem, assumed_align=32)
    q = p + 3
    assert int(q) == 0x1006 and q.alignment == 2
    assert int(q - 3) == 0x1000
    assert (p + 16).alignment == 32


def test_make_ptr_accepts_ctypes_pointers():
    buf = (ctypes.c_float * 4)()
    p = make_ptr(cutlass.Float32, ctypes.cast(buf, ctypes.c_void_p))
    assert int(p) == ctypes.addressof(buf)


def test_make_ptr_errors():
    with pytest.raises(ValueError, match=r"make_ptr: the address 0x0000000000001004 is not aligned to "
                                         r"assumed_align=16 bytes"):
        make_ptr(cutlass.Float32, 0x1004, assumed_align=16)
    with pytest.raises(TypeError, match="dtype must be a cutlass numeric type"):
        make_ptr(np.float32, 0x1000)
    with pytest.raises(TypeError, match="address must be an int or a ctypes pointer"):
        make_ptr(cutlass.Float32, "0x1000")
    with pytest.raises(ValueError, match="is not an AddressSpace"):
        make_ptr(cutlass.Float32, 0x1000, 2)


@cute.kernel
def axpb_kernel(x: cute.Tensor, y: cute.Tensor):
    i, _, _ = cute.arch.block_idx()
    j, _, _ = cute.arch.thread_idx()
    y[i, j] = x[i, j] * 2.0 + 1.0


@cute.jit
def axpb_from_pointers(x_ptr: cute.Pointer, y_ptr: cute.Pointer, m: cutlass.Int32, n: cutlass.Int32):
    print(x_ptr, x_ptr.value_type, x_ptr.memspace, x_ptr.alignment)
    x = _traced_tensor(x_ptr._value, x_ptr.value_type, (m, n), (n, 1), x_ptr.memspace, x_ptr.alignment)
    y = _traced_tensor(y_ptr._value, y_ptr.value_type, (m, n), (n, 1), y_ptr.memspace, y_ptr.alignment)
    axpb_kernel(x, y).launch(grid=(m, 1, 1), block=(n, 1, 1))


def test_kernel_reads_and_writes_through_pointers(capsys):
    m, n = 3, 8
    x = aligned_zeros(m * n, np.float32, 16)
    x[:] = np.arange(m * n, dtype=np.float32)
    y = aligned_zeros(m * n, np.float32, 16)
    axpb_from_pointers(make_ptr(cutlass.Float32, x.ctypes.data, assumed_align=16),
                       make_ptr(cutlass.Float32, y.ctypes.data, assumed_align=16), m, n)
    np.testing.assert_array_equal(y, x * 2 + 1)
    assert capsys.readouterr().out == "ptr<f32, generic, align<16>> Float32 generic 16\n"


def test_compiled_pointer_function_checks_pointer_type_and_alignment():
    x = aligned_zeros(16, np.float32, 16)
    y = aligned_zeros(16, np.float32, 16)
    px = make_ptr(cutlass.Float32, x.ctypes.data, assumed_align=16)
    py = make_ptr(cutlass.Float32, y.ctypes.data, assumed_align=16)
    compiled = cute.compile(axpb_from_pointers, px, py, 2, 8)
    x[:] = 1.0
    compiled(px, py, 2, 8)
    np.testing.assert_array_equal(y, [3.0] * 16)
    wrong_type = make_ptr(cutlass.Int32, x.ctypes.data, assumed_align=16)
    with pytest.raises(cutlass.DSLRuntimeError, match=re.escape("argument #0 is Ptr<0x") + ".*" +
                       re.escape("but the function was compiled for ptr<f32, generic, align<16>>")) as e:
        compiled(wrong_type, py, 2, 8)
    assert e.value.filename == __file__
    wrong_align = make_ptr(cutlass.Float32, x.ctypes.data + 4, assumed_align=4)
    with pytest.raises(cutlass.DSLRuntimeError, match="compiled for ptr<f32, generic, align<16>>"):
        compiled(wrong_align, py, 2, 8)


def test_pointer_annotation_rejects_other_values():
    with pytest.raises(cutlass.DSLRuntimeError, match=r"expects argument #1 \(x_ptr\) to be .*Pointer"):
        axpb_from_pointers(np.zeros(4, np.float32), np.zeros(4, np.float32), 2, 2)


def test_traced_pointer_arithmetic(capsys):
    @cute.jit
    def show(p: cute.Pointer):
        q = p + 4
        print(q, q.alignment, isinstance(q, cute.Pointer))

    show(make_ptr(cutlass.Float16, 0x1000, cute.AddressSpace.gmem, assumed_align=32))
    assert capsys.readouterr().out == "ptr<f16, gmem, align<8>> 8 True\n"


def test_tmem_pointers_cannot_be_arguments_yet():
    with pytest.raises(cutlass.DSLRuntimeError, match="a tmem pointer cannot be passed to a jit function yet"):
        axpb_from_pointers(make_ptr(cutlass.Float32, 16, cute.AddressSpace.tmem),
                           make_ptr(cutlass.Float32, 16, cute.AddressSpace.tmem), 1, 1)


def test_pointer_keeps_the_value_it_was_made_from():
    # NVIDIA's cooperative_launch.py frees `ptr._pointer` with cudaFree.
    buf = np.zeros(4, np.uint32)
    p = cute.runtime.make_ptr(cutlass.Uint32, buf.ctypes.data, cute.AddressSpace.gmem)
    assert p._pointer == buf.ctypes.data
