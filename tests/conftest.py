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


def _gpu_available():
    try:
        import cutlass
        return cutlass.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def run_python(code, env=None):
    """Runs code in a fresh interpreter; returns (returncode, stdout, stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr
