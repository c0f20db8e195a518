"""Kernels on the CPU SIMT emulator (no GPU needed): results checked against numpy, device
printf, the out-of-bounds error, and how the target is chosen (--target cpu, the Target option
class, CUTE_DSL_TARGET, the automatic fallback)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._dsl.errors import DSLUserCodeError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Child interpreters import the same cutlass package as this one (installed or source tree).
PKG_PATH = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

from add_one import add_one  # noqa: E402


def run_script(code, tmp_path, env=None, name="script.py"):
    script = tmp_path / name  # @jit needs its source in a file
    script.write_text(code)
    e = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=PKG_PATH)
    e.update(env or {})
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e, cwd=str(tmp_path))
    return p


def compile_add_one_cpu():
    n = cute.sym_int()
    a = cute.runtime.make_fake_compact_tensor(cute.Float32, (n,))
    b = cute.runtime.make_fake_compact_tensor(cute.Float32, (n,))
    return cute.compile(add_one, a, b, options="--target cpu")


@pytest.mark.parametrize("n", [1, 31, 127, 129, 1000, 4097])
def test_add_one_odd_sizes(n):
    compiled = compile_add_one_cpu()
    assert compiled.target == "cpu"
    a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    b = np.full_like(a, np.nan)
    compiled(a, b)
    np.testing.assert_array_equal(b, a + np.float32(1.0))


def test_add_one_implicit_conversion_on_cpu(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    a = np.arange(300, dtype=np.float32)
    b = np.zeros_like(a)
    add_one(a, b)
    np.testing.assert_array_equal(b, a + 1)


@cute.kernel
def scale_2d(a: cute.Tensor, out: cute.Tensor):
    tx, ty, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    bdx, bdy, _ = cute.arch.block_dim()
    i = bx * bdx + tx
    j = by * bdy + ty
    if i < a.shape[0]:
        if j < a.shape[1]:
            out[i, j] = a[i, j] * 3 + i * 1000 + j


@cute.jit
def scale_2d_host(a: cute.Tensor, out: cute.Tensor):
    scale_2d(a, out).launch(grid=((a.shape[0] + 15) // 16, (a.shape[1] + 7) // 8, 1), block=(16, 8, 1))


def test_2d_indexing_exact_integers(monkeypatch):
    a = np.random.default_rng(0).integers(-1000, 1000, size=(37, 21)).astype(np.int32)
    out = np.zeros_like(a)
    compiled = cute.compile(scale_2d_host, a, out, options="--target cpu")
    compiled(a, out)
    i, j = np.indices(a.shape)
    np.testing.assert_array_equal(out, a * 3 + i * 1000 + j)
    # a column-major view, through the implicit conversion of a plain call
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    t = np.asfortranarray(a)
    out2 = np.zeros((37, 21), dtype=np.int32)
    scale_2d_host(t, out2)
    np.testing.assert_array_equal(out2, a * 3 + i * 1000 + j)


@cute.kernel
def loop_branch(out: cute.Tensor, steps: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    g = b * 64 + t
    if g < out.shape[0]:
        acc = 0
        for i in range(g):
            if i % 3 == 0:
                acc = acc + i
            else:
                acc = acc - 1
        out[g] = acc
        x = g + 1
        c = 0
        while x != 1:
            if x % 2 == 0:
                x = x // 2
            else:
                x = 3 * x + 1
            c = c + 1
        steps[g] = c


@cute.jit
def loop_branch_host(out: cute.Tensor, steps: cute.Tensor):
    loop_branch(out, steps).launch(grid=((out.shape[0] + 63) // 64, 1, 1), block=(64, 1, 1))


def test_divergent_loops_and_branches():
    n = 200
    out = np.zeros(n, dtype=np.int32)
    steps = np.zeros(n, dtype=np.int32)
    cute.compile(loop_branch_host, out, steps, options="--target cpu")(out, steps)
    want = [sum(i if i % 3 == 0 else -1 for i in range(g)) for g in range(n)]
    np.testing.assert_array_equal(out, want)

    def collatz(x):
        c = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            c += 1
        return c
    np.testing.assert_array_equal(steps, [collatz(g + 1) for g in range(n)])


@cute.kernel
def reverse_block(a: cute.Tensor, scratch: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    n, _, _ = cute.arch.block_dim()
    scratch[b * n + t] = a[b * n + t]
    cute.arch.sync_threads()
    out[b * n + t] = scratch[b * n + (n - 1 - t)]


@cute.jit
def reverse_host(a: cute.Tensor, scratch: cute.Tensor, out: cute.Tensor):
    reverse_block(a, scratch, out).launch(grid=(a.shape[0] // 96, 1, 1), block=(96, 1, 1))


def test_barrier_between_warps():
    a = np.arange(96 * 7, dtype=np.int32)
    scratch = np.zeros_like(a)
    out = np.zeros_like(a)
    cute.compile(reverse_host, a, scratch, out, options="--target cpu")(a, scratch, out)
    np.testing.assert_array_equal(out, a.reshape(7, 96)[:, ::-1].reshape(-1))


@cute.kernel
def unchecked_copy(a: cute.Tensor, b: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    b[t] = a[t]


@cute.jit
def unchecked_host(a: cute.Tensor, b: cute.Tensor):
    unchecked_copy(a, b).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_out_of_bounds_access_is_an_error():
    a = np.arange(128, dtype=np.float32)
    b = np.zeros(100, dtype=np.float32)
    compiled = cute.compile(unchecked_host, a, b, options="--target cpu")
    with pytest.raises(cutlass.DSLRuntimeError) as info:
        compiled(a, b)
    msg = str(info.value)
    assert "out-of-bounds store" in msg
    assert "unchecked_copy" in msg
    assert "block (0,0,0) thread (100,0,0)" in msg
    assert hex(b.ctypes.data + 400) in msg
    assert "0 bytes past the end of tensor argument `b` (#1), 400 bytes at " in msg
    assert msg.startswith("error: out-of-bounds store of 4 bytes at address ")  # no blank line first
    np.testing.assert_array_equal(b, a[:100])


@cute.kernel
def unchecked_gather(xs: cute.Tensor, index: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    out[t] = xs[index[t]]


@cute.jit
def gather_host(xs: cute.Tensor, index: cute.Tensor, out: cute.Tensor):
    unchecked_gather(xs, index, out).launch(grid=(1, 1, 1), block=(4, 1, 1))


def test_out_of_bounds_load_names_the_argument_it_ran_past():
    xs = np.arange(8, dtype=np.float32)
    index = np.array([0, 1, 2, 10], dtype=np.int32)  # 10 is two elements past the end of xs
    out = np.zeros(4, dtype=np.float32)
    compiled = cute.compile(gather_host, xs, index, out, options="--target cpu")
    with pytest.raises(cutlass.DSLRuntimeError) as info:
        compiled(xs, index, out)
    msg = str(info.value)
    assert msg.startswith("error: out-of-bounds load of 4 bytes at address " + hex(xs.ctypes.data + 40))
    assert "block (0,0,0) thread (3,0,0)" in msg
    assert "(8 bytes past the end of tensor argument `xs` (#0), 32 bytes at " + hex(xs.ctypes.data) + ")" in msg


@cute.kernel
def unchecked_pair_copy(pair, n: cutlass.Int32):
    t, _, _ = cute.arch.thread_idx()
    pair[1][t] = pair[0][t]


@cute.jit
def pair_host(pair, n: cutlass.Int32):
    unchecked_pair_copy(pair, n).launch(grid=(1, 1, 1), block=(8, 1, 1))


def test_a_tensor_in_a_list_is_named_by_its_item():
    src = np.arange(8, dtype=np.float32)
    dst = np.zeros(6, dtype=np.float32)
    compiled = cute.compile(pair_host, [src, dst], 6, options="--target cpu")
    with pytest.raises(cutlass.DSLRuntimeError) as info:
        compiled([src, dst], 6)
    assert "past the end of tensor argument `pair[1]` (#1)" in str(info.value)


def test_tvm_ffi_calls_name_the_argument_too():
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    a = np.arange(128, dtype=np.float32)
    b = np.zeros(100, dtype=np.float32)
    compiled = cute.compile(unchecked_host, a, b, options="--target cpu --enable-tvm-ffi")
    with pytest.raises(Exception) as info:
        compiled(a, b)
    msg = str(info.value)
    assert "0 bytes past the end of tensor argument `b` (#1), 400 bytes at " in msg, msg


def test_device_printf_output(tmp_path):
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
    if tidx >= 62:
        cute.printf("lane {} warp {}", cute.arch.lane_idx(), cute.arch.warp_idx())
@cute.jit
def host(n: cutlass.Int32, x: cutlass.Float32):
    cute.printf("host n={}", n)
    k(n, x).launch(grid=(1, 1, 1), block=(64, 1, 1))
print("before")
c = cute.compile(host, 5, 1.5, options="--target cpu")
c(5, 1.5)
print("after")
'''
    p = run_script(code, tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["before", "host n=5", "acc=10 x=1.50 0", "lane 30 warp 1", "lane 31 warp 1",
                                     "after"]


def test_target_option_forms():
    n = cute.sym_int()
    a = cute.runtime.make_fake_compact_tensor(cute.Float32, (n,))
    b = cute.runtime.make_fake_compact_tensor(cute.Float32, (n,))
    Target = cute.Target
    compiled = cute.compile[Target("cpu")](add_one, a, b)
    assert compiled.target == "cpu"
    x = np.arange(5, dtype=np.float32)
    y = np.zeros_like(x)
    compiled(x, y)
    np.testing.assert_array_equal(y, x + 1)
    compiled = cute.compile(add_one, a, b, options="--target=cpu --opt-level 2")
    assert compiled.target == "cpu"
    with pytest.raises(DSLUserCodeError, match="compile target must be one of gpu, cpu, ptx, got 'tpu'"):
        cute.compile(add_one, a, b, options="--target tpu")
    with pytest.raises(DSLUserCodeError, match="compile option --target needs a value"):
        cute.compile(add_one, a, b, options="--target")
    with pytest.raises(DSLUserCodeError, match="compile target must be one of gpu, cpu, ptx, got 'cuda'"):
        Target("cuda")


ENV_SCRIPT = r'''
import sys
import numpy as np
import cutlass, cutlass.cute as cute
sys.path.insert(0, EXAMPLES)
from add_one import add_one
for n in (3, 130):
    a = np.arange(n, dtype=np.float32)
    b = np.zeros_like(a)
    add_one(a, b)
    assert (b == a + 1).all()
n = cute.sym_int()
fa = cute.runtime.make_fake_compact_tensor(cute.Float32, (n,))
c = cute.compile(add_one, fa, fa)
print(c.target)
'''.replace("EXAMPLES", repr(os.path.join(ROOT, "examples")))


def test_cute_dsl_target_env(tmp_path):
    p = run_script(ENV_SCRIPT, tmp_path, env={"CUTE_DSL_TARGET": "cpu"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "cpu"
    assert "emulator" not in p.stderr  # chosen explicitly: no announcement
    p = run_script(ENV_SCRIPT, tmp_path, env={"CUTE_DSL_TARGET": "bogus"})
    assert p.returncode != 0 and "CUTE_DSL_TARGET" in p.stderr


@pytest.mark.skipif(cutlass.cuda.is_available(), reason="checks the fallback of a machine without a GPU")
def test_automatic_fallback_is_announced_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CUTE_DSL_TARGET"}
    script = tmp_path / "fallback.py"
    script.write_text(ENV_SCRIPT)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT,
                       env=dict(env, PYTHONPATH=PKG_PATH))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "cpu"
    assert p.stderr.count("CPU emulator") == 1, p.stderr


@pytest.mark.skipif(cutlass.cuda.is_available(), reason="the examples use the GPU when there is one")
@pytest.mark.parametrize("example", ["add_one.py", "hello_world.py"])
def test_examples_run_without_gpu(example, tmp_path):
    # Run from a scratch folder: hello_world compiles with KeepPTX/KeepCUBIN, which write files there.
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", example)], capture_output=True, text=True,
                       cwd=str(tmp_path), env=dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=PKG_PATH))
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    if example == "add_one.py":
        assert out[-1].endswith("result checked, OK")
    else:
        assert out.count("hello world") == 2 and out.count("Hello world") == 2


@cute.kernel
def float_math(a: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    if t < a.shape[0]:
        x = a[t]
        out[t] = x * x + 0.5 * x - 2.0


@cute.jit
def float_math_host(a: cute.Tensor, out: cute.Tensor):
    float_math(a, out).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_float_arithmetic_matches_float32():
    a = np.random.default_rng(3).standard_normal(50).astype(np.float32)
    out = np.zeros_like(a)
    cute.compile(float_math_host, a, out, options="--target cpu")(a, out)
    np.testing.assert_allclose(out, a * a + np.float32(0.5) * a - np.float32(2.0), rtol=1e-6, atol=1e-6)


def test_cpu_torch_tensors():
    torch = pytest.importorskip("torch")
    compiled = compile_add_one_cpu()
    a = torch.randn(1001)
    b = torch.full_like(a, float("nan"))
    compiled(a, b)
    assert torch.equal(b, a + 1.0)
