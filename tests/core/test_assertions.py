"""Runtime assertions: cute.testing.assert_ and `assert` on dynamic values in jit code. Live only
with --enable-assertions / EnableAssertions / CUTE_DSL_ENABLE_ASSERTIONS; a failure on the CPU
emulator or in host code is a DSLRuntimeError naming the message and the user's file and line."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import toolchain

PKG_PATH = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))


def line_of(text):
    """Line number in this file of the first line containing `text` (after this function)."""
    with open(__file__) as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("# ---- kernels"))
    return next(i + 1 for i, l in enumerate(lines) if i > start and text in l)


def has_assert_op(ir_text):
    return re.search(r"^\s*assert %", ir_text, re.M) is not None


# ---- kernels ------------------------------------------------------------------------------------

@cute.kernel
def checked_kernel(a: cute.Tensor, out: cute.Tensor, limit: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    v = a[bidx * 32 + tidx]
    cute.testing.assert_(v < limit, "value over the limit")
    out[bidx * 32 + tidx] = v * 2


@cute.jit
def checked_host(a: cute.Tensor, out: cute.Tensor, limit: cutlass.Int32):
    checked_kernel(a, out, limit).launch(grid=(2, 1, 1), block=(32, 1, 1))


@cute.kernel
def python_assert_kernel(a: cute.Tensor, limit: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    assert a[tidx] != limit, "hit the sentinel"
    assert a[tidx] >= 0


@cute.jit
def python_assert_host(a: cute.Tensor, limit: cutlass.Int32):
    python_assert_kernel(a, limit).launch(grid=(1, 1, 1), block=(32, 1, 1))


@cute.jit
def host_assert(n: cutlass.Int32):
    assert n > 0, "n must be positive"
    cute.testing.assert_(n < 100)


@cute.jit
def static_assert_host(n: cutlass.Constexpr):
    assert n % 2 == 0, f"n={n} is odd"


def compile_checked(options="--target cpu --enable-assertions"):
    a, out = np.zeros(64, np.int32), np.zeros(64, np.int32)
    return cute.compile(checked_host, a, out, 0, options=options)


def test_passing_assertions_are_silent():
    compiled = compile_checked()
    a = np.arange(64, dtype=np.int32)
    out = np.zeros_like(a)
    compiled(a, out, 64)
    np.testing.assert_array_equal(out, a * 2)


def test_failing_device_assertion_names_message_thread_and_source_line():
    compiled = compile_checked()
    a = np.arange(64, dtype=np.int32)
    a[32 + 5] = 1000
    with pytest.raises(cutlass.DSLRuntimeError) as info:
        compiled(a, np.zeros_like(a), 64)
    e = info.value
    assert "value over the limit" in str(e)
    assert "block (1,0,0) thread (5,0,0)" in str(e)
    assert "kernel_cutlass_checked_kernel" in str(e)
    assert e.filename == __file__ and e.line == line_of('assert_(v < limit, "value over the limit")')
    assert f"{__file__}:{e.line}" in str(e)


def test_assertions_are_compiled_out_by_default():
    compiled = compile_checked(options="--target cpu")
    assert not has_assert_op(compiled.__mlir__)
    a = np.full(64, 1000, dtype=np.int32)
    out = np.zeros_like(a)
    compiled(a, out, 64)  # the failing condition is not checked
    np.testing.assert_array_equal(out, a * 2)
    assert has_assert_op(compile_checked().__mlir__)


def test_enable_assertions_option_class_and_environment(monkeypatch):
    a = np.full(64, 7, dtype=np.int32)
    compiled = cute.compile[cute.EnableAssertions](checked_host, a, np.zeros_like(a), 0, options="--target cpu")
    with pytest.raises(cutlass.DSLRuntimeError, match="value over the limit"):
        compiled(a, np.zeros_like(a), 3)
    monkeypatch.setenv("CUTE_DSL_ENABLE_ASSERTIONS", "1")
    with pytest.raises(cutlass.DSLRuntimeError, match="value over the limit"):
        compile_checked(options="--target cpu")(a, np.zeros_like(a), 3)


def test_python_assert_on_a_dynamic_value_becomes_a_runtime_check():
    a = np.arange(32, dtype=np.int32)
    compiled = cute.compile(python_assert_host, a, 0, options="--target cpu --enable-assertions")
    compiled(a, 99)
    with pytest.raises(cutlass.DSLRuntimeError, match="hit the sentinel") as info:
        compiled(a, 17)
    assert info.value.line == line_of('assert a[tidx] != limit, "hit the sentinel"')
    a[3] = -4
    # Without a message, the condition's source text is the message.
    with pytest.raises(cutlass.DSLRuntimeError, match=r"thread \(3,0,0\): a\[tidx\] >= 0"):
        compiled(a, 99)
    assert not has_assert_op(cute.compile(python_assert_host, a, 0, options="--target cpu").__mlir__)


def test_python_assert_on_a_static_value_is_a_python_assert():
    cute.compile(static_assert_host, 4, options="--target cpu")
    with pytest.raises(AssertionError, match="n=3 is odd"):
        cute.compile(static_assert_host, 3, options="--target cpu")


def test_host_assertions_run_in_the_host_program():
    compiled = cute.compile(host_assert, 1, options="--target cpu --enable-assertions")
    compiled(5)
    with pytest.raises(cutlass.DSLRuntimeError, match="host assertion failed: n must be positive") as info:
        compiled(0)
    assert info.value.line == line_of('assert n > 0, "n must be positive"')
    # cute.testing.assert_ without a message reports its own source line.
    with pytest.raises(cutlass.DSLRuntimeError, match=r"cute.testing.assert_\(n < 100\)"):
        compiled(100)


def test_assert_outside_jit_is_a_python_check():
    cute.testing.assert_(True)
    with pytest.raises(AssertionError, match="nope"):
        cute.testing.assert_(False, "nope")


def test_ptx_of_an_asserting_kernel_calls_assertfail():
    compiled = compile_checked()
    assert "@__assertfail(" in compiled.nvvm_ir
    toolchain.ptx_of(compiled)
    assert "__assertfail" in compiled.__ptx__ and "trap;" in compiled.__ptx__
    assert "__assertfail" not in compile_checked(options="--target cpu").nvvm_ir


GPU_SCRIPT = r'''
import numpy as np, torch, cutlass, cutlass.cute as cute
@cute.kernel
def k(a: cute.Tensor, limit: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    cute.testing.assert_(a[tidx] < limit, "device says the value is too big")
@cute.jit
def host(a: cute.Tensor, limit: cutlass.Int32):
    k(a, limit).launch(grid=(1, 1, 1), block=(32, 1, 1))
cutlass.cuda.initialize_cuda_context()
a = torch.arange(32, dtype=torch.int32, device="cuda")
c = cute.compile(host, a, 0, options="--enable-assertions")
c(a, 100)
torch.cuda.synchronize()
print("passed", flush=True)
c(a, 10)
torch.cuda.synchronize()
print("not reached", flush=True)
'''


@pytest.mark.gpu
def test_failing_assertion_on_the_gpu_stops_the_kernel(tmp_path):
    # A device trap poisons the CUDA context, so this runs in its own process.
    script = tmp_path / "assert_gpu.py"
    script.write_text(GPU_SCRIPT)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=PKG_PATH, PYTHONUNBUFFERED="1"))
    out = p.stdout + p.stderr
    assert "passed" in p.stdout and "not reached" not in p.stdout, out
    assert p.returncode != 0, out
    assert "device says the value is too big" in out, out
