"""Calling a @jit function directly: a call whose cached kernel is still valid skips the trace
(beyond the CuTe DSL, which traces every call), and everything the trace read — arguments'
specialisation, globals read by helpers, closure values, module and class attributes — makes
the next call trace again when it changes. Results are checked against numpy; the counters
show which path each call took."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._dsl.errors import DSLUserCodeError

SCALE = 2.0  # read two helper calls deep by `scaled`


def _inner_scale():
    return SCALE


def _outer_scale():
    return _inner_scale() + 0.0


class Offsets:
    BIAS = 1.0


class Opaque:  # an object a direct call cannot compare cheaply
    def __init__(self, v):
        self.v = v


OPAQUE = Opaque(5.0)


@cute.kernel
def scale_kernel(a: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    if t < a.shape[0]:
        out[t] = a[t] * _outer_scale() + Offsets.BIAS


@cute.jit
def scaled(a: cute.Tensor, out: cute.Tensor):
    scale_kernel(a, out).launch(grid=(1, 1, 1), block=(32, 1, 1))


@cute.kernel
def add_kernel(a: cute.Tensor, out: cute.Tensor, k: cutlass.Constexpr):
    t, _, _ = cute.arch.thread_idx()
    if t < a.shape[0]:
        out[t] = a[t] + k


@cute.jit
def add_const(a: cute.Tensor, out: cute.Tensor, k: cutlass.Constexpr = 1):
    add_kernel(a, out, k).launch(grid=(1, 1, 1), block=(32, 1, 1))


@cute.jit
def host_sum(a: cutlass.Int32, b: cutlass.Int32):
    return a + b


@pytest.fixture(autouse=True)
def _cpu(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    # These tests count traces: an earlier run's trace-key entries on disk would skip them.
    monkeypatch.setenv("OPENCUTE_DISABLE_TRACE_KEY_CACHE", "1")


def _stats(fn):
    return dict(fn.direct_call_stats)


def _data(n=20, dtype=np.float32):
    return np.arange(n, dtype=dtype) * 0.5 - 3, np.full(n, -99, dtype=dtype)


def test_repeated_calls_skip_the_trace_and_compute_the_right_result():
    a, out = _data()
    before = _stats(scaled)
    scaled(a, out)
    np.testing.assert_array_equal(out, a * SCALE + Offsets.BIAS)
    traced = _stats(scaled)["traced"]
    for i in range(5):
        a2, out2 = np.random.default_rng(i).standard_normal(20).astype(np.float32), np.zeros(20, np.float32)
        scaled(a2, out2)  # new arrays, same specialisation: no trace
        np.testing.assert_allclose(out2, a2 * SCALE + Offsets.BIAS, rtol=1e-6)
    after = _stats(scaled)
    assert after["traced"] == traced
    assert after["direct"] - before["direct"] >= 5


def test_a_global_read_two_helper_calls_deep_recompiles(monkeypatch):
    a, out = _data()
    scaled(a, out)
    scaled(a, out)
    traced = _stats(scaled)["traced"]
    monkeypatch.setattr(__import__(__name__), "SCALE", 3.0)
    scaled(a, out)
    np.testing.assert_array_equal(out, a * 3.0 + Offsets.BIAS)
    assert _stats(scaled)["traced"] == traced + 1
    scaled(a, out)  # the new state is cached in turn
    assert _stats(scaled)["traced"] == traced + 1


def test_a_class_attribute_read_off_a_global_recompiles(monkeypatch):
    a, out = _data()
    scaled(a, out)
    traced = _stats(scaled)["traced"]
    monkeypatch.setattr(Offsets, "BIAS", 10.0)
    scaled(a, out)
    np.testing.assert_array_equal(out, a * SCALE + 10.0)
    assert _stats(scaled)["traced"] == traced + 1


def test_a_changed_closure_value_recompiles():
    def make():
        k = 1.0

        @cute.kernel
        def kern(a: cute.Tensor, out: cute.Tensor):
            t, _, _ = cute.arch.thread_idx()
            if t < a.shape[0]:
                out[t] = a[t] + k

        @cute.jit
        def f(a: cute.Tensor, out: cute.Tensor):
            kern(a, out).launch(grid=(1, 1, 1), block=(32, 1, 1))

        def set_k(v):
            nonlocal k
            k = v

        return f, set_k

    f, set_k = make()
    a, out = _data()
    f(a, out)
    f(a, out)
    np.testing.assert_array_equal(out, a + 1.0)
    assert _stats(f) == {"traced": 1, "direct": 1}
    set_k(4.0)
    f(a, out)
    np.testing.assert_array_equal(out, a + 4.0)
    assert _stats(f)["traced"] == 2


def test_dtype_rank_and_constexpr_changes_retrace():
    a, out = _data()
    add_const(a, out)
    add_const(a, out)
    s = _stats(add_const)
    np.testing.assert_array_equal(out, a + 1)
    # another element type
    a64, out64 = _data(dtype=np.float64)
    add_const(a64, out64)
    np.testing.assert_array_equal(out64, a64 + 1)
    assert _stats(add_const)["traced"] == s["traced"] + 1
    # another Constexpr value, positional and by keyword
    add_const(a, out, 5)
    np.testing.assert_array_equal(out, a + 5)
    add_const(a, out, k=5)
    assert _stats(add_const)["traced"] == s["traced"] + 2
    # the original specialisations are still cached
    add_const(a, out)
    add_const(a64, out64)
    assert _stats(add_const)["traced"] == s["traced"] + 2
    # a different length is read at call time (dynamic layout): no trace
    a2, out2 = _data(n=7)
    add_const(a2, out2)
    np.testing.assert_array_equal(out2, a2 + 1)
    assert _stats(add_const)["traced"] == s["traced"] + 2
    # a non-unit stride changes the layout the code was traced for
    base = np.zeros(40, np.float32)
    out_s = np.zeros(20, np.float32)
    add_const(base[::2], out_s)
    assert _stats(add_const)["traced"] == s["traced"] + 3


def test_scalar_arguments_are_read_at_call_time_and_their_type_is_keyed():
    assert host_sum(2, 3) == 5
    t = _stats(host_sum)["traced"]
    assert host_sum(10, 20) == 30
    assert host_sum(a=1, b=2) == 3
    assert _stats(host_sum)["traced"] == t
    assert _stats(host_sum)["direct"] >= 1


def test_a_value_that_cannot_be_compared_makes_every_call_trace():
    @cute.kernel
    def kern(a: cute.Tensor, out: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        if t < a.shape[0]:
            out[t] = a[t] + OPAQUE.v

    @cute.jit
    def f(a: cute.Tensor, out: cute.Tensor):
        kern(a, out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    a, out = _data()
    f(a, out)
    np.testing.assert_array_equal(out, a + 5.0)
    OPAQUE.v = 6.0
    try:
        f(a, out)
        np.testing.assert_array_equal(out, a + 6.0)
    finally:
        OPAQUE.v = 5.0
    assert _stats(f) == {"traced": 2, "direct": 0}


def test_a_trace_that_prints_runs_on_every_call(capsys):
    @cute.jit
    def f(a: cutlass.Int32):
        print("tracing")
        return a + 1

    assert f(1) == 2
    assert f(2) == 3
    assert capsys.readouterr().out.count("tracing") == 2
    assert _stats(f)["direct"] == 0


def test_a_trace_that_assigns_a_global_runs_on_every_call():
    @cute.jit
    def f(a: cutlass.Int32):
        global _TRACE_COUNTER
        _TRACE_COUNTER = globals().get("_TRACE_COUNTER", 0) + 1
        return a

    f(1)
    f(1)
    assert _stats(f) == {"traced": 2, "direct": 0}


def test_no_cache_always_traces():
    a, out = _data()
    add_const(a, out)
    t = _stats(add_const)["traced"]
    add_const(a, out, no_cache=True)
    assert _stats(add_const)["traced"] == t + 1


def test_the_target_setting_is_part_of_the_key(monkeypatch):
    @cute.jit
    def f(a: cutlass.Int32):
        return a * 2

    assert f(4) == 8
    monkeypatch.setenv("CUTE_DSL_ENABLE_ASSERTIONS", "1")
    assert f(4) == 8
    assert _stats(f)["traced"] == 2


def test_errors_still_come_from_the_traced_path():
    a, out = _data()
    with pytest.raises(DSLUserCodeError, match="argument #1"):
        add_const("not a tensor", out)


def test_an_argument_that_fails_to_read_goes_to_the_traced_path():
    class Broken:  # looks like a torch tensor, fails when read
        shape = (4,)

        def data_ptr(self):
            raise RuntimeError("broken tensor")

        def stride(self):
            raise RuntimeError("broken tensor")

    a, out = _data()
    add_const(a, out)
    with pytest.raises(RuntimeError, match="broken tensor"):
        add_const(Broken(), out)
    add_const(a, out)  # and the cached kernel still serves the next good call
    np.testing.assert_array_equal(out, a + 1)


@cute.jit
def sum_list(ts, k: cutlass.Constexpr = 0):
    return ts[0].shape[0] + ts[1].shape[0] + k


def test_runtime_tensors_and_lists_are_keyed_by_their_marks():
    from cutlass.cute.runtime import from_dlpack
    x = np.zeros(16, np.float32)
    add_const(from_dlpack(x).mark_layout_dynamic(), from_dlpack(np.zeros(16, np.float32)).mark_layout_dynamic())
    t = _stats(add_const)["traced"]
    add_const(from_dlpack(x).mark_layout_dynamic(), from_dlpack(np.zeros(16, np.float32)).mark_layout_dynamic())
    assert _stats(add_const)["traced"] == t
    # a static layout is another specialisation
    add_const(from_dlpack(x), from_dlpack(np.zeros(16, np.float32)))
    assert _stats(add_const)["traced"] == t + 1
    # a divisibility mark is another specialisation
    marked = from_dlpack(x).mark_compact_shape_dynamic(0, divisibility=4)
    add_const(marked, from_dlpack(np.zeros(16, np.float32)).mark_layout_dynamic())
    assert _stats(add_const)["traced"] == t + 2

    a, b = np.zeros(3, np.float32), np.zeros(5, np.float32)
    assert sum_list([a, b]) == 8
    t = _stats(sum_list)["traced"]
    assert sum_list([b, a]) == 8
    assert sum_list((a, b)) == 8  # a tuple is keyed apart from a list
    assert sum_list([a, b], k=2) == 10
    assert _stats(sum_list)["traced"] == t + 2
