"""Kernels on the GPU (skipped without one): hello world, add_one, device printf."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_hello_world_notebook_code():
    out = run_example("hello_world.py")
    assert out.count("hello world") == 2 and out.count("Hello world") == 2
    for marker in ("Running hello_world()...", "Compiling...", "Compiling with PTX/CUBIN dumped...",
                   "Running compiled version..."):
        assert marker in out
    # each device print follows its host print
    assert out.index("Hello world") > out.index("hello world")


def test_add_one_example():
    out = run_example("add_one.py")
    assert out[-1].endswith("result checked, OK")


def test_add_one_torch_dynamic_and_static():
    torch = pytest.importorskip("torch")
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from add_one import add_one
    cutlass.cuda.initialize_cuda_context()
    for n in (1, 127, 128, 1000, 4097):
        a = torch.randn(n, device="cuda")
        b = torch.full_like(a, float("nan"))
        add_one(a, b)  # implicit conversion: dynamic layout
        torch.cuda.synchronize()
        torch.testing.assert_close(b, a + 1.0, rtol=0, atol=0)
    a = torch.randn(300, device="cuda")
    b = torch.empty_like(a)
    compiled = cute.compile(add_one, cute.runtime.from_dlpack(a), cute.runtime.from_dlpack(b))
    compiled(a, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(b, a + 1.0, rtol=0, atol=0)
    with pytest.raises(cutlass.DSLRuntimeError):
        compiled(torch.randn(301, device="cuda"), torch.empty(301, device="cuda"))


def test_device_printf_and_control_flow(tmp_path):
    code = r'''
import cutlass, cutlass.cute as cute
@cute.kernel
def k(n: cutlass.Int32, x: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 0:
        acc = 0
        for i in range(n):
            acc = acc + i
        cute.printf("acc=%d x=%.2f {}", acc, x, tidx)
@cute.jit
def host(n: cutlass.Int32, x: cutlass.Float32):
    cute.printf("host n={}", n)
    k(n, x).launch(grid=(1, 1, 1), block=(64, 1, 1))
cutlass.cuda.initialize_cuda_context()
host(5, 1.5)
'''
    script = tmp_path / "device_printf.py"  # @jit needs its source in a file
    script.write_text(code)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["host n=5", "acc=10 x=1.50 0"]
