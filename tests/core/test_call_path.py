"""The compiled call path of a GPU-target program, measured without a GPU: with launches
discarded (`_discard_launches`, for benchmarks) a call still reads and checks every argument,
runs the host program and packs the kernel parameters, stopping short of the driver."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import toolchain


@cute.kernel
def three(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    pass


@cute.jit
def launch_three(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    three(a, b, c).launch(grid=(1, 1, 1), block=(128, 1, 1))


@pytest.fixture
def gpu_program():
    xs = [np.zeros(64, np.float32) for _ in range(3)]
    toolchain.require_cubin()
    compiled = cute.compile(launch_three, *xs, options="--target gpu")
    compiled._discard_launches = True
    return compiled, xs


def test_discarded_launches_are_counted(gpu_program):
    compiled, xs = gpu_program
    for _ in range(5):
        compiled(*xs)
    assert compiled._discarded_launches == 5


def test_checks_still_run_before_a_discarded_launch(gpu_program):
    compiled, xs = gpu_program
    with pytest.raises(TypeError, match="argument #1 .* has element type float64"):
        compiled(xs[0], np.zeros(64, np.float64), xs[2])
    with pytest.raises(ValueError, match="argument #2 has layout"):
        compiled(xs[0], xs[1], np.zeros((8, 8), np.float32))
    with pytest.raises(cutlass.DSLUserCodeError, match="takes 3 runtime arguments, got 2"):
        compiled(xs[0], xs[1])
    assert compiled._discarded_launches == 0


def test_many_arguments_take_the_long_path():
    # More tensors than the call path keeps on the stack (64 sources).
    n = 70
    src = "\n".join([
        "import cutlass.cute as cute",
        "@cute.jit",
        "def many(ts):",
        "    return ts[0].shape[0] + ts[69].shape[0]",
    ])
    import importlib.util
    import tempfile
    import os
    path = os.path.join(tempfile.mkdtemp(), "many_args.py")
    with open(path, "w") as f:
        f.write(src + "\n")
    spec = importlib.util.spec_from_file_location("many_args", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    ts = [np.zeros(i + 1, np.float32) for i in range(n)]
    compiled = cute.compile(m.many, ts)
    assert compiled(ts) == 1 + 70


# ---- the driver floor of benchmarks/bench_call_overhead.py, timed in process ------------------

@pytest.mark.gpu
def test_launch_floor_times_bare_launches():
    from cutlass import _core
    for tensors in (0, 3, 19):
        floor = _core._LaunchFloor(tensors)
        us = floor.batch_us(200)
        assert 0.5 < us < 100, us  # a bare cuLaunchKernel costs microseconds, not nothing


def test_launch_floor_without_a_gpu_says_so():
    from cutlass import _core
    if cutlass.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        _core._LaunchFloor(3)


# A host program that is one launch of its own arguments, in order, launches without its register
# file (HostInterpreter's direct launch); any other order goes through the interpreter. Both
# must hand the kernel the arguments it was traced with.
@cute.kernel
def _difference(first: cute.Tensor, second: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    out[t] = first[t] - second[t]


@cute.jit
def _in_order(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor):
    _difference(a, b, out).launch(grid=(1, 1, 1), block=(8, 1, 1))


@cute.jit
def _swapped(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor):
    _difference(b, a, out).launch(grid=(1, 1, 1), block=(8, 1, 1))


@pytest.mark.parametrize("program, sign", [(_in_order, 1.0), (_swapped, -1.0)])
def test_launch_arguments_keep_their_order(program, sign):
    a = np.arange(8, dtype=np.float32) * 3
    b = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    compiled = cute.compile(program, a, b, out, options="--target cpu")
    compiled(a, b, out)
    np.testing.assert_array_equal(out, sign * (a - b))
