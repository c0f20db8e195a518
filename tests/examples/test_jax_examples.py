"""NVIDIA's dsl_tutorials/jax examples, unchanged, each in a fresh interpreter (their checks are
their own asserts and a final PASS). They need JAX (skipped without it) and NVIDIA's examples
beside the repository (loaded at run time, never copied). With JAX's CPU backend the kernels run
on OpenCuTe's CPU emulator at small sizes; on a GPU machine with jax[cuda] they run on the GPU at
the sizes the issue names.
"""
import json
import os
import subprocess
import sys

import pytest

import cutlass

from conftest import ROOT

# The cutlass package this process imported (the source tree, or site-packages where installed).
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))

# Where NVIDIA's examples may be: $OPENCUTE_NVIDIA_EXAMPLES (e.g. a copy carried to a GPU machine),
# or ../shared beside the checkout.
CANDIDATES = [os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(ROOT, "..", "shared", "nvidia-examples"),
              os.path.join(ROOT, "..", "..", "shared", "nvidia-examples")]
JAX_EXAMPLES = next((os.path.join(c, "dsl_tutorials", "jax") for c in CANDIDATES
                     if c and os.path.isdir(os.path.join(c, "dsl_tutorials", "jax"))), "")
pytestmark = pytest.mark.skipif(not JAX_EXAMPLES, reason="NVIDIA's examples are not present")

# The examples import cuda.bindings.driver for the CUstream annotation only.
CUDA_STAND_IN = """
import sys, types
try:
    import cuda.bindings.driver
except ImportError:
    cuda, bindings, driver = (types.ModuleType(n) for n in ("cuda", "cuda.bindings", "cuda.bindings.driver"))
    class CUstream(int):
        pass
    driver.CUstream = CUstream
    cuda.bindings, bindings.driver = bindings, driver
    sys.modules.update({"cuda": cuda, "cuda.bindings": bindings, "cuda.bindings.driver": driver})
"""


def _jax_backend():
    jax = pytest.importorskip("jax")
    return jax.default_backend()


def _run_example(name, args=(), env=None, timeout=900):
    path = os.path.join(JAX_EXAMPLES, name)
    code = CUDA_STAND_IN + f"""
sys.argv = [{path!r}] + {list(args)!r}
import runpy
runpy.run_path({path!r}, run_name="__main__")
"""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT, JAX_EXAMPLES, e.get("PYTHONPATH", "")])
    e.update(env or {})
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=JAX_EXAMPLES,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


def test_cutlass_call_basic():
    _jax_backend()
    out = _run_example("cutlass_call_basic.py")
    # Dynamic layouts by default (printed at trace time), the values at run time (host printf).
    assert "A layout:  (?,?,?):(?{i64},?{i64},1)" in out
    assert "A layout: (512,32,64):(2048,64,1)" in out
    assert "X is:  3" in out  # the static keyword value, seen at trace time
    # TensorSpec(mode=(1, 0, 2), static=True): the kernel sees modes 1, 0, 2 of (512, 32, 64).
    assert "A layout:  (32,512,64):(64,2048,1)" in out
    assert "D layout: (1,256,128,64):(2097152,8192,1,128)" in out


def test_cutlass_call_export():
    gpu = _jax_backend() == "gpu"
    out = _run_example("cutlass_call_export.py", ["--M", "512" if gpu else "64", "--N", "256" if gpu else "32"])
    assert out.count(": OK") == 7 and out.rstrip().endswith("PASS")


def test_elementwise_apply_example():
    gpu = _jax_backend() == "gpu"
    out = _run_example("elementwise_apply_example.py", ["--M", "1024" if gpu else "64", "--N", "512", "--op", "add"])
    assert "Results verified successfully!" in out and out.rstrip().endswith("PASS")


def test_cute_dsl_jax_kernels():
    _jax_backend()
    out = _run_example("cute_dsl_jax_kernels.py")
    assert out.count("PASSED") == 6 and "All kernels passed." in out


def test_cutlass_call_sharding():
    env = {} if _jax_backend() == "gpu" else {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = _run_example("cutlass_call_sharding.py", env=env)
    assert "Testing custom_partitioning..." in out and out.rstrip().endswith("PASS")


def test_cute_dsl_jax_notebook_cells(tmp_path):
    """The notebook's code cells in order, in one interpreter, leaving out the shell and magic
    cells (`!nvidia-smi`, `%pip install nvidia-cutlass-dsl`) and answering its version query for
    nvidia-cutlass-dsl with OpenCuTe's version (it only prints it). GPU only: its 512^3 GEMM
    timing cell takes minutes on the CPU emulator (the cells pass there too)."""
    if _jax_backend() != "gpu":
        pytest.skip("the notebook's timing cells are too slow on the CPU emulator")
    nb = json.load(open(os.path.join(JAX_EXAMPLES, "cute_dsl_jax.ipynb")))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    cells = [c for c in cells if not c.lstrip().startswith(("!", "%"))]
    preamble = CUDA_STAND_IN + """
import importlib.metadata as _md, cutlass as _cutlass
_real_version = _md.version
_md.version = lambda name: _cutlass.__version__ if name == "nvidia-cutlass-dsl" else _real_version(name)
import subprocess as _sp, shutil as _sh
if not _sh.which("nvidia-smi"):  # the capability query of cell 2, answered as an H100 would
    _real_check_output = _sp.check_output
    _sp.check_output = lambda cmd, **k: "9.0\\n" if cmd[:1] == ["nvidia-smi"] else _real_check_output(cmd, **k)
"""
    script = tmp_path / "notebook.py"
    script.write_text(preamble + "\n".join(f"# ---- cell {i}\n{c}\n" for i, c in enumerate(cells)))
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT, JAX_EXAMPLES, e.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e, cwd=JAX_EXAMPLES,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    for check in ("Vector Add PASSED", "SAXPY PASSED", "ReLU PASSED", "Fused Bias+ReLU PASSED", "GEMM PASSED",
                  "Export + Deserialize PASSED", "All symbolic shape tests passed."):
        assert check in done.stdout, done.stdout[-4000:]


def _tvm_ffi_example(name, cwd):
    path = os.path.join(JAX_EXAMPLES, "..", "tvm_ffi", name)
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT, e.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, path], capture_output=True, text=True, env=e, cwd=cwd, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


@pytest.mark.gpu
def test_tvm_ffi_jit_and_use_in_jax(tmp_path):
    """dsl_tutorials/tvm_ffi/jit_and_use_in_jax.py: a TVM-FFI compiled function registered with
    jax_tvm_ffi (platform "gpu") and called by jax.ffi.ffi_call; it prints b = a + 1."""
    if _jax_backend() != "gpu":
        pytest.skip("JAX has no GPU backend here")
    pytest.importorskip("jax_tvm_ffi")
    out = _tvm_ffi_example("jit_and_use_in_jax.py", tmp_path)
    assert "[ 1.  2.  3.  4.  5.  6.  7.  8.  9. 10.]" in out


@pytest.mark.gpu
def test_tvm_ffi_aot_use_in_jax(tmp_path):
    """aot_export.py (torch, gcc) then aot_use_in_jax.py: the exported library's TVM-FFI function
    in a JAX computation."""
    if _jax_backend() != "gpu":
        pytest.skip("JAX has no GPU backend here")
    pytest.importorskip("jax_tvm_ffi")
    pytest.importorskip("torch")
    _tvm_ffi_example("aot_export.py", tmp_path)
    out = _tvm_ffi_example("aot_use_in_jax.py", tmp_path)
    assert "[ 1.  2.  3.  4.  5.  6.  7.  8.  9. 10.]" in out
