"""NVIDIA's AOT export drivers (`dsl_tutorials/export/run_with_static_linking.cpp` and
`run_with_dynamic_loading.cpp`, read from ../shared at run time when present) compile and link,
with the commands of their shell scripts, against headers and objects that OpenCuTe's
`export_to_c` writes for functions of the same signatures (written here in the tutorial's
style) and against OpenCuTe's runtime libraries. Running them needs a GPU (test_export.py's
GPU test runs the scripts themselves)."""
import os
import shutil
import subprocess

import pytest

import nvidia_examples

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream
import toolchain

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = nvidia_examples.path("dsl_tutorials", "export")
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
CXX = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")

pytestmark = [
    pytest.mark.skipif(not os.path.isdir(EXAMPLES), reason="NVIDIA's examples are not checked out beside the repo"),
    pytest.mark.skipif(CXX is None, reason="needs a C++ compiler"),
    pytest.mark.skipif(not os.path.isfile(os.path.join(CUDA_HOME, "include", "cuda_runtime.h")) or
                       not os.path.isfile(os.path.join(CUDA_HOME, "lib64", "libcudart_static.a")),
                       reason="needs the CUDA toolkit's headers and libcudart"),
]


@cute.kernel
def print_tensor_kernel(a: cute.Tensor):
    cute.printf("a: {}", a)


@cute.jit
def print_tensor(a: cute.Tensor, stream):
    print_tensor_kernel(a).launch(grid=(1, 1, 1), block=(1, 1, 1), stream=stream)


@cute.kernel
def add_one_kernel(a: cute.Tensor, b: cute.Tensor):
    a[0] = b[0] + 1


@cute.jit
def add_one(a: cute.Tensor, b: cute.Tensor, stream):
    add_one_kernel(a, b).launch(grid=(1, 1, 1), block=(1, 1, 1), stream=stream)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """build/ as NVIDIA's export_to_c.py leaves it: two objects, their headers, a shared library."""
    work = tmp_path_factory.mktemp("export")
    build = work / "build"
    build.mkdir()
    shape = (cute.SymInt(divisibility=16), cute.SymInt())
    a = make_fake_compact_tensor(cutlass.Float32, shape, stride_order=(1, 0))
    b = make_fake_compact_tensor(cutlass.Float32, shape, stride_order=(1, 0))
    toolchain.require_cubin()
    compiled_print = cute.compile(print_tensor, a, make_fake_stream(), options="--target gpu")
    compiled_add = cute.compile(add_one, a, b, make_fake_stream(), options="--target gpu")
    compiled_print.export_to_c(file_path=str(build), file_name="print_tensor_example", function_prefix="print_tensor")
    compiled_add.export_to_c(file_path=str(build), file_name="add_one_example", function_prefix="add_one")
    cc = os.environ.get("CC", "gcc")
    subprocess.run([cc, "-shared", "-o", "build/libexport_example.so", "build/print_tensor_example.o",
                    "build/add_one_example.o"], cwd=work, check=True)
    return work


def _runtime_dir():
    return os.path.dirname(cute.runtime.find_runtime_libraries()[0])


def test_static_linking_driver_builds(exported):
    # run_with_static_linking.sh's compile line, with its variables set to OpenCuTe's paths.
    exe = exported / "build" / "run_with_static_linking"
    done = subprocess.run(
        [CXX, "-o", "build/run_with_static_linking", f"-I{CUDA_HOME}/include", "-I./build",
         os.path.join(EXAMPLES, "run_with_static_linking.cpp"), "build/add_one_example.o",
         "build/print_tensor_example.o", os.path.join(_runtime_dir(), "libcuda_dialect_runtime_static.a"),
         f"{CUDA_HOME}/lib64/libcudart_static.a", "-ldl", "-lrt", "-lpthread"],
        cwd=exported, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert exe.is_file() and os.access(exe, os.X_OK)


def test_dynamic_loading_driver_builds(exported):
    # run_with_dynamic_loading.sh's compile line: CuteDSLRuntime.h, libcute_dsl_runtime and the
    # shared library export_to_c.py made.
    exe = exported / "build" / "run_with_dynamic_loading"
    done = subprocess.run(
        [CXX, "-o", "build/run_with_dynamic_loading", f"-I{CUDA_HOME}/include",
         f"-I{os.path.join(ROOT, 'cpp', 'include')}", os.path.join(EXAMPLES, "run_with_dynamic_loading.cpp"),
         f"-L{_runtime_dir()}", f"-L{CUDA_HOME}/lib64", "-L./build", "-lcudart", "-lcute_dsl_runtime",
         "-lexport_example"],
        cwd=exported, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert exe.is_file() and os.access(exe, os.X_OK)
    # Every library it needs resolves (the runtime and the export through their directories).
    env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join([_runtime_dir(), str(exported / "build"),
                                                             f"{CUDA_HOME}/lib64"]))
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, env=env)
    assert "not found" not in ldd.stdout, ldd.stdout


@cute.kernel
def device_add_one(a: cute.Tensor, b: cute.Tensor):
    for i in range(a.shape[0]):
        b[i] = a[i] + 1


@cute.jit
def add_one_ffi(a: cute.Tensor, b: cute.Tensor):
    device_add_one(a, b).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_tvm_ffi_cpp_bundle_driver_builds(tmp_path):
    """`tvm_ffi/aot_use_in_cpp_bundle.sh`'s compile line against `export_to_c("build/add_one.o",
    function_name="add_one")` of a TVM-FFI function (`__tvm_ffi_add_one`)."""
    pytest.importorskip("tvm_ffi")
    config = shutil.which("tvm-ffi-config")
    if config is None:
        pytest.skip("tvm-ffi-config is not on PATH")
    n = cute.sym_int()
    a, b = (make_fake_compact_tensor(cutlass.Float32, (n,)) for _ in range(2))
    toolchain.require_cubin()
    compiled = cute.compile(add_one_ffi, a, b, options="--enable-tvm-ffi --target gpu")
    (tmp_path / "build").mkdir()
    compiled.export_to_c(str(tmp_path / "build" / "add_one.o"), function_name="add_one")

    def flags(*args):
        import sys
        if args[0] == "aot":
            cmd = [sys.executable, "-m", "cutlass.cute.export.aot_config", *args[1:]]
        else:
            cmd = [config, *args]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        return subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout.split()

    source = os.path.join(EXAMPLES, "..", "tvm_ffi", "aot_use_in_cpp_bundle.cpp")
    # The script links -lcuda from the driver's directory; a machine without a GPU driver has
    # only the toolkit's stub library.
    stubs = [f"-L{CUDA_HOME}/lib64/stubs"] if os.path.isdir(f"{CUDA_HOME}/lib64/stubs") else []
    cmd = [CXX, "-o", "build/aot_use_in_cpp_bundle", f"-I{CUDA_HOME}/include", *flags("--cxxflags"), source,
           "build/add_one.o", *flags("aot", "--ldflags"), f"-L{CUDA_HOME}/lib64", *stubs, *flags("aot", "--libs"),
           "-lcuda", "-lcudart", *flags("--ldflags"), *flags("--libs")]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "build" / "aot_use_in_cpp_bundle").is_file()


@cute.kernel
def _add_one_first(a: cute.Tensor, b: cute.Tensor):
    a[0] = b[0] + 1


@cute.jit
def add_one_first(a: cute.Tensor, b: cute.Tensor):
    _add_one_first(a, b).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_load_in_python_scenario_is_refused_not_misread(tmp_path):
    """NVIDIA's `export/load_in_python.py` calls a function exported for row-major
    `(m{div=16}, n):(n, 1)` tensors with column-major `(10, 16):(1, 10)` ones (a permuted torch
    tensor, `mark_layout_dynamic()`): mode 1's compiled unit stride is 10 there, and 10 is not
    divisible by 16. The exported function refuses it, naming the layout, rather than run the
    kernel on a layout it was not compiled for (here on the CPU emulator; no CUDA needed)."""
    import numpy as np
    from cutlass.cute.runtime import from_dlpack
    shape = (cute.SymInt(divisibility=16), cute.SymInt())
    a, b = (make_fake_compact_tensor(cutlass.Float32, shape, stride_order=(1, 0)) for _ in range(2))
    compiled = cute.compile(add_one_first, a, b, options="--target cpu")
    compiled.export_to_c(file_path=str(tmp_path), file_name="add_one_example", function_prefix="add_one")
    mod = cute.runtime.load_module(str(tmp_path / "add_one_example.o"))
    x = np.arange(160, dtype=np.float32).reshape(16, 10).T  # (10, 16):(1, 10)
    y = np.ones((16, 10), np.float32).T
    with pytest.raises(ValueError, match="layout"):
        mod.add_one(from_dlpack(x).mark_layout_dynamic(), from_dlpack(y).mark_layout_dynamic())
    assert x[0, 0] == 0  # nothing ran
    # Row-major tensors of a divisible extent run.
    x = np.arange(32 * 3, dtype=np.float32).reshape(32, 3)
    y = np.full((32, 3), 5, np.float32)
    mod.add_one(from_dlpack(x).mark_layout_dynamic(), from_dlpack(y).mark_layout_dynamic())
    assert x[0, 0] == 6
