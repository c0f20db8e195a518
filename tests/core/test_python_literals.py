"""How a Python int/float is typed when it meets a DSL value in arithmetic, a comparison or
cute.math: it takes the DSL operand's type when it is of the same kind (an int also with a
float type) and its value survives the conversion; otherwise it is an Int32 (Int64 when large)
or a Float32 and the usual promotion applies. That keeps `alpha * x` on a Float16 TensorSSA in
Float16, as NVIDIA's elementwise_apply `leaky_relu` (written for any `dtype`) needs for
`cute.where(x > 0, x, alpha * x)`.

numpy 2 types Python scalars the same way (NEP 50) for floats, so it is the reference for the
float values; the integer and fallback cases are hand-computed.
"""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import BFloat16, Boolean, Float16, Float32, Float64, Int8, Int32, Int64, Uint8
from cutlass.cute.tensor_ssa import TensorSSAError
from cutlass.cute.runtime import from_dlpack


def ssa(a, dtype):
    a = np.asarray(a)
    return cute.TensorSSA._from_values(a.shape, dtype, a.flatten(order="F").tolist())


def arr(v, dtype=None):
    return np.array([x.value for x in v._values()], dtype=dtype).reshape(v.shape, order="F")


# ---- TensorSSA with a Python scalar -----------------------------------------------------------

@pytest.mark.parametrize("dtype", [Float16, BFloat16, Float32, Float64])
def test_float_literal_takes_the_float_element_type(dtype):
    v = ssa([0.5, 2.0], dtype)
    for r in (v * 0.1, 0.1 * v, v + 1.5, 1.5 - v, v / 3.0, v ** 2.0):
        assert r.dtype is dtype


@pytest.mark.parametrize("dtype", [Float16, BFloat16, Float32])
def test_int_literal_with_a_float_tensor_takes_the_float_type(dtype):
    v = ssa([0.5, 2.0], dtype)
    assert (v + 1).dtype is dtype and (2 * v).dtype is dtype and (v > 0).dtype is Boolean


def test_float16_values_match_numpy_weak_scalars():
    a = np.array([0.1, -3.3, 7.7, 1000.0], dtype=np.float16)
    v = ssa(a, Float16)
    for got, ref in ((v * 0.1, a * 0.1), (v + 0.3, a + 0.3), (1.7 - v, 1.7 - a), (v * 3, a * 3)):
        assert ref.dtype == np.float16   # numpy keeps float16 too
        np.testing.assert_array_equal(arr(got, np.float16), ref)


def test_comparison_happens_in_the_element_type():
    # Float16(0.1) is 0.0999755859375: compared in Float16 it equals 0.1; in Float32 it would not.
    a = np.array([0.1, 0.2], dtype=np.float16)
    v = ssa(a, Float16)
    np.testing.assert_array_equal(arr(v >= 0.1), a >= 0.1)
    np.testing.assert_array_equal(arr(v >= 0.1), [True, True])
    np.testing.assert_array_equal(arr(v == 0.1), [True, False])


def test_float64_literal_keeps_double_precision():
    v = ssa([1.0], Float64)
    assert arr(v + 0.1)[0] == 1.0 + 0.1      # not 1.0 + float32(0.1)


def test_bfloat16_value_rounds_once():
    # bf16(0.1) = 0.10009765625; times 2 is exact in bf16.
    assert arr(ssa([2.0], BFloat16) * 0.1)[0] == 0.2001953125


@pytest.mark.parametrize("dtype", [Int8, Uint8, Int32, Int64])
def test_int_literal_takes_the_int_element_type(dtype):
    v = ssa([3, 100], dtype)
    r = v + 27
    assert r.dtype is dtype
    np.testing.assert_array_equal(arr(r), [30, 127])
    assert (v << 1).dtype is dtype and (v & 1).dtype is dtype and (v // 2).dtype is dtype


def test_literal_that_does_not_fit_uses_its_default_type():
    i8 = ssa([3, 100], Int8)
    assert (i8 + 300).dtype is Int32                      # 300 is not an Int8: Int8 + Int32
    np.testing.assert_array_equal(arr(i8 + 300), [303, 400])
    assert (ssa([1], Uint8) + -2).dtype is Int32          # -2 is not a Uint8
    assert arr(ssa([1], Uint8) + -2)[0] == -1
    assert arr(ssa([1], Uint8) - 2)[0] == 255             # 2 is: Uint8 arithmetic wraps
    assert (ssa([1], Int32) + 2**40).dtype is Int64       # 2**40 is an Int64
    h = ssa([2.0], Float16)
    assert (h * 1.0e6).dtype is Float32                   # 1e6 overflows Float16
    assert arr(h * 1.0e6)[0] == 2.0e6
    assert (h + 70000).dtype is Float32                   # Float16 + Int32
    assert arr(h + 70000)[0] == 70002.0


def test_literal_of_another_kind_uses_its_default_type():
    i = ssa([1, 2], Int32)
    assert (i + 0.5).dtype is Float32                     # Int32 + Float32
    np.testing.assert_array_equal(arr(i + 0.5), [1.5, 2.5])
    assert (ssa([1], Int64) * 0.5).dtype is Float64       # Int64 + Float32 -> the float of 64 bits
    b = ssa([True, False], Boolean)
    assert (b + 1).dtype is Int32                         # a literal never becomes a Boolean
    np.testing.assert_array_equal(arr(b + 1), [2, 1])


def test_dsl_scalars_are_not_literals():
    h = ssa([0.5], Float16)
    assert (h * Float32(0.5)).dtype is Float32
    assert (h * cutlass.as_numeric(0.5)).dtype is Float32   # as_numeric makes a Float32 value


def test_math_with_a_literal():
    h = ssa([0.5, -2.0], Float16)
    r = cute.math.copysign(h, -1.0)
    assert r.dtype is Float16
    np.testing.assert_array_equal(arr(r, np.float16), np.copysign(np.array([0.5, -2.0], np.float16), -1.0))


# ---- DSL scalars with a Python scalar ----------------------------------------------------------

def test_scalar_proxies_follow_the_same_rule():
    assert (Float16(1.5) * 0.5).dtype is Float16 and (Float16(1.5) * 0.5).value == 0.75
    assert (BFloat16(2.0) + 1).dtype is BFloat16
    assert (Int8(100) + 27).dtype is Int8 and (Int8(100) + 27).value == 127
    assert (Int8(100) + 300).dtype is Int32 and (Int8(100) + 300).value == 400
    assert (Int32(10) + 0.5).dtype is Float32
    assert (Float32(5.5) * 2).dtype is Float32 and (Float32(5.5) * 2).value == 11.0
    assert (Float16(0.1) >= 0.1).value is True
    assert cute.math.sqrt(Float16(4.0)).dtype is Float16
    assert cute.math.atan2(Float16(1.0), 1.0).dtype is Float16
    assert cute.math.exp(0.0).dtype is Float32          # only Python scalars: Float32


def test_dynamic_scalar_with_a_literal():
    seen = {}

    @cute.jit
    def f(x: Float16):
        y = x * 0.5 + 1
        seen["dtype"] = type(y)
        return y

    assert f(3.0) == 2.5
    assert seen["dtype"] is Float16


# ---- where stays strict: its scalars are typed values ------------------------------------------

def test_where_scalar_is_a_float32_value():
    h = ssa([1.0, -1.0], Float16)
    with pytest.raises(TensorSSAError, match="same dtype, got Float16 and Float32"):
        cute.where(h > 0, h, 0.0)
    np.testing.assert_array_equal(arr(cute.where(h > 0, h, cute.full_like(h, 0)), np.float16), [1.0, 0.0])


# ---- leaky_relu on Float16 / BFloat16 on the emulator ------------------------------------------

@cutlass.dsl_user_op
def leaky_relu(x, alpha, *, loc=None, ip=None):
    return cute.where(x > 0, x, alpha * x, loc=loc, ip=ip)


@cute.kernel
def _leaky_relu_kernel(src: cute.Tensor, dst: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    row_in, row_out = src[t, None], dst[t, None]
    row_out.store(leaky_relu(row_in.load(), 0.1))


@cute.jit
def _leaky_relu(src: cute.Tensor, dst: cute.Tensor):
    _leaky_relu_kernel(src, dst).launch(grid=(1, 1, 1), block=(src.shape[0], 1, 1))


def _inputs():
    # multiples of 1/8: exact in Float16 and BFloat16
    return (np.random.default_rng(3).integers(-64, 64, (16, 8)) / 8.0).astype(np.float32)


def test_leaky_relu_float16_on_the_emulator():
    a = _inputs().astype(np.float16)
    out = np.zeros_like(a)
    src, dst = from_dlpack(a), from_dlpack(out)
    cute.compile(_leaky_relu, src, dst, options="--target cpu")(src, dst)
    np.testing.assert_array_equal(out, np.where(a > 0, a, np.float16(0.1) * a))


def _to_bf16_bits(a):
    bits = np.asarray(a, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)   # round to nearest even


def _from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def test_leaky_relu_bfloat16_on_the_emulator():
    a = _inputs()
    a_bits, out_bits = _to_bf16_bits(a), np.zeros(a.shape, dtype=np.uint16)
    src, dst = from_dlpack(a_bits), from_dlpack(out_bits)
    src.element_type = BFloat16
    dst.element_type = BFloat16
    cute.compile(_leaky_relu, src, dst, options="--target cpu")(src, dst)
    alpha = _from_bf16_bits(_to_bf16_bits(np.float32(0.1)))
    ref = _from_bf16_bits(_to_bf16_bits(np.where(a > 0, a, alpha * a)))
    np.testing.assert_array_equal(_from_bf16_bits(out_bits), ref)
