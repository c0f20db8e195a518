import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")

# The tests are grouped in folders (core, nvgpu, interop, examples, libraries, docs) with the helper
# modules in helpers/; a test imports helpers and other groups' test modules by their plain names
# (`import nvidia_examples`, `from test_arch import TARGETS`), so every folder is on sys.path.
TEST_FOLDERS = sorted(os.path.join(TESTS, d) for d in os.listdir(TESTS)
                      if os.path.isdir(os.path.join(TESTS, d)) and not d.startswith((".", "_")))
for _folder in reversed(TEST_FOLDERS):
    if _folder not in sys.path:
        sys.path.insert(0, _folder)


import gpu_probe  # noqa: E402 - tests/helpers is on sys.path from here on

# Set to run the CPU tests on a machine whose CUDA set-up is broken (the GPU tests then skip).
ALLOW_BROKEN_CUDA = "OPENCUTE_TESTS_ALLOW_BROKEN_CUDA"
_GPU = None


def _gpu():
    global _GPU
    if _GPU is None:
        _GPU = gpu_probe.probe()
    return _GPU


def pytest_sessionstart(session):
    # A machine with CUDA on which OpenCuTe finds no GPU would skip every GPU test quietly: stop.
    gpu = _gpu()
    if not gpu.available and gpu.broken_cuda and not os.environ.get(ALLOW_BROKEN_CUDA):
        pytest.exit(f"CUDA is present ({gpu.broken_cuda}) but OpenCuTe finds no GPU: {gpu.why_not}\n"
                    f"Fix the CUDA set-up, or set {ALLOW_BROKEN_CUDA}=1 to run without the GPU tests.", returncode=3)


def pytest_report_header(config):
    gpu = _gpu()
    return "GPU: available" if gpu.available else f"GPU: none, the GPU tests skip ({gpu.why_not})"


def pytest_collection_modifyitems(config, items):
    gpu = _gpu()
    if gpu.available:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU (none here: {gpu.why_not})")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def run_python(code, env=None):
    """Runs code in a fresh interpreter; returns (returncode, stdout, stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr
