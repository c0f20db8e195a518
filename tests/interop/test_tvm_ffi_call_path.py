"""The Python call of a TVM-FFI compiled function reads tensors that offer DLPack's C exchange
table (torch >= 2.10; here `_core._testing_dlpack_exchange_api()` over numpy memory) into
DLTensors itself, with Python scalars, None and tuples of those, and calls the compiled callback
without tvm-ffi's per-tensor conversion into owned ffi.Tensor objects; any other argument takes
tvm-ffi's own path. Both paths must give the same results and the same errors, word for word."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import _core
from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

tvm_ffi = pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")

FFI = "--enable-tvm-ffi --target cpu"
_DLPACK_TYPES = {np.dtype(np.float32): (2, 32), np.dtype(np.float64): (2, 64), np.dtype(np.int32): (0, 32)}


class ExchangeTensor:
    """A torch-like tensor over a numpy array that offers only DLPack's C exchange table."""
    __dlpack_c_exchange_api__ = _core._testing_dlpack_exchange_api()

    def __init__(self, array, device_type=1):
        self._array = array
        code, bits = _DLPACK_TYPES[array.dtype]
        self._dlpack_view = _core._DLPackView(array.ctypes.data, list(array.shape),
                                              [s // array.itemsize for s in array.strides], code, bits, device_type)


def conversions():
    """(DLTensor fills, owned DLManagedTensorVersioned conversions) of the testing table so far."""
    return _core._testing_dlpack_exchange_counts()


@cute.kernel
def _axpy_kernel(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor, alpha: cutlass.Float32):
    i = cute.arch.block_idx()[0] * 64 + cute.arch.thread_idx()[0]
    if i < x.shape[0]:
        out[i] = x[i] * alpha + y[i]


@cute.jit
def axpy(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor, alpha: cutlass.Float32 = cutlass.Float32(2)):
    _axpy_kernel(x, y, out, alpha).launch(grid=((x.shape[0] + 63) // 64, 1, 1), block=(64, 1, 1))


def fake_vectors(k, **kw):
    n = cute.sym_int(**({"divisibility": kw.pop("divisibility")} if "divisibility" in kw else {}))
    return [make_fake_compact_tensor(cute.Float32, (n,), **kw) for _ in range(k)]


def arrays(n, dtype=np.float32):
    rng = np.random.default_rng(n)
    return rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype), np.full(n, np.nan, dtype)


def call_both_ways(f, make_args, kwargs=None):
    """Calls `f` on fresh arguments through our path and through tvm-ffi's; returns both outcomes
    (the result or the exception's type and text) and the conversions each made."""
    outcomes = []
    for fast in (True, False):
        state = f.__dict__.pop("_opencute_state") if not fast else None
        try:
            args = make_args()
            before = conversions()
            try:
                outcome = ("ok", f(*args, **(kwargs or {})), args)
            except Exception as e:  # noqa: BLE001 - compared below
                outcome = ("raised", type(e), str(e))
            after = conversions()
            outcomes.append((outcome, (after[0] - before[0], after[1] - before[1])))
        finally:
            if state is not None:
                f._opencute_state = state
    return outcomes


def test_exchange_tensors_skip_tvm_ffi_conversion_and_compute_the_same():
    f = cute.compile(axpy, *fake_vectors(3), cutlass.Float32(2), options=FFI)
    x, y, _ = arrays(200)

    def make_args():
        return ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(np.full(200, np.nan, np.float32)), 3.0

    (fast, fast_counts), (slow, slow_counts) = call_both_ways(f, make_args)
    assert fast[0] == slow[0] == "ok" and fast[1] is None and slow[1] is None
    for outcome in (fast, slow):
        np.testing.assert_array_equal(outcome[2][2]._array, x * np.float32(3) + y)
    assert fast_counts == (3, 0)  # three DLTensors filled in place, nothing owned
    assert slow_counts == (0, 3)  # tvm-ffi made an owned tensor of each


def test_keywords_and_defaults_take_the_fast_path():
    f = cute.compile(axpy, *fake_vectors(3), cutlass.Float32(2), options=FFI)
    x, y, out = arrays(70)
    before = conversions()
    f(ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(out))  # the default alpha
    np.testing.assert_array_equal(out, x * np.float32(2) + y)
    f(out=ExchangeTensor(out), y=ExchangeTensor(y), x=ExchangeTensor(x), alpha=0.5)
    np.testing.assert_array_equal(out, x * np.float32(0.5) + y)
    after = conversions()
    assert (after[0] - before[0], after[1] - before[1]) == (6, 0)


def test_mixed_arguments_fall_back_whole_and_agree():
    f = cute.compile(axpy, *fake_vectors(3), cutlass.Float32(2), options=FFI)
    x, y, out = arrays(64)
    before = conversions()
    f(ExchangeTensor(x), y, ExchangeTensor(out), 1.0)  # a numpy array: tvm-ffi's path for the call
    np.testing.assert_array_equal(out, x + y)
    after = conversions()
    assert after[1] - before[1] == 2  # tvm-ffi converted both exchange tensors (ours may have read one first)


SIG = ("`axpy(x: Tensor([n0], float32), y: Tensor([n0], float32), out: Tensor([n0], float32), "
       "alpha: float32)`")


@pytest.mark.parametrize("case", ["dtype", "shape_match", "divisibility", "alignment", "type", "count", "scalar",
                                  "device", "ndim"])
def test_errors_are_the_same_word_for_word(case):
    f = cute.compile(axpy, *fake_vectors(3, divisibility=4, assumed_align=16), cutlass.Float32(2), options=FFI)
    x, y, out = (a.copy() for a in arrays(65))

    def make_args():
        t = ExchangeTensor
        good = [t(x[:64]), t(y[:64]), t(out[:64]), 1.0]
        if case == "dtype":
            good[1] = t(y[:64].astype(np.float64))
        elif case == "shape_match":
            good[2] = t(out[:60])
        elif case == "divisibility":
            good = [t(x[:62]), t(y[:62]), t(out[:62]), 1.0]
        elif case == "alignment":
            good[0] = t(x[1:65])
        elif case == "type":
            good[1] = 7
        elif case == "count":
            good = good[:2]
        elif case == "scalar":
            good[3] = None
        elif case == "device":
            good[2] = t(out[:64], device_type=2)
        elif case == "ndim":
            good[0] = t(x[:64].reshape(8, 8))
        return good

    (fast, _), (slow, _) = call_both_ways(f, make_args)
    assert fast[0] == "raised", fast
    assert fast == slow
    assert fast[2].endswith(("expected float32", "expected to match x.shape[0]", "expected to be divisible by 4",
                             "expected data alignment=16 bytes", "expected Tensor", f"{SIG}",
                             "expected cpu (this function's kernels run on the CPU emulator)", "expected 1"))
    assert np.isnan(out).all()  # nothing ran


@cute.jit
def sum_tuple(values: tuple, scale: cutlass.Float32):
    return (values[0].shape[0] + values[1]) * scale


def test_tuples_of_tensors_and_scalars_and_results():
    f = cute.compile(sum_tuple, (make_fake_compact_tensor(cute.Float32, (cute.sym_int(),)), cutlass.Int32(1)),
                     cutlass.Float32(1), options=FFI)
    x = np.zeros(10, np.float32)
    (fast, fc), (slow, sc) = call_both_ways(f, lambda: ((ExchangeTensor(x), 5), 2.0))
    assert fast[1] == slow[1] == 30.0
    assert fc == (1, 0) and sc == (0, 1)
    (fast, _), (slow, _) = call_both_ways(f, lambda: ((ExchangeTensor(x),), 2.0))
    assert fast[0] == "raised" and fast == slow
    assert fast[2].endswith("expected Tuple[Tensor([n0], float32), int32]")
    # lists pass as tuples, as through tvm-ffi
    assert f([ExchangeTensor(x), 1], True) == 11.0


@cute.jit
def add_with_env_stream(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor, stream):
    _axpy_kernel(x, y, out, cutlass.Float32(1)).launch(grid=((x.shape[0] + 63) // 64, 1, 1), block=(64, 1, 1),
                                                       stream=stream)


def test_environment_stream_functions_take_the_fast_path():
    f = cute.compile(add_with_env_stream, *fake_vectors(3), make_fake_stream(use_tvm_ffi_env_stream=True),
                     options=FFI)
    x, y, _ = arrays(33)
    (fast, fc), (slow, sc) = call_both_ways(
        f, lambda: (ExchangeTensor(x), ExchangeTensor(y), ExchangeTensor(np.zeros(33, np.float32))))
    for outcome in (fast, slow):
        np.testing.assert_array_equal(outcome[2][2]._array, x + y)
    assert fc == (3, 0) and sc == (0, 3)


def test_skip_switch_turns_the_table_off(tmp_path):
    # TVM_FFI_SKIP_DLPACK_C_EXCHANGE_API=1 (tvm-ffi's switch) is read once per process.
    import os
    import subprocess
    import sys
    script = tmp_path / "skip.py"
    script.write_text(
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "import cutlass, cutlass.cute as cute\n"
        "from test_tvm_ffi_call_path import ExchangeTensor, axpy, fake_vectors, conversions, FFI\n"
        "f = cute.compile(axpy, *fake_vectors(3), cutlass.Float32(2), options=FFI)\n"
        "x = np.zeros(8, np.float32)\n"
        "try:\n"
        "    f(ExchangeTensor(x), ExchangeTensor(x), ExchangeTensor(x))\n"
        "except Exception as e:\n"
        "    print('raised', type(e).__name__)\n"
        "print('counts', *conversions())\n")
    env = dict(os.environ, TVM_FFI_SKIP_DLPACK_C_EXCHANGE_API="1", PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300).stdout
    # Neither we nor tvm-ffi read the table; tvm-ffi cannot convert a type that offers nothing else.
    assert "counts 0 0" in out and "raised" in out, out


@pytest.mark.gpu
def test_torch_tensors_take_the_fast_path_and_agree():
    # Both paths, one function: the same results and the same errors with torch CUDA tensors.
    torch = pytest.importorskip("torch")
    # tvm-ffi (imported above) installs the table on older torch when torch-c-dlpack-ext is there.
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        pytest.skip("this torch offers no DLPack C exchange table (torch >= 2.10 or torch-c-dlpack-ext)")
    f = cute.compile(axpy, *fake_vectors(3, divisibility=4), cutlass.Float32(2), options="--enable-tvm-ffi")
    x = torch.randn(64, device="cuda")
    y = torch.randn(64, device="cuda")
    for fast in (True, False):
        out = torch.full((64,), float("nan"), device="cuda")
        state = None if fast else f.__dict__.pop("_opencute_state")
        try:
            f(x, y, out, 0.5)
            torch.cuda.synchronize()
            torch.testing.assert_close(out, x * 0.5 + y)
            f(x, y, out, alpha=1.5)
            torch.cuda.synchronize()
            torch.testing.assert_close(out, x * 1.5 + y)
            with pytest.raises(ValueError) as e:
                f(x, y[:62], out)
            assert str(e.value).startswith("Mismatched y.shape[0] on argument #1 when calling: `axpy(")
        finally:
            if state is not None:
                f._opencute_state = state

