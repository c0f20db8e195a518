"""cute.testing.convert(src, dst): dst's elements become src's converted to dst's element type
(fmha.py's output check), on the CPU emulator against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


def test_float32_to_float16_and_back():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5, 7)).astype(np.float32)
    h = np.zeros_like(a, dtype=np.float16)
    cute.testing.convert(a, h)
    np.testing.assert_array_equal(h, a.astype(np.float16))  # round to nearest even, as numpy
    back = np.zeros_like(a)
    cute.testing.convert(h, back)
    np.testing.assert_array_equal(back, a.astype(np.float16).astype(np.float32))


def test_strided_views_convert_element_by_coordinate():
    src = np.arange(6 * 4, dtype=np.int32).reshape(6, 4).T  # (4, 6), column-major
    dst = np.zeros((4, 6), np.float32)
    cute.testing.convert(src, dst)
    np.testing.assert_array_equal(dst, src.astype(np.float32))


def _e4m3_value(code):
    """The value of an E4M3 code, from the format (bias 7, no infinities)."""
    s, e, m = code >> 7, (code >> 3) & 15, code & 7
    v = m * 2.0 ** -9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if s else v


def test_float8_element_type_through_from_dlpack():
    # values E4M3 holds exactly (max 448, smallest normal 2^-6, a subnormal): no rounding to model
    values = np.array([0.0, 1.0, -2.5, 3.25, 448.0, -0.015625, 0.001953125, -96.0], np.float32)
    storage = np.zeros(values.shape, np.uint8)
    f8 = from_dlpack(storage)
    f8.element_type = cutlass.Float8E4M3FN
    cute.testing.convert(values, f8)
    np.testing.assert_array_equal([_e4m3_value(int(c)) for c in storage], values)
    out = np.full_like(values, np.nan)
    cute.testing.convert(f8, out)
    np.testing.assert_array_equal(out, values)


def test_shapes_must_match():
    with pytest.raises(cutlass.DSLUserCodeError, match="shapes differ"):
        cute.testing.convert(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float16))
    with pytest.raises(cutlass.DSLUserCodeError, match="two tensors"):
        cute.testing.convert(1.0, np.zeros(1, np.float16))


@pytest.mark.gpu
def test_convert_gpu_tensors():
    torch = pytest.importorskip("torch")
    a = torch.randn(4, 33, 5, device="cuda")
    h = torch.zeros_like(a, dtype=torch.float16)
    cute.testing.convert(from_dlpack(a), from_dlpack(h))
    torch.cuda.synchronize()
    torch.testing.assert_close(h, a.half(), rtol=0, atol=0)
