"""benchmarks/bench_sm100.py imports without torch or a GPU, and on a machine without an SM100
device refuses to run: a message naming what is missing on standard error, exit status 2, before
it reads its examples or imports torch."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

import cutlass

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_sm100.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("benchmarks_bench_sm100", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_sm100():
    return cutlass._core.cuda_available() and cutlass._core.device_arch(0).startswith("sm_10")


def test_the_problem_names_what_is_missing():
    bench = load_bench()
    why = bench.sm100_device_problem()
    if on_sm100():
        assert why is None
        return
    if cutlass._core.cuda_available():
        assert why == f"device 0 is {cutlass._core.device_arch(0)}, not an SM100 (Blackwell datacenter) part"
    else:
        assert why == "no CUDA device is present"


def test_refuses_without_an_sm100_device(tmp_path):
    if on_sm100():
        pytest.skip("an SM100 device is present: the benchmark would run")
    out = subprocess.run([sys.executable, str(BENCH), "--examples", str(tmp_path / "no-examples-here")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "bench_sm100: needs an SM100 GPU (B200, GB200 or B300) and " in out.stderr
    assert out.stdout == ""
    assert "torch" not in out.stderr  # refused before importing torch, so not a missing-torch failure
