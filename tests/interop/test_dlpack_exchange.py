"""Tensors offering DLPack's C exchange table (`__dlpack_c_exchange_api__`, as torch >= 2.10
does) are read by the compiled call and the direct call in C++ from the DLTensor the table's
function fills. CI has no torch: `_core._testing_dlpack_exchange_api()` provides the table over
numpy memory, and the class below answers the traced path's torch-style questions."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import _core
import toolchain

_DLPACK_TYPES = {np.dtype(np.float32): (2, 32), np.dtype(np.float64): (2, 64), np.dtype(np.int32): (0, 32)}


class ExchangeTensor:
    """A torch-like tensor over a numpy array, read through the exchange table."""
    __dlpack_c_exchange_api__ = _core._testing_dlpack_exchange_api()

    def __init__(self, array, device_type=1, strides=True):
        self._array = array
        code, bits = _DLPACK_TYPES[array.dtype]
        stride = [s // array.itemsize for s in array.strides]
        self._dlpack_view = _core._DLPackView(array.ctypes.data, list(array.shape), stride if strides else [],
                                              code, bits, device_type)
        self.shape = array.shape
        self.dtype = array.dtype.name  # what str() of a torch dtype gives, less "torch."
        self.is_cuda = device_type == 2

    def data_ptr(self):
        return self._array.ctypes.data

    def stride(self):
        return tuple(s // self._array.itemsize for s in self._array.strides)


@cute.kernel
def _axpy_kernel(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    i = b * 64 + t
    if i < x.shape[0]:
        out[i] = x[i] * 2.0 + y[i]


@cute.jit
def axpy(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor):
    _axpy_kernel(x, y, out).launch(grid=((x.shape[0] + 63) // 64, 1, 1), block=(64, 1, 1))


@pytest.fixture(autouse=True)
def _cpu(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    # These tests count traces: an earlier run's trace-key entries on disk would skip them.
    monkeypatch.setenv("OPENCUTE_DISABLE_TRACE_KEY_CACHE", "1")


def _arrays(n, dtype=np.float32):
    rng = np.random.default_rng(n)
    return rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype), np.full(n, np.nan, dtype)


def test_compiled_call_reads_exchange_tensors(monkeypatch):
    x, y, out = _arrays(200)
    compiled = cute.compile(axpy, ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(out))

    def no_python(*_):
        raise AssertionError("the call read the tensor through Python")

    for name in ("data_ptr", "stride"):  # the call reads the DLTensor only
        monkeypatch.setattr(ExchangeTensor, name, no_python)
    compiled(ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(out))
    np.testing.assert_array_equal(out, x * 2.0 + y)
    # another length: the extent is read from the DLTensor at call time
    x, y, out = _arrays(77)
    compiled(ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(out, strides=False))  # null strides: compact
    np.testing.assert_array_equal(out, x * 2.0 + y)


def test_exchange_tensors_are_checked_like_any_other():
    x, y, out = _arrays(64)
    compiled = cute.compile(axpy, ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(out))
    with pytest.raises(TypeError, match="argument #1 .*has element type float64 but the function was compiled for "
                                        "float32"):
        compiled(ExchangeTensor(x), ExchangeTensor(y.astype(np.float64)), ExchangeTensor(out))
    with pytest.raises(cutlass.DSLUserCodeError, match="is in GPU memory"):
        compiled(ExchangeTensor(x), ExchangeTensor(y, device_type=2), ExchangeTensor(out))
    with pytest.raises(ValueError, match="argument #0 has layout"):
        compiled(ExchangeTensor(x.reshape(8, 8)), ExchangeTensor(y), ExchangeTensor(out))
    with pytest.raises(ValueError, match="argument #2 has layout"):  # the unit stride is compiled in
        compiled(ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(np.zeros(128, np.float32)[::2]))
    assert np.isnan(out).all()  # nothing ran


def test_direct_calls_key_exchange_tensors():
    x, y, out = _arrays(100)
    axpy(ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(out))
    np.testing.assert_array_equal(out, x * 2.0 + y)
    traced = axpy.direct_call_stats["traced"]
    x, y, out = _arrays(33)
    axpy(ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(out))
    np.testing.assert_array_equal(out, x * 2.0 + y)
    assert axpy.direct_call_stats["traced"] == traced
    x, y, out = _arrays(50, np.float64)
    axpy(ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(out))
    np.testing.assert_array_equal(out, x * 2.0 + y)
    assert axpy.direct_call_stats["traced"] == traced + 1


# The compiled call checks exchange tensors inline (runtime/argument_contract.h, read_dltensor) and only a tensor
# that fails goes to the full check: every kind of mismatch must still raise, with the message a
# numpy array with the same layout gets.
def _constrained_axpy():
    from cutlass.cute.runtime import make_fake_compact_tensor
    n = cute.sym_int(divisibility=16)
    fakes = [make_fake_compact_tensor(cute.Float32, (n,), assumed_align=16) for _ in range(3)]
    return cute.compile(axpy, *fakes, options="--target cpu")


def _raised(f, args):
    try:
        f(*args)  # one line for both calls: messages name the caller's line
    except Exception as e:
        return e
    raise AssertionError("the call did not raise")


def _mismatched(case, base, x, y, out):
    """axpy's arguments (x and y views of `base`) with the one mismatch `case` names (x, y, out
    themselves for "device", which the caller marks on the exchange tensor)."""
    args = [x, y, out]
    if case == "dtype":
        args[1] = y.astype(np.float64)
    elif case == "rank":
        args[0] = x.reshape(4, 16)
    elif case == "static_stride":
        args[2] = np.zeros(128, np.float32)[::2]
    elif case == "divisibility":
        args = [a[:48 + 2] for a in args]
    elif case == "alignment":
        args[0] = base[1:65]
    elif case == "shared_symbol":
        args[1] = np.zeros(80, np.float32)
    return args


@pytest.mark.parametrize("case", ["dtype", "device", "rank", "static_stride", "divisibility", "alignment",
                                  "shared_symbol"])
def test_every_mismatch_raises_the_numpy_message(case):
    f = _constrained_axpy()
    base = np.zeros(160, np.float32)
    x, y, out = base[:64], base[64:128].copy(), np.full(64, np.nan, np.float32)
    args = _mismatched(case, base, x, y, out)
    device_type = [1, 1, 2] if case == "device" else [1, 1, 1]
    through_exchange = _raised(f, [ExchangeTensor(a, device_type=d) for a, d in zip(args, device_type)])
    if case == "device":  # a numpy array cannot be in GPU memory: the message is the documented one
        assert "argument #2 (out) is in GPU memory" in str(through_exchange)
    else:
        through_numpy = _raised(f, args)
        assert type(through_exchange) is type(through_numpy)
        assert str(through_exchange) == str(through_numpy)
    assert np.isnan(out).all()  # nothing ran
    f(*(ExchangeTensor(a) for a in (x, y, out)))  # and the good call still runs
    np.testing.assert_array_equal(out, x * 2.0 + y)


# A GPU-target program reads an exchange tensor's check and parameters in one step
# (TensorRead, runtime/argument_contract.h: read_dltensor), which the emulator's path above does not take.
# Launches discarded, the same bad arguments must raise what the emulator's path raises, in both
# ABIs, and good ones must reach the (discarded) launch.
@pytest.mark.parametrize("abi", ["default", "tvm-ffi"])
@pytest.mark.parametrize("case", ["dtype", "rank", "static_stride", "divisibility", "alignment", "shared_symbol"])
def test_the_gpu_path_raises_what_the_emulator_path_raises(case, abi):
    from cutlass.cute.runtime import make_fake_compact_tensor
    if abi == "tvm-ffi":
        pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    # One symbol shared by the three extents only where the case is about it, so that each other
    # case fails on its own rule alone.
    one = cute.sym_int(divisibility=16)
    symbols = [one] * 3 if case == "shared_symbol" else [cute.sym_int(divisibility=16) for _ in range(3)]
    fakes = [make_fake_compact_tensor(cute.Float32, (s,), assumed_align=16) for s in symbols]
    ffi = " --enable-tvm-ffi" if abi == "tvm-ffi" else ""
    on_cpu = cute.compile(axpy, *fakes, options="--target cpu" + ffi)
    toolchain.require_cubin()
    on_gpu = cute.compile(axpy, *fakes, options="--target gpu" + ffi)
    program = on_gpu._compiled if abi == "tvm-ffi" else on_gpu
    program._discard_launches = True
    base = np.zeros(160, np.float32)
    x, y, out = base[:64], base[64:128].copy(), np.zeros(64, np.float32)
    args = _mismatched(case, base, x, y, out)
    bad = [ExchangeTensor(a) for a in args]
    from_gpu_path, from_cpu_path = _raised(on_gpu, bad), _raised(on_cpu, bad)
    assert type(from_gpu_path) is type(from_cpu_path)
    assert str(from_gpu_path) == str(from_cpu_path)
    assert program._discarded_launches == 0
    good = [ExchangeTensor(a) for a in (x, y, out)]
    on_gpu(*good)
    assert program._discarded_launches == 1


def test_exchange_reads_are_timed_through_the_table():
    arrays = _arrays(8)
    tensors = [ExchangeTensor(a) for a in arrays]
    before, _ = _core._testing_dlpack_exchange_counts()
    ns = _core._time_dlpack_exchange_reads(tensors, 10)
    after, _ = _core._testing_dlpack_exchange_counts()
    assert after - before == 30  # every tensor, every pass, through the table's function
    assert ns > 0
    with pytest.raises(ValueError, match="without DLPack's C exchange table"):
        _core._time_dlpack_exchange_reads([np.zeros(4, np.float32)], 1)
