"""benchmarks/bench_sm100_compile.py runs without a GPU: one cold compile of NVIDIA's
dense_gemm_persistent for sm_100a in a fresh process, reported as its figures (wall and CPU time,
the phases, the PTX and cubin sizes). Skipped where the toolchain or NVIDIA's examples are absent."""
import pathlib
import re
import subprocess
import sys

import pytest

import nvidia_examples
import toolchain

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_sm100_compile.py"


def test_one_cold_compile_of_the_persistent_gemm_is_measured():
    if nvidia_examples.ROOT is None:
        pytest.skip("NVIDIA's examples are not present (set OPENCUTE_NVIDIA_EXAMPLES)")
    toolchain.require_cubin()
    out = subprocess.run([sys.executable, str(BENCH), "--examples", nvidia_examples.ROOT, "--runs", "1",
                          "--variant", "1cta"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    head = re.search(r"dense_gemm_persistent sm_100a 1-CTA \(cluster 1x1\): PTX (\d+) lines, cubin (\d+) bytes", text)
    assert head and int(head.group(1)) > 0 and int(head.group(2)) > 0, text
    for figure in ("wall", "cpu", "trace", "nvvm", "link"):
        m = re.search(rf"^  {figure}\s+median\s+([\d.]+) ms", text, re.M)
        assert m and float(m.group(1)) > 0, (figure, text)
