"""cute.runtime.from_dlpack, mark_layout_dynamic and mark_compact_shape_dynamic against the
examples and error messages of the CuTe DSL page "Integration with Frameworks". numpy arrays
are built with the page's shapes and strides (torch's DLPack export gives size-1 modes stride
1, so `b` is built that way); the torch versions run where torch is installed."""
import re

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


def strided(shape, stride, dtype=np.float32):
    """A numpy view with the given shape and element strides over a buffer large enough for it."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    base = np.zeros(span, dtype=dtype)
    item = base.itemsize
    return np.lib.stride_tricks.as_strided(base, shape, tuple(s * item for s in stride))


def page_a():
    return strided((8, 4, 16, 2), (2, 16, 64, 1))  # torch.empty(16, 4, 8, 2).permute(2, 1, 0, 3)


def page_b():
    return strided((1, 4, 1, 32, 1), (1, 1, 1, 4, 1))  # torch.empty(32, 1, 1, 1, 4).permute(3, 4, 1, 0, 2)


def page_c():
    return strided((2, 2), (8, 2))  # torch.empty(3, 4)[::2, ::2] as the page writes it


def page_d():
    return strided((3, 4, 2, 5), (5, 0, 0, 1))  # torch.empty(3, 1, 1, 5).expand(3, 4, 2, 5)


def layout_of(t):
    return re.fullmatch(r"Tensor<0x[0-9a-f]{16}@\w+ o (.*)>", str(t)).group(1)


# ---- from_dlpack ------------------------------------------------------------------------------

def test_from_dlpack_is_static_and_prints_documented_format():
    x = np.zeros((30, 20), dtype=np.float32)
    y = from_dlpack(x)
    assert y.shape == (30, 20)
    assert y.stride == (20, 1)
    assert str(y.memspace) == "generic"
    assert y.memspace == cute.AddressSpace.generic
    assert y.element_type is cutlass.Float32
    assert str(y) == f"Tensor<0x{x.ctypes.data:016x}@generic o (30, 20):(20, 1)>"
    assert y.layout == "(30,20):(20,1)"
    assert y.dynamic_shapes_mask == (0, 0) and y.dynamic_strides_mask == (0, 0)


def test_from_dlpack_reports_element_types_and_byte_strides_in_elements():
    x = np.zeros((4, 6), dtype=np.int16)[:, ::2]
    y = from_dlpack(x)
    assert y.element_type is cutlass.Int16
    assert y.stride == (6, 2)
    assert from_dlpack(np.zeros(3, dtype=np.float64)).element_type is cutlass.Float64


def test_from_dlpack_checks_assumed_align():
    base = np.zeros(64, dtype=np.float32)
    aligned = base[(-base.ctypes.data // 4) % 8:][:16]  # 32-byte aligned start
    assert aligned.ctypes.data % 32 == 0
    assert from_dlpack(aligned, assumed_align=32).assumed_align == 32
    assert from_dlpack(aligned).assumed_align == 4  # natural alignment of Float32
    with pytest.raises(cute.runtime.TensorSpecError, match=r"data pointer 0x[0-9a-f]{16} is not aligned to "
                                                             r"assumed_align=32 bytes") as e:
        from_dlpack(aligned[1:], assumed_align=32)
    assert e.value.filename == __file__
    with pytest.raises(ValueError, match="assumed_align must be a positive power of two, got 24"):
        from_dlpack(aligned, assumed_align=24)


def test_element_type_setter_retypes_same_width_storage_only():
    t = from_dlpack(np.zeros(4, dtype=np.uint16))
    t.element_type = cutlass.Float16
    assert t.element_type is cutlass.Float16
    with pytest.raises(TypeError, match="widths differ"):
        t.element_type = cutlass.Float32


def test_unsupported_sources_are_rejected():
    with pytest.raises(TypeError, match="no DLPack-compatible metadata"):
        from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="unsupported tensor element type complex64"):
        from_dlpack(np.zeros(2, dtype=np.complex64))


# ---- mark_layout_dynamic ----------------------------------------------------------------------

def test_mark_layout_dynamic_page_examples():
    assert layout_of(from_dlpack(page_a()).mark_layout_dynamic()) == "(?,?,?,?):(?,?,?,1)"
    assert layout_of(from_dlpack(page_b()).mark_layout_dynamic(leading_dim=0)) == "(?,?,?,?,?):(1,?,?,?,?)"
    assert layout_of(from_dlpack(page_b()).mark_layout_dynamic(leading_dim=2)) == "(?,?,?,?,?):(?,?,1,?,?)"
    assert layout_of(from_dlpack(page_c()).mark_layout_dynamic()) == "(?,?):(?,?)"
    assert layout_of(from_dlpack(page_d()).mark_layout_dynamic()) == "(?,?,?,?):(?,0,0,1)"
    # b: several unit strides, only mode 1 longer than 1, so it leads.
    t5 = from_dlpack(page_b()).mark_layout_dynamic()
    assert layout_of(t5) == "(?,?,?,?,?):(?,1,?,?,?)"
    assert t5.leading_dim == 1


def test_mark_layout_dynamic_negative_leading_dim():
    t = from_dlpack(strided((2, 2, 3, 4), (12, 4, 2, 1))).mark_layout_dynamic(leading_dim=-1)
    assert t.layout == "(?,?,?,?):(?,?,?,1)"


def test_mark_layout_dynamic_page_errors():
    with pytest.raises(ValueError, match=re.escape("Can't deduce the leading dimension from layout (multiple "
                                                   "dimensions have stride 1 but none has size > 1)")):
        from_dlpack(np.ones((1, 1, 1), dtype=np.float32)).mark_layout_dynamic()
    with pytest.raises(cutlass.DSLRuntimeError, match=re.escape("Expected strides[leading_dim] == 1, but got 16")):
        from_dlpack(page_a()).mark_layout_dynamic(leading_dim=1)
    with pytest.raises(ValueError, match=re.escape("Expected strides[leading_dim] == 1, but got 4")) as e:
        from_dlpack(page_b()).mark_layout_dynamic(leading_dim=3)
    assert e.value.filename == __file__


def test_int32_stride_overflow_is_refused():
    # The page's c = torch.empty(1000000000, 1000000000): never touched, so a view over one float is enough.
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=np.float32), (1000000000, 1000000000), (4000000000, 4))
    message = "Layout in DLTensorWrapper has int32 overflow risk. Please set use_32bit_stride to False."
    with pytest.raises(ValueError, match=re.escape(message)):
        from_dlpack(huge, use_32bit_stride=True).mark_layout_dynamic()
    with pytest.raises(ValueError, match=re.escape(message)):
        from_dlpack(huge, use_32bit_stride=True).mark_compact_shape_dynamic(mode=0, divisibility=1)
    assert from_dlpack(huge).mark_layout_dynamic().layout == "(?,?):(?,1)"  # 64-bit strides are fine


# ---- mark_compact_shape_dynamic ---------------------------------------------------------------

def test_mark_compact_shape_dynamic_page_examples():
    a, b = page_a(), page_b()
    assert layout_of(from_dlpack(a).mark_compact_shape_dynamic(mode=0, divisibility=2)) == \
        "(?{div=2},4,16,2):(2,?{div=4},?{div=16},1)"
    assert layout_of(from_dlpack(a).mark_compact_shape_dynamic(mode=1, divisibility=2)) == \
        "(8,?{div=2},16,2):(2,16,?{div=32},1)"
    t2 = from_dlpack(a).mark_compact_shape_dynamic(mode=1, divisibility=2).mark_compact_shape_dynamic(
        mode=3, divisibility=2)
    assert layout_of(t2) == "(8,?{div=2},16,?{div=2}):(?{div=2},?{div=16},?{div=32},1)"
    t3 = from_dlpack(b).mark_compact_shape_dynamic(mode=2, divisibility=1, stride_order=(3, 0, 2, 4, 1))
    assert layout_of(t3) == "(1,4,?,32,1):(0,1,4,?{div=4},0)"
    t4 = from_dlpack(b).mark_compact_shape_dynamic(mode=2, divisibility=1, stride_order=(2, 3, 4, 0, 1))
    assert layout_of(t4) == "(1,4,?,32,1):(0,1,128,4,0)"


@pytest.mark.parametrize("call, message", [
    (lambda a, b: a.mark_compact_shape_dynamic(mode=1, divisibility=2).mark_compact_shape_dynamic(
        mode=3, divisibility=2).mark_compact_shape_dynamic(mode=3, divisibility=5, stride_order=(0, 1, 2, 3)),
     "The stride_order is not consistent with the last stride_order"),
    (lambda a, b: a.mark_compact_shape_dynamic(mode=3, divisibility=5, stride_order=(0, 1, 2, 3)),
     "The stride_order is not consistent with the deduced stride_order"),
    (lambda a, b: b.mark_compact_shape_dynamic(mode=0, divisibility=4),
     "The layout could not be deduced, please specify the stride_order explicitly"),
    (lambda a, b: b.mark_compact_shape_dynamic(mode=30, divisibility=5, stride_order=(3, 0, 2, 4, 1)),
     "Expected mode value to be in range [0, 5), but got 30"),
    (lambda a, b: b.mark_compact_shape_dynamic(mode=3, divisibility=5, stride_order=(2, 1, 2, 3, 4)),
     "Expected stride_order to contain all the dimensions of the tensor, but it doesn't contain 0."),
    (lambda a, b: b.mark_compact_shape_dynamic(mode=3, divisibility=5, stride_order=(0, 1, 2, 3, 4, 5)),
     "Expected stride_order to have 5 elements, but got 6."),
    (lambda a, b: b.mark_compact_shape_dynamic(mode=0, divisibility=4, stride_order=(3, 2, 4, 0, 1)),
     "The shape(1) of mode(0) is not divisible by the divisibility(4)"),
    (lambda a, b: b.mark_compact_shape_dynamic(mode=0, divisibility=1, stride_order=(2, 1, 3, 0, 4)),
     "The stride_order is not consistent with the layout"),
])
def test_mark_compact_shape_dynamic_page_errors(call, message):
    a, b = from_dlpack(page_a()), from_dlpack(page_b())
    with pytest.raises(ValueError, match=re.escape(message)):
        call(a, b)


def test_mark_compact_shape_dynamic_refuses_non_compact_layouts():
    with pytest.raises(ValueError, match=r"The layout \(2, 2\):\(8, 2\) is not compact"):
        from_dlpack(page_c()).mark_compact_shape_dynamic(mode=0)


def test_failed_mark_leaves_the_tensor_unchanged():
    t = from_dlpack(page_a())
    with pytest.raises(ValueError, match=r"The shape\(4\) of mode\(1\) is not divisible by the divisibility\(3\)"):
        t.mark_compact_shape_dynamic(mode=1, divisibility=3)
    assert t.layout == "(8,4,16,2):(2,16,64,1)"


# ---- torch versions (the page's own code) -----------------------------------------------------

def test_page_examples_with_torch():
    torch = pytest.importorskip("torch")
    a = torch.empty(16, 4, 8, 2).permute(2, 1, 0, 3)
    b = torch.empty(32, 1, 1, 1, 4).permute(3, 4, 1, 0, 2)
    c = torch.empty(3, 4)[::2, ::2]
    d = torch.empty(3, 1, 1, 5).expand(3, 4, 2, 5)
    assert layout_of(from_dlpack(a).mark_layout_dynamic()) == "(?,?,?,?):(?,?,?,1)"
    assert layout_of(from_dlpack(b).mark_layout_dynamic(leading_dim=0)) == "(?,?,?,?,?):(1,?,?,?,?)"
    assert layout_of(from_dlpack(c).mark_layout_dynamic()) == "(?,?):(?,?)"
    assert layout_of(from_dlpack(d).mark_layout_dynamic()) == "(?,?,?,?):(?,0,0,1)"
    with pytest.raises(ValueError, match=re.escape("Expected strides[leading_dim] == 1, but got 4")):
        from_dlpack(b).mark_layout_dynamic(leading_dim=3)
    assert layout_of(from_dlpack(a).mark_compact_shape_dynamic(mode=0, divisibility=2)) == \
        "(?{div=2},4,16,2):(2,?{div=4},?{div=16},1)"
    assert layout_of(from_dlpack(b).mark_compact_shape_dynamic(mode=2, divisibility=1,
                                                               stride_order=(2, 3, 4, 0, 1))) == \
        "(1,4,?,32,1):(0,1,128,4,0)"
    with pytest.raises(ValueError, match=re.escape("The shape(1) of mode(0) is not divisible by the divisibility(4)")):
        from_dlpack(b).mark_compact_shape_dynamic(mode=0, divisibility=4, stride_order=b.dim_order())
    x = torch.randn(30, 20)
    y = from_dlpack(x)
    assert (y.shape, y.stride, str(y.memspace), y.element_type) == ((30, 20), (20, 1), "generic", cutlass.Float32)
    assert str(y) == f"Tensor<0x{x.data_ptr():016x}@generic o (30, 20):(20, 1)>"


@pytest.mark.gpu
def test_cuda_tensors_are_gmem():
    torch = pytest.importorskip("torch")
    x = torch.zeros(8, 4, device="cuda")
    assert str(from_dlpack(x).memspace) == "gmem"
    assert "@gmem o " in str(from_dlpack(x))
