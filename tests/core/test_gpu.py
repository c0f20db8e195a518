"""Kernels on the GPU (skipped without one): hello world, add_one, device printf."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_example(name):
    import tempfile
    # A scratch folder: hello_world compiles with KeepPTX/KeepCUBIN, which write files there.
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONUNBUFFERED="1"), cwd=tempfile.mkdtemp(prefix="opencute-example-"))
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
    with pytest.raises(cutlass.DSLRuntimeError,
                       match=r"argument #0 has layout \(301\):\(1\) but the function was compiled for \(300\):\(1\)"):
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


@cute.kernel
def _mix_kernel(a: cute.Tensor, out_i: cute.Tensor, out_f: cute.Tensor):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    i = bidx * 64 + tidx
    if i < a.shape[0]:
        v = a[i]
        h = cutlass.Int32(i) * 625341585 ^ (cutlass.Int32(i) >> 3)
        acc = cutlass.Int32(0)
        for k in range(i % 7):
            acc = acc + (h >> k) % 13
        out_i[i] = acc - (h % 1000)
        out_f[i] = v * 1.5 + cute.math.sin(v) - v / 3.0


@cute.jit
def _mix(a: cute.Tensor, out_i: cute.Tensor, out_f: cute.Tensor):
    _mix_kernel(a, out_i, out_f).launch(grid=((a.shape[0] + 63) // 64, 1, 1), block=(64, 1, 1))


def test_emulator_matches_gpu():
    torch = pytest.importorskip("torch")
    cutlass.cuda.initialize_cuda_context()
    n = 1000
    a = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    ei, ef = np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.float32)
    fake_f = cute.runtime.make_fake_compact_tensor(cute.Float32, (cute.sym_int(),))
    fake_i = cute.runtime.make_fake_compact_tensor(cute.Int32, (cute.sym_int(),))
    on_cpu = cute.compile(_mix, fake_f, fake_i, fake_f, options="--target cpu")
    on_gpu = cute.compile(_mix, fake_f, fake_i, fake_f, options="--target gpu")
    on_cpu(a, ei, ef)
    ta = torch.from_numpy(a).cuda()
    gi, gf = torch.zeros(n, dtype=torch.int32, device="cuda"), torch.zeros(n, device="cuda")
    on_gpu(ta, gi, gf)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(gi.cpu().numpy(), ei)  # integers: bit for bit
    np.testing.assert_allclose(gf.cpu().numpy(), ef, rtol=2e-6, atol=2e-6)  # sin is libdevice vs libm


@cute.kernel
def _scale_kernel(a: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    i = b * 128 + t
    if i < a.shape[0]:
        out[i] = a[i] * _GPU_SCALE


_GPU_SCALE = 2.0


@cute.jit
def _scale(a: cute.Tensor, out: cute.Tensor):
    _scale_kernel(a, out).launch(grid=((a.shape[0] + 127) // 128, 1, 1), block=(128, 1, 1))


def test_direct_calls_with_torch_tensors_skip_the_trace(monkeypatch):
    torch = pytest.importorskip("torch")
    # The test counts traces: an earlier run's trace-key entries on disk would skip them.
    monkeypatch.setenv("OPENCUTE_DISABLE_TRACE_KEY_CACHE", "1")
    a = torch.randn(1000, device="cuda")
    out = torch.full_like(a, float("nan"))
    _scale(a, out)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a * 2.0, rtol=0, atol=0)
    traced = _scale.direct_call_stats["traced"]
    for n in (1000, 77, 4096):  # the length is read at call time
        a = torch.randn(n, device="cuda")
        out = torch.full_like(a, float("nan"))
        _scale(a, out)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, a * 2.0, rtol=0, atol=0)
    assert _scale.direct_call_stats["traced"] == traced
    monkeypatch.setitem(globals(), "_GPU_SCALE", 3.0)
    _scale(a, out)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a * 3.0, rtol=0, atol=0)
    assert _scale.direct_call_stats["traced"] == traced + 1
    # a float64 tensor is another specialisation (traced), not a reinterpretation
    a64 = torch.randn(100, device="cuda", dtype=torch.float64)
    out64 = torch.zeros_like(a64)
    _scale(a64, out64)
    torch.cuda.synchronize()
    torch.testing.assert_close(out64, a64 * 3.0, rtol=0, atol=0)
