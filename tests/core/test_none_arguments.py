"""A None argument at compile time is a compile-time value (cta_norm.py's `bias=None` for RMS
norm): the compiled function, in the default ABI and with TVM-FFI, takes the full argument list
with None there (dropped) as well as the runtime arguments alone; a value where None was compiled,
or None where a value was compiled, is a clear error. Kernels run on the CPU emulator against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._dsl.errors import DSLUserCodeError
from cutlass.cute.runtime import from_dlpack

N = 40


@cute.kernel
def scale_shift_kernel(mY: cute.Tensor, mX: cute.Tensor, mWeight: cute.Tensor, mBias, eps: cutlass.Float32):
    i = cute.arch.block_idx()[0] * 32 + cute.arch.thread_idx()[0]
    if i < mX.shape[0]:
        if cutlass.const_expr(mBias is None):
            mY[i] = mX[i] * mWeight[i] + eps
        else:
            mY[i] = mX[i] * mWeight[i] + mBias[i] + eps


class ScaleShift:
    """A norm-like callable object in cta_norm's shape: (self, y, x, weight, bias, eps=default)."""

    @cute.jit
    def __call__(self, mY, mX, mWeight, mBias, eps: cutlass.Float32 = 0.5):
        scale_shift_kernel(mY, mX, mWeight, mBias, eps).launch(grid=((mX.shape[0] + 31) // 32, 1, 1),
                                                               block=(32, 1, 1))


def _arrays(seed):
    rng = np.random.default_rng(seed)
    x, w, b = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    return np.zeros(N, np.float32), x, w, b


def _compile(options, y, x, w, b, tvm):
    wrap = (lambda a: from_dlpack(a, enable_tvm_ffi=True)) if tvm else from_dlpack
    return cute.compile(ScaleShift(), wrap(y), wrap(x), wrap(w), None if b is None else wrap(b), options=options)


ABIS = [pytest.param(False, id="default_abi"), pytest.param(True, id="tvm_ffi")]


def _options(tvm):
    if tvm:
        pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
        return "--enable-tvm-ffi --target cpu"
    return "--target cpu"


@pytest.mark.parametrize("tvm", ABIS)
def test_none_at_compile_time_may_be_passed_again_at_call_time(tvm):
    y, x, w, _ = _arrays(0)
    f = _compile(_options(tvm), y, x, w, None, tvm)
    f(y, x, w, None, 0.25)  # cta_norm's call: the full argument list
    np.testing.assert_allclose(y, x * w + 0.25, rtol=1e-6)
    if tvm:  # TVM-FFI functions take trailing defaults (the default ABI takes every runtime argument)
        f(y, x, w, None)
        np.testing.assert_allclose(y, x * w + 0.5, rtol=1e-6)
    f(y, x, w, 0.125)  # the runtime arguments alone, as before
    np.testing.assert_allclose(y, x * w + 0.125, rtol=1e-6)


@pytest.mark.parametrize("tvm", ABIS)
def test_a_value_where_none_was_compiled_is_refused(tvm):
    y, x, w, b = _arrays(1)
    f = _compile(_options(tvm), y, x, w, None, tvm)
    error = TypeError if tvm else DSLUserCodeError
    message = "expected None: the function was compiled with None there" if tvm else \
        r"argument #4 \(mBias\) was compiled as None"
    with pytest.raises(error, match=message):
        f(y, x, w, b, 0.25)
    assert not y.any()  # nothing ran


@pytest.mark.parametrize("tvm", ABIS)
def test_with_a_bias_the_bias_is_a_runtime_argument(tvm):
    y, x, w, b = _arrays(2)
    f = _compile(_options(tvm), y, x, w, b, tvm)
    f(y, x, w, b, 0.25)
    np.testing.assert_allclose(y, x * w + b + 0.25, rtol=1e-6)


def test_none_where_a_tensor_was_compiled_is_refused_by_name():
    y, x, w, b = _arrays(3)
    f = _compile(_options(False), y, x, w, b, False)
    with pytest.raises(DSLUserCodeError, match=r"runtime argument #4 \(mBias\) is None, but the function was "
                                               "compiled with a value there"):
        f(y, x, w, None, 0.25)
    assert not y.any()


def test_none_where_a_tensor_was_compiled_is_a_type_error_with_tvm_ffi():
    y, x, w, b = _arrays(4)
    f = _compile(_options(True), y, x, w, b, True)
    with pytest.raises(TypeError, match="Mismatched type on argument #3"):
        f(y, x, w, None, 0.25)
    assert not y.any()


def test_the_tvm_ffi_signature_names_the_none_parameter_and_keywords_may_leave_it_out():
    y, x, w, _ = _arrays(5)
    f = _compile(_options(True), y, x, w, None, True)
    assert "mBias: None" in f.signature
    f(y, x, w, eps=0.75)
    np.testing.assert_allclose(y, x * w + 0.75, rtol=1e-6)
    f(y, x, w, mBias=None, eps=1.0)
    np.testing.assert_allclose(y, x * w + 1.0, rtol=1e-6)


# ---- a tuple of Python ints for a `tuple` parameter: compile-time, and may be passed again --------
# (NVIDIA's nvfp4 tutorials compile with their problem size (m, n, k, l) and call with it again.)

@cute.kernel
def _offset_kernel(mY: cute.Tensor, mX: cute.Tensor, add: cutlass.Constexpr, mBias):
    i = cute.arch.thread_idx()[0]
    if cutlass.const_expr(mBias is None):
        mY[i] = mX[i] + add
    else:
        mY[i] = mX[i] + add + mBias[i]


@cute.jit
def _offset(mY: cute.Tensor, mX: cute.Tensor, sizes: tuple, mBias):
    n, add = sizes
    _offset_kernel(mY, mX, add, mBias).launch(grid=(1, 1, 1), block=(n, 1, 1))


def test_a_static_tuple_may_be_passed_again_at_call_time():
    y, x = np.zeros(N, np.float32), np.arange(N, dtype=np.float32)
    f = cute.compile(_offset, y, x, (N, 3), None, options="--target cpu")
    f(y, x, (N, 3), None)  # every argument, as compiled
    np.testing.assert_array_equal(y, x + 3)
    y[:] = 0
    f(y, x)  # the runtime arguments only
    np.testing.assert_array_equal(y, x + 3)
    y[:] = 0
    f(y, x, None)  # the runtime arguments and the None one, the tuple left out
    np.testing.assert_array_equal(y, x + 3)
    with pytest.raises(DSLUserCodeError, match=r"argument #3 \(sizes\) was compiled as \(40, 3\), a compile-time value; "
                                               r"pass the same value, or compile the function again for \(40, 4\)"):
        f(y, x, (N, 4), None)
    with pytest.raises(DSLUserCodeError, match=r"compiled function takes 2 runtime arguments \(or all 4 of the "
                                               r"function's\), got 5"):
        f(y, x, (N, 3), None, None)
