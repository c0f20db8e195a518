"""cute.testing: JitArguments, benchmark (wall clock on the CPU emulator, CUDA events on a GPU),
get_workspace_count, tune and autotune_jit."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.cute.testing as testing


def test_cutlass_testing_is_the_same_api():
    import cutlass.testing
    assert cutlass.testing.benchmark is testing.benchmark
    assert cutlass.testing.JitArguments is testing.JitArguments


def test_jit_arguments_hold_call_arguments():
    keep = object()
    args = testing.JitArguments(1, 2, k=3)
    args.add_to_scope([keep])
    assert args.args == (1, 2) and args.kwargs == {"k": 3}
    assert keep in args._scope


def test_benchmark_runs_warmup_and_iterations_cycling_workspaces():
    calls = []
    spaces = iter(range(100))

    def generate():
        return testing.JitArguments(next(spaces))

    t = testing.benchmark(lambda w: calls.append(w), workspace_generator=generate, workspace_count=3,
                          warmup_iterations=2, iterations=5)
    assert isinstance(t, float) and t >= 0
    assert calls == [0, 1, 2, 0, 1, 2, 0]


def test_benchmark_passes_kernel_arguments():
    seen = []
    testing.benchmark(lambda a, b=0: seen.append((a, b)), kernel_arguments=testing.JitArguments(4, b=5),
                      warmup_iterations=0, iterations=2)
    assert seen == [(4, 5), (4, 5)]


def test_benchmark_of_a_compiled_function_runs_it_each_time():
    @cute.jit
    def bump(t: cute.Tensor):
        t[0] = t[0] + 1.0

    x = np.zeros(1, np.float32)
    compiled = cute.compile(bump, x)
    testing.benchmark(compiled, kernel_arguments=testing.JitArguments(x), warmup_iterations=2, iterations=3)
    assert x[0] == 5.0


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(kernel_arguments=testing.JitArguments(), workspace_generator=testing.JitArguments), ValueError,
     "not both"),
    (dict(iterations=0), ValueError, "iterations must be at least 1"),
    (dict(warmup_iterations=-1), ValueError, "warmup_iterations must not be negative"),
    (dict(workspace_generator=lambda: (1,)), TypeError, "must return JitArguments"),
    (dict(workspace_generator=testing.JitArguments, workspace_count=0), ValueError, "workspace_count"),
    (dict(kernel_arguments=(1,)), TypeError, "kernel_arguments must be a JitArguments"),
    (dict(use_cuda_graphs=True), ValueError, "needs a non-default stream"),
    (dict(use_cupti=True), NotImplementedError, "use_cupti"),
])
def test_benchmark_argument_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        testing.benchmark(lambda *a: None, **kwargs)


def test_get_workspace_count_without_gpu():
    if cutlass.cuda.is_available():
        pytest.skip("the answer depends on the GPU's L2 size")
    assert testing.get_workspace_count(1 << 20, 10, 100) == 1
    with pytest.raises(ValueError, match="one_workspace_bytes must be positive"):
        testing.get_workspace_count(0, 1, 1)


def fake_times(monkeypatch, times):
    """Makes benchmark report `times[result of the runner]` so selection does not depend on timing."""
    calls = []

    def fake_benchmark(runner, **kwargs):
        key = runner()
        calls.append(key)
        return times[key]

    monkeypatch.setattr(testing, "benchmark", fake_benchmark)
    return calls


def test_tune_picks_the_fastest_and_skips_failing_configurations(monkeypatch):
    fake_times(monkeypatch, {64: 3.0, 128: 1.0, 256: 2.0})

    def compile_with(a, b, copy_bits=128):
        assert (a, b) == ("A", "B")
        if copy_bits == 1:
            raise ValueError("cannot implement")
        return lambda: copy_bits

    best = testing.tune(compile_with, params_dict={"copy_bits": [1, 64, 128, 256]},
                        kernel_arguments=testing.JitArguments("A", "B"))
    assert best == {"copy_bits": 128}


def test_tune_reports_when_nothing_runs():
    def never(**params):
        raise ValueError(f"no {params}")

    with pytest.raises(RuntimeError, match=r"no configuration could be run:\n  \{'v': 1\}: ValueError: no"):
        testing.tune(never, params_dict={"v": [1]})


def test_autotune_jit_tunes_once_per_key_and_uses_the_best(monkeypatch):
    out = np.zeros(1, np.float32)
    current_n = [1]
    timed = []

    def fake_benchmark(runner, **kwargs):
        runner()  # the configuration under test writes n * factor
        factor = int(out[0]) // current_n[0]
        timed.append(factor)
        return {2: 5.0, 3: 1.0, 4: 9.0}[factor]

    monkeypatch.setattr(testing, "benchmark", fake_benchmark)

    @testing.autotune_jit(params_dict={"factor": [2, 3, 4]}, update_on_change=["n"])
    @cute.jit
    def fill(t: cute.Tensor, n: cutlass.Int32, factor: cutlass.Constexpr = 1):
        t[0] = cutlass.Float32(n * factor)

    fill(out, 1)
    assert out[0] == 3.0 and timed == [2, 3, 4]  # factor 3 timed fastest
    out[0] = 0
    fill(out, 1)
    assert out[0] == 3.0 and timed == [2, 3, 4]  # same n: no retuning
    current_n[0] = 2
    fill(out, 2)
    assert out[0] == 6.0 and timed == [2, 3, 4, 2, 3, 4]  # n changed: tuned again


def test_autotune_jit_validates_its_arguments():
    with pytest.raises(TypeError, match="decorates a @cute.jit function"):
        testing.autotune_jit(params_dict={})(lambda: None)
    with pytest.raises(ValueError, match="update_on_change names 'm'"):
        testing.autotune_jit(params_dict={}, update_on_change=["m"])(cute.jit(lambda n: None))


def test_assert_is_reexported():
    from cutlass._dsl.assertions import assert_
    assert testing.assert_ is assert_


@pytest.mark.gpu
def test_benchmark_times_with_cuda_events_on_a_gpu():
    t = testing.benchmark(lambda: None, warmup_iterations=1, iterations=3)
    assert isinstance(t, float) and t >= 0
    import cutlass._core as core
    begin, end = core.runtime.event_create(), core.runtime.event_create()
    core.runtime.event_record(begin, 0)
    core.runtime.event_record(end, 0)
    core.runtime.event_synchronize(end)
    assert core.runtime.event_elapsed_ms(begin, end) >= 0
    core.runtime.event_destroy(begin)
    core.runtime.event_destroy(end)
    assert testing.get_workspace_count(1, 5, 1000) == 1005  # never more than the calls


def test_stream_handles_are_stream_arguments(capsys, monkeypatch):
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")  # the kernel writes numpy (host) memory
    @cute.kernel
    def set_one(t: cute.Tensor):
        t[0] = 1.0

    @cute.jit
    def run(t: cute.Tensor, stream):
        print(type(stream).__name__)
        set_one(t).launch(grid=(1, 1, 1), block=(1, 1, 1), stream=stream)

    x = np.zeros(1, np.float32)
    run(x, cutlass.cuda.default_stream())
    assert x[0] == 1.0
    assert capsys.readouterr().out == "Int64\n"


GRAPH_SCRIPT = r'''
import torch, cutlass, cutlass.cute as cute, cutlass.cute.testing as testing
from cuda.bindings import driver as cuda
from cutlass.cute.runtime import from_dlpack

@cute.kernel
def bump_kernel(t: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    t[tidx] = t[tidx] + 1.0

@cute.jit
def bump(t: cute.Tensor, stream: cuda.CUstream):
    bump_kernel(t).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)

x = torch.zeros(32, device="cuda")
torch_stream = torch.cuda.Stream()
stream = cuda.CUstream(torch_stream.cuda_stream)
compiled = cute.compile(bump, from_dlpack(x), stream)
us = testing.benchmark(compiled, kernel_arguments=testing.JitArguments(from_dlpack(x), stream),
                       warmup_iterations=3, iterations=7, use_cuda_graphs=True, stream=stream)
torch.cuda.synchronize()
print(us, x.min().item(), x.max().item())
'''


@pytest.mark.gpu
def test_benchmark_with_cuda_graphs_replays_the_captured_calls(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "graph_benchmark.py"  # jit functions need their source in a file
    script.write_text(GRAPH_SCRIPT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    us, lo, hi = map(float, r.stdout.split())
    assert us > 0
    # 3 warm-up calls run directly; the graph of 7 calls is replayed twice (warm-up and timed).
    assert lo == hi == 3 + 2 * 7
