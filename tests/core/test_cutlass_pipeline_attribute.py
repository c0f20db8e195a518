"""`import cutlass` alone exposes `cutlass.pipeline` (NVIDIA's async_pipeline notebook writes
`cutlass.pipeline.X` after `import cutlass`), in a fresh interpreter so that no other test's
`import cutlass.pipeline` hides a missing attribute."""
import subprocess
import sys


def test_import_cutlass_exposes_pipeline_without_importing_the_submodule():
    code = ("import sys, cutlass\n"
            "assert 'cutlass.pipeline' in sys.modules\n"
            "import cutlass.pipeline as p\n"
            "assert cutlass.pipeline is p and cutlass.pipeline.NamedBarrier is p.NamedBarrier\n"
            "print('ok')\n")
    # The same `cutlass` this test process imports (the installed package, or PYTHONPATH's).
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
