"""Minimal tensors on the CPU: numpy arrays through from_dlpack and implicit conversion, element
access, fill, and the checks a compiled function makes on the tensors it is called with."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute


@cute.jit
def add_rows(a: cute.Tensor, out: cute.Tensor):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] + cutlass.Float32(i * 10)


def test_implicit_conversion_reads_and_writes_numpy_without_copying():
    a = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    out = np.full_like(a, np.nan)
    add_rows(a, out)
    np.testing.assert_array_equal(out, a + np.arange(3, dtype=np.float32)[:, None] * 10)


def test_strided_views_use_their_strides():
    base = np.random.default_rng(2).standard_normal((6, 4)).astype(np.float32)
    a = base.T  # (4, 6) with strides (1, 4) elements
    out = np.zeros((4, 6), dtype=np.float32)
    add_rows(a, out)
    np.testing.assert_array_equal(out, a + np.arange(4, dtype=np.float32)[:, None] * 10)


def test_from_dlpack_shares_memory_and_reports_layout(capfd):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    @cute.jit
    def show(t: cute.Tensor):
        cute.printf("{} {}", t.shape[0], t.shape[1])
        t[1, 2] = 100.0

    t = cute.runtime.from_dlpack(x)
    assert t.element_type is cutlass.Float32
    show(t)
    assert capfd.readouterr().out.strip() == "3 4"
    assert x[1, 2] == 100.0


def test_fill_writes_every_element():
    x = np.zeros(37, dtype=np.float32)

    @cute.jit
    def fill(t: cute.Tensor):
        t.fill(2.5)

    fill(x)
    np.testing.assert_array_equal(x, np.full(37, 2.5, dtype=np.float32))


def test_register_fragment_in_host_code():
    # Register fragments are aligned for vector accesses; host code (run by the interpreter)
    # reads and writes them one element at a time.
    out = np.zeros(8, dtype=np.float32)

    @cute.jit
    def round_trip(out: cute.Tensor):
        frag = cute.make_fragment(8, cutlass.Float32)
        frag.store(cute.TensorSSA._from_values((8,), cutlass.Float32, [float(i) for i in range(8)]) * 2.0)
        out.store(frag.load() + 1.0)

    round_trip(cute.runtime.from_dlpack(out))   # a static layout, as store() needs
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 2 + 1)


@cute.jit
def bump(a: cute.Tensor):
    a[0] = a[1] + 1.0


def test_compiled_function_checks_static_layout():
    x = np.arange(4, dtype=np.float32)
    compiled = cute.compile(bump, cute.runtime.from_dlpack(x))
    compiled(x)
    assert x[0] == 2.0
    with pytest.raises(cutlass.DSLRuntimeError, match=r"ARG_LAYOUT_MISMATCH.*\(5\):\(1\).*\(4\):\(1\)") as e:
        compiled(np.arange(5, dtype=np.float32))
    assert e.value.filename == __file__


def test_compiled_function_argument_errors():
    x = np.arange(4, dtype=np.float32)
    compiled = cute.compile(bump, cute.runtime.from_dlpack(x))
    with pytest.raises(cutlass.DSLRuntimeError, match="takes 1 runtime arguments, got 2"):
        compiled(x, x)
    with pytest.raises(cutlass.DSLRuntimeError, match="positional arguments only"):
        compiled(a=x)
    with pytest.raises(cutlass.DSLRuntimeError, match="expected a tensor argument.*got int"):
        compiled(3)


def test_dynamic_layout_accepts_any_length():
    n = cute.sym_int()
    compiled = cute.compile(bump, cute.runtime.make_fake_compact_tensor(cute.Float32, (n,)))
    for size in (2, 9):
        x = np.arange(size, dtype=np.float32)
        compiled(x)
        assert x[0] == 2.0


def test_compiled_function_exposes_ir_and_name():
    x = np.arange(4, dtype=np.float32)
    compiled = cute.compile(bump, cute.runtime.from_dlpack(x))
    assert isinstance(compiled, cute.JitCompiledFunction)
    assert compiled.function_name == "bump"
    assert "func.func @bump" in compiled.__mlir__
    assert compiled.__ptx__ is None  # no kernels
    assert set(compiled.timings_ms) == {"trace", "verify", "lower", "nvvm", "link", "cache", "load", "cache_hit"}
