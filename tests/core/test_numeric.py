"""Numeric proxies: promotion, static folding, conversions (no GPU needed)."""
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Float16, Float32, Float64, BFloat16, Int8, Int16, Int32, Int64, Uint8, Uint32, Uint64


@pytest.mark.parametrize("a,b,expected", [
    (Int32, Float32, Float32), (Int32, Float16, Float32), (Int64, Float32, Float64), (Int8, Float16, Float16),
    (BFloat16, Float16, Float16), (Float16, Float32, Float32), (Int8, Int32, Int32), (Uint8, Int32, Int32),
    (Uint32, Int32, Uint32), (Uint64, Int32, Uint64), (Int16, Uint8, Int16), (Boolean, Int32, Int32),
    (Float64, Float32, Float64),
])
def test_promotion_rules(a, b, expected):
    assert cutlass._core.promote(a.__name__, b.__name__) == expected.__name__
    assert type(a(1) + b(1)) is expected
    assert type(b(1) * a(1)) is expected


def test_static_folding_uses_python_semantics():
    assert (Int32(7) // Int32(-2)).value == -4
    assert (Int32(-7) % Int32(2)).value == 1
    assert (Int32(2) + 3).value == 5 and type(Int32(2) + 3) is Int32
    assert type(Int32(10) / Int32(4)) is Float32 and (Int32(10) / Int32(4)).value == 2.5
    assert (Int32(10) > Int32(3)).value is True and type(Int32(10) > 3) is Boolean
    assert (~Int32(10)).value == -11 and (-Int32(10)).value == -10
    assert (Int32(10) & Int32(3)).value == 2


def test_conversions_wrap_and_truncate():
    assert Int8(300).value == 44
    assert Int32(300).to(Int8).value == 44
    assert Float32(3.14).to(Int32).value == 3
    assert Int32(-1).to(Uint32).value == 0xFFFFFFFF
    assert Float16(0.1).value == pytest.approx(0.0999755859375)
    assert Boolean(5).value is True
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        Int32(float("nan"))
    with pytest.raises(OverflowError, match="cannot convert float infinity to integer"):
        Int32(float("inf"))


def test_int32_overflow_wraps():
    assert (Int32(2**31 - 1) + 1).value == -(2**31)


def test_printing_of_scalars():
    assert str(Int32(5)) == "?"
    assert str(type(Int32(5))) == "Int32"
    assert repr(Int32(5)) == "Int32(5)"
    assert cutlass.dtype("Float16") is Float16
    with pytest.raises(TypeError, match="can't interpret 'Float17' as data type"):
        cutlass.dtype("Float17")


def test_bool_of_dynamic_value_raises():
    @cute.jit
    def f(a: Int32):
        if cutlass.const_expr(bool(a)):
            pass

    with pytest.raises(cutlass.DSLRuntimeError, match=r"error\[PHASE_DYNAMIC_TO_STATIC_BOOL\]: a dynamic value cannot "
                                                      "be converted to a Python bool at trace time"):
        f(1)


def test_bitwise_on_float_raises():
    with pytest.raises(cutlass.DSLUserCodeError, match=r"error\[TYPE_BITWISE_FLOAT\]: bitwise operators need integer "
                                                       "operands, got Float32 and Float32"):
        Float32(1.0) & Float32(2.0)


def test_type_properties():
    assert Int32.width == 32 and Float16.width == 16 and Boolean.width == 1
    assert Int8.min == -128 and Uint8.max == 255
    assert Float32.is_float and not Int32.is_float


def test_float8_e4m3_is_a_type_of_its_own_that_kernels_cannot_hold_yet():
    # NVIDIA's mixed-input decode refuses `kv_dtype is cutlass.Float8E4M3` (IEEE-style, with
    # infinities) in favour of Float8E4M3FN; the name must exist and differ from the FN type.
    assert cutlass.Float8E4M3 is not cutlass.Float8E4M3FN
    assert issubclass(cutlass.Float8E4M3, cutlass.Float) and str(cutlass.Float8E4M3) == "Float8E4M3"
    assert cutlass.dtype("Float8E4M3") is cutlass.Float8E4M3
    with pytest.raises(ValueError, match="can't interpret 'Float8E4M3' as data type"):
        cutlass.Float8E4M3.width
