"""`import cutlass` alone exposes `cutlass.pipeline` (NVIDIA's async_pipeline notebook writes
`cutlass.pipeline.X` after `import cutlass`), in a fresh interpreter so that no other test's
`import cutlass.pipeline` hides a missing attribute."""
import os
import subprocess
import sys

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")


def test_import_cutlass_exposes_pipeline_without_importing_the_submodule():
    code = ("import sys, cutlass\n"
            "assert 'cutlass.pipeline' in sys.modules\n"
            "import cutlass.pipeline as p\n"
            "assert cutlass.pipeline is p and cutlass.pipeline.NamedBarrier is p.NamedBarrier\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
