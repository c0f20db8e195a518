"""Ahead-of-time export (`compiled.export_to_c`, `cute.runtime.load_module`,
`cute.runtime.find_runtime_libraries`): object files and headers, C programs that link them
and run without Python, and exported functions loaded back into Python (CPU emulator)."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import nvidia_examples

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None, reason="needs a C compiler")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = nvidia_examples.path("dsl_tutorials", "export")
CC = os.environ.get("CC", "cc")


def _runtime_dir():
    return os.path.dirname(cute.runtime.find_runtime_libraries()[0])


def _run_c(tmp_path, source, objects, static=False):
    """Compiles `source` (C) with the exported objects and the runtime library; returns the
    finished process (stdout, returncode)."""
    src = tmp_path / "main.c"
    src.write_text(source)
    exe = tmp_path / ("main_static" if static else "main")
    include = os.path.join(ROOT, "cpp", "include")
    if static:
        # The static runtime is C++: link with the C++ driver, as NVIDIA's static script does.
        cmd = [shutil.which("c++") or "g++", "-x", "c", str(src), "-x", "none", *map(str, objects),
               os.path.join(_runtime_dir(), "libcuda_dialect_runtime_static.a"), "-ldl", "-lpthread"]
    else:
        cmd = [CC, str(src), *map(str, objects), *cute.runtime.find_runtime_libraries()]
    subprocess.run(cmd + ["-I", str(tmp_path), "-I", include, "-o", str(exe)], check=True, capture_output=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)


@cute.jit
def affine(x: cutlass.Int32, y: cutlass.Int32, scale: cutlass.Float32):
    return x * 7 + y, cutlass.Float32(x) * scale


def test_export_writes_object_and_header(tmp_path):
    compiled = cute.compile(affine, 1, 2, 0.5)
    compiled.export_to_c(file_path=str(tmp_path), file_name="affine_example", function_prefix="affine")
    header = (tmp_path / "affine_example.h").read_text()
    assert (tmp_path / "affine_example.o").stat().st_size > 0
    assert "int32_t affine_Kernel_Module_Load(affine_Kernel_Module_t *module);" in header
    assert ("int32_t cute_dsl_affine_wrapper(affine_Kernel_Module_t *module, int32_t x, int32_t y, float scale, "
            "int32_t *result0, float *result1);") in header
    # The object defines the header's functions (and nothing else global but what it calls).
    nm = subprocess.run(["nm", "-g", "--defined-only", str(tmp_path / "affine_example.o")], capture_output=True,
                        text=True)
    if nm.returncode == 0:
        defined = {line.split()[-1] for line in nm.stdout.splitlines()}
        assert defined == {"affine_Kernel_Module_Load", "affine_Kernel_Module_Unload", "cute_dsl_affine_wrapper",
                           "__tvm_ffi_affine"}


def test_c_program_runs_exported_host_function(tmp_path):
    """The exported host program runs in a C program linked with the runtime library: no
    Python in the process."""
    compiled = cute.compile(affine, 1, 2, 0.5)
    compiled.export_to_c(str(tmp_path), file_name="affine_example", function_prefix="affine")
    main = r'''
#include "affine_example.h"
int main(void) {
  affine_Kernel_Module_t m;
  int32_t r0 = 0; float r1 = 0;
  if (affine_Kernel_Module_Load(&m) != 0) { printf("load: %s\n", CuteDSLRT_Get_Last_Error()); return 1; }
  int32_t rc = cute_dsl_affine_wrapper(&m, 6, -4, 0.25f, &r0, &r1);
  printf("%d %d %g\n", rc, r0, r1);
  return affine_Kernel_Module_Unload(&m);
}
'''
    for static in (False, True):
        done = _run_c(tmp_path, main, [tmp_path / "affine_example.o"], static=static)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.split() == ["0", str(6 * 7 - 4), str(6 * 0.25)]
    # The Python-side reference: the compiled function itself.
    assert compiled(6, -4, 0.25) == (6 * 7 - 4, 1.5)


@cute.jit
def layout_probe(a: cute.Tensor):
    return a.shape[0] * 1000 + a.shape[1], a.stride[0]


def test_c_program_passes_tensor_structs(tmp_path):
    """Dynamic shapes are int32 and dynamic strides int64 (the CuTe DSL's defaults), in mode
    order, after the data pointer; the runtime checks the divisibility the code assumed."""
    x = np.zeros((8, 6), dtype=np.float32)
    t = from_dlpack(x).mark_layout_dynamic()
    compiled = cute.compile(layout_probe, t)
    compiled.export_to_c(str(tmp_path), file_name="probe", function_prefix="probe")
    header = (tmp_path / "probe.h").read_text()
    assert "typedef struct {\n  void *data;\n  int32_t dynamic_shapes[2];\n  int64_t dynamic_strides[1];\n" \
           "} probe_Tensor_a_t;" in header
    main = r'''
#include "probe.h"
int main(void) {
  float buf[64];
  probe_Tensor_a_t a;
  probe_Kernel_Module_t m;
  int32_t r0 = 0; int64_t r1 = 0;
  a.data = buf; a.dynamic_shapes[0] = 7; a.dynamic_shapes[1] = 5; a.dynamic_strides[0] = 9;
  if (probe_Kernel_Module_Load(&m) != 0) return 1;
  int32_t rc = cute_dsl_probe_wrapper(&m, &a, &r0, &r1);
  printf("%d %d %lld\n", rc, r0, (long long)r1);
  return 0;
}
'''
    done = _run_c(tmp_path, main, [tmp_path / "probe.o"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "7005", "9"]
    # Python computes the same from the same layout.
    assert compiled(np.zeros((7, 9), dtype=np.float32)[:, :5]) == (7005, 9)


@cute.jit
def divisible_probe(a: cute.Tensor):
    return a.shape[0]


def test_c_runtime_rejects_arguments_the_code_was_not_compiled_for(tmp_path):
    x = np.zeros((16,), dtype=np.float32)
    t = from_dlpack(x, assumed_align=16).mark_compact_shape_dynamic(mode=0, divisibility=4)
    cute.compile(divisible_probe, t).export_to_c(str(tmp_path), file_name="div", function_prefix="div")
    main = r'''
#include "div.h"
int main(void) {
  float buf[64] __attribute__((aligned(16)));
  div_Tensor_a_t a;
  div_Kernel_Module_t m;
  int32_t r = -1, rc;
  if (div_Kernel_Module_Load(&m) != 0) return 1;
  a.data = buf; a.dynamic_shapes[0] = 12;
  rc = cute_dsl_div_wrapper(&m, &a, &r);
  printf("ok %d %d\n", rc, r);
  a.dynamic_shapes[0] = 10;
  rc = cute_dsl_div_wrapper(&m, &a, &r);
  printf("rc %d\n%s\n", rc, CuteDSLRT_Get_Last_Error());
  a.data = (char *)buf + 4; a.dynamic_shapes[0] = 12;
  rc = cute_dsl_div_wrapper(&m, &a, &r);
  printf("rc %d\n%s\n", rc, CuteDSLRT_Get_Last_Error());
  return 0;
}
'''
    done = _run_c(tmp_path, main, [tmp_path / "div.o"])
    lines = done.stdout.splitlines()
    assert lines[0] == "ok 0 12"
    assert lines[1] == "rc -4"  # -CuteDSLRT_Error_Argument_Mismatch
    assert "shape mode 0 (10) is not divisible by 4" in lines[2]
    assert lines[3] == "rc -4"
    assert "is not aligned to the 16 bytes the function was compiled for" in lines[4]


def test_dynamic_loading_api_from_shared_library(tmp_path):
    """CuteDSLRuntime.h: a shared library built from two exported objects (no runtime library
    linked into it) is loaded by path; functions are found by their exported names."""
    cute.compile(affine, 1, 2, 0.5).export_to_c(str(tmp_path), file_name="one", function_prefix="first")
    cute.compile(divisible_probe, np.zeros(4, dtype=np.float32)).export_to_c(
        str(tmp_path / "two.o"), function_name="second")
    assert (tmp_path / "two.h").exists()
    lib = tmp_path / "libboth.so"
    subprocess.run([CC, "-shared", "-o", str(lib), str(tmp_path / "one.o"), str(tmp_path / "two.o")], check=True)
    main = r'''
#include "CuteDSLRuntime.h"
int main(int argc, char **argv) {
  CuteDSLRT_Module_t *m = NULL;
  CuteDSLRT_Function_t *f = NULL;
  const char *libs[] = {argv[1]};
  int32_t x = 3, y = 4, r0 = 0, status = -1; float s = 2.0f, r1 = 0;
  void *args[] = {&x, &y, &s, &r0, &r1, &status};
  if (CuteDSLRT_Module_Create_From_Bytes(&m, NULL, 0, libs, 1) != CuteDSLRT_Error_Success) return 1;
  printf("missing %d\n", (int)CuteDSLRT_Module_Get_Function(&f, m, "third"));
  if (CuteDSLRT_Module_Get_Function(&f, m, "second") != CuteDSLRT_Error_Success) return 2;
  if (CuteDSLRT_Module_Get_Function(&f, m, "first") != CuteDSLRT_Error_Success) return 3;
  int rc = (int)CuteDSLRT_Function_Run(f, args, 6);
  printf("run %d %d %g %d\n", rc, r0, r1, status);
  printf("count %d\n", (int)CuteDSLRT_Function_Run(f, args, 5));
  return CuteDSLRT_Module_Destroy(m);
}
'''
    src = tmp_path / "dyn.c"
    src.write_text(main)
    exe = tmp_path / "dyn"
    subprocess.run([CC, str(src), "-I", os.path.join(ROOT, "cpp", "include"), "-L", _runtime_dir(),
                    "-lcute_dsl_runtime", "-o", str(exe)], check=True)
    done = subprocess.run([str(exe), str(lib)], capture_output=True, text=True,
                          env=dict(os.environ, LD_LIBRARY_PATH=_runtime_dir()))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["missing 2", "run 0 25 6 0", "count 4"]


@cute.kernel
def _scale_kernel(src: cute.Tensor, dst: cute.Tensor, factor: cutlass.Float32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = bid * 32 + tid
    if i < src.shape[0]:
        dst[i] = src[i] * factor


@cute.jit
def scale(src: cute.Tensor, dst: cute.Tensor, factor: cutlass.Float32):
    n = src.shape[0]
    _scale_kernel(src, dst, factor).launch(grid=((n + 31) // 32, 1, 1), block=(32, 1, 1))


def test_load_module_runs_exported_kernel_on_emulator(tmp_path):
    a = np.arange(70, dtype=np.float32)
    b = np.zeros_like(a)
    compiled = cute.compile(scale, from_dlpack(a).mark_layout_dynamic(), from_dlpack(b).mark_layout_dynamic(), 2.0)
    compiled.export_to_c(str(tmp_path), file_name="scale_example", function_prefix="scale")
    subprocess.run([CC, "-shared", "-o", str(tmp_path / "libscale.so"), str(tmp_path / "scale_example.o")],
                   check=True)
    for path in ("scale_example.o", "libscale.so"):
        mod = cute.runtime.load_module(str(tmp_path / path))
        x = np.random.default_rng(1).standard_normal(45).astype(np.float32)
        y = np.zeros_like(x)
        mod.scale(from_dlpack(x).mark_layout_dynamic(), dst=y, factor=-1.5)
        np.testing.assert_allclose(y, x * np.float32(-1.5), rtol=1e-6)
        # The exported function checks its arguments as the compiled one does.
        with pytest.raises(cute.DSLUserCodeError, match="element type"):
            mod.scale(x.astype(np.float64), y, 1.0)
        with pytest.raises(cute.DSLUserCodeError, match="takes 3 runtime arguments, got 2"):
            mod.scale(x, y)
        with pytest.raises(cute.DSLUserCodeError, match="missing arguments: factor"):
            mod.scale(x, dst=y)


def test_load_module_rejects_a_file_without_exports(tmp_path):
    junk = tmp_path / "junk.o"
    junk.write_bytes(b"\x7fELF not an export")
    with pytest.raises(cute.DSLRuntimeError, match="holds no function exported"):
        cute.runtime.load_module(str(junk))


@cute.jit
def c_keywords(int: cutlass.Int32, module: cutlass.Int32, result0: cutlass.Int32):  # noqa: A002
    return int * 100 + module * 10 + result0


def test_parameter_names_that_clash_in_c_are_renamed(tmp_path):
    cute.compile(c_keywords, 1, 2, 3).export_to_c(str(tmp_path), file_name="kw", function_prefix="kw")
    header = (tmp_path / "kw.h").read_text()
    assert "int32_t int_, int32_t module_, int32_t result0_, int32_t *result0)" in header
    done = _run_c(tmp_path, r"""
#include "kw.h"
int main(void) {
  kw_Kernel_Module_t m; int32_t r = 0;
  if (kw_Kernel_Module_Load(&m) || cute_dsl_kw_wrapper(&m, 1, 2, 3, &r)) return 1;
  printf("%d\n", r);
  return 0;
}
""", [tmp_path / "kw.o"])
    assert done.returncode == 0 and done.stdout.strip() == "123"


def test_export_rejects_a_name_that_is_not_a_c_identifier(tmp_path):
    compiled = cute.compile(affine, 1, 2, 0.5)
    with pytest.raises(cute.DSLUserCodeError, match="not a C identifier"):
        compiled.export_to_c(str(tmp_path), file_name="x", function_prefix="add-one")


def test_find_runtime_libraries():
    libs = cute.runtime.find_runtime_libraries()
    assert libs and all(os.path.isabs(p) and os.path.isfile(p) for p in libs)
    assert os.path.isfile(os.path.join(_runtime_dir(), "libcuda_dialect_runtime_static.a"))
    try:
        import tvm_ffi  # noqa: F401
    except ImportError:
        with pytest.raises(cute.DSLRuntimeError, match="apache-tvm-ffi"):
            cute.runtime.find_runtime_libraries(enable_tvm_ffi=True)


# ---- NVIDIA's export tutorial, unchanged (GPU) -----------------------------------------------

def _nvidia_layout(tmp_path):
    """A copy of the package layout NVIDIA's scripts expect: `<cutlass>/../../cu12/{lib,include}`
    (what `pip install .` lays out), built from this checkout through symlinks."""
    import cutlass as pkg
    root = tmp_path / "wheel"
    # A copy, not a symlink: the scripts' `<cutlass>/../..` must resolve inside `root`.
    shutil.copytree(os.path.dirname(pkg.__file__), root / "python_packages" / "cutlass", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    lib, inc = root / "cu12" / "lib", root / "cu12" / "include"
    lib.mkdir(parents=True)
    inc.mkdir(parents=True)
    for name in ("libcute_dsl_runtime.so", "libcuda_dialect_runtime_static.a"):
        os.symlink(os.path.join(_runtime_dir(), name), lib / name)
    os.symlink(os.path.join(ROOT, "cpp", "include", "CuteDSLRuntime.h"), inc / "CuteDSLRuntime.h")
    env = dict(os.environ, PYTHONPATH=str(root / "python_packages"),
               CUDA_HOME=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    return env


@pytest.mark.gpu
@pytest.mark.skipif(not os.path.isdir(EXAMPLES), reason="NVIDIA's examples are not checked out beside the repo")
def test_nvidia_export_tutorial(tmp_path):
    env = _nvidia_layout(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, "export_to_c.py")], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    # load_in_python.py calls the functions exported for row-major tensors with column-major ones
    # (see test_nvidia_export_drivers_build.py's refusal test): refused, naming the layout.
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, "load_in_python.py")], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "ValueError" in done.stderr and "layout" in done.stderr, done.stdout + done.stderr
    for script in ("run_with_static_linking.sh", "run_with_dynamic_loading.sh"):
        done = subprocess.run(["bash", os.path.join(EXAMPLES, script)], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Error" not in done.stdout, done.stdout


def test_aot_config_flags_build_a_program_that_finds_the_runtime(tmp_path):
    """`python -m cutlass.cute.export.aot_config` (the *-config convention NVIDIA's AOT bundle
    script uses): the flags build a program against the exported object that runs without
    LD_LIBRARY_PATH (the runtime's directory is in its rpath)."""
    def config(flag):
        out = subprocess.run([sys.executable, "-m", "cutlass.cute.export.aot_config", flag], capture_output=True,
                             text=True, check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        return out.stdout.split()
    assert os.path.isfile(os.path.join(config("--libdir")[0], "libcute_dsl_runtime.so"))
    assert os.path.isfile(os.path.join(config("--includedir")[0], "CuteDSLRuntime.h"))
    cute.compile(affine, 1, 2, 0.5).export_to_c(str(tmp_path / "affine.o"), function_name="affine")
    src = tmp_path / "main.c"
    src.write_text(r'''
#include "CuteDSLRuntime.h"
#include "affine.h"
int main(void) {
  affine_Kernel_Module_t m;
  int32_t r0 = 0; float r1 = 0;
  if (affine_Kernel_Module_Load(&m)) return 1;
  if (cute_dsl_affine_wrapper(&m, 2, 1, 3.0f, &r0, &r1)) return 2;
  printf("%d %g\n", r0, r1);
  return affine_Kernel_Module_Unload(&m);
}
''')
    exe = tmp_path / "main"
    subprocess.run([CC, *config("--cflags"), "-I", str(tmp_path), str(src), str(tmp_path / "affine.o"),
                    *config("--ldflags"), *config("--libs"), "-o", str(exe)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    done = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["15", "6"]



# ---- the TVM-FFI entry point (`__tvm_ffi_<name>`), called through TVM-FFI's C ABI ------------

_TVM_FFI_PRELUDE = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
/* TVM-FFI's and DLPack's C ABI (tvm/ffi/c_api.h, dlpack.h), spelled out for the test. */
typedef struct { int32_t type_index; uint32_t zero_padding; union { int64_t v_int64; double v_float64; void *v_ptr; }; } Any;
typedef struct { int32_t device_type, device_id; } Dev;
typedef struct { uint8_t code, bits; uint16_t lanes; } DType;
typedef struct { void *data; Dev device; int32_t ndim; DType dtype; int64_t *shape; int64_t *strides; uint64_t byte_offset; } DLT;
static char raised[512];
/* libtvm_ffi's error hook: the runtime finds it in the process. */
void TVMFFIErrorSetRaisedFromCStr(const char *kind, const char *message) { snprintf(raised, sizeof raised, "%s: %s", kind, message); }
"""


def _run_tvm_ffi_program(tmp_path, obj, body):
    src = tmp_path / "tvm.c"
    src.write_text(_TVM_FFI_PRELUDE + body)
    exe = tmp_path / "tvm"
    subprocess.run([CC, "-rdynamic", str(src), str(obj), *cute.runtime.find_runtime_libraries(), "-o", str(exe)],
                   check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)


@cute.jit
def strided_sum(a: cute.Tensor, k: cutlass.Int32):
    return a.shape[0] * 100 + a.stride[0] * 10 + k


def test_tvm_ffi_entry_point_takes_dltensors_and_numbers(tmp_path):
    x = np.zeros((6, 4), dtype=np.float32)
    compiled = cute.compile(strided_sum, from_dlpack(x).mark_layout_dynamic(), 1)
    compiled.export_to_c(str(tmp_path / "ss.o"), function_name="ss")
    done = _run_tvm_ffi_program(tmp_path, tmp_path / "ss.o", r"""
int __tvm_ffi_ss(void *self, const void *args, int32_t num_args, void *result);
int main(void) {
  float buf[64];
  int64_t shape[2] = {5, 3}, strides[2] = {7, 1};
  DLT t = {buf, {1, 0}, 2, {2, 32, 1}, shape, strides, 0};
  Any args[2], result;
  memset(args, 0, sizeof args);
  args[0].type_index = 7; args[0].v_ptr = &t;      /* kTVMFFIDLTensorPtr */
  args[1].type_index = 1; args[1].v_int64 = 4;     /* kTVMFFIInt */
  int rc = __tvm_ffi_ss(0, args, 2, &result);
  printf("%d %d %lld\n", rc, result.type_index, (long long)result.v_int64);
  t.strides = 0;                                    /* compact row-major */
  rc = __tvm_ffi_ss(0, args, 2, &result);
  printf("%d %lld\n", rc, (long long)result.v_int64);
  t.dtype.bits = 64;
  rc = __tvm_ffi_ss(0, args, 2, &result);
  printf("%d %s\n", rc, raised);
  t.dtype.bits = 32;
  args[1].type_index = 7;
  rc = __tvm_ffi_ss(0, args, 2, &result);
  printf("%d %s\n", rc, raised);
  rc = __tvm_ffi_ss(0, args, 1, &result);
  printf("%d %s\n", rc, raised);
  return 0;
}
""")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"0 1 {5 * 100 + 7 * 10 + 4}"  # kTVMFFIInt result
    assert lines[1] == f"0 {5 * 100 + 3 * 10 + 4}"
    assert lines[2].startswith("-1 TypeError: Mismatched Tensor dtype on argument #0 (a)") and "float64" in lines[2]
    assert lines[3] == "-1 TypeError: Mismatched type on argument #1 when calling `ss`, expected a number, got Tensor"
    assert lines[4] == "-1 TypeError: Expected 2 arguments when calling `ss`, got 1"
    # The same function in Python agrees.
    assert compiled(np.zeros((5, 7), dtype=np.float32)[:, :3], 4) == 5 * 100 + 7 * 10 + 4


def test_tvm_ffi_loads_an_exported_shared_library(tmp_path):
    """With apache-tvm-ffi installed: tvm_ffi.load_module finds `__tvm_ffi_<name>`, passes its
    tensor objects, and our argument errors surface as Python exceptions of the right class."""
    tvm_ffi = pytest.importorskip("tvm_ffi")
    x = np.zeros((6, 4), dtype=np.float32)
    compiled = cute.compile(strided_sum, from_dlpack(x).mark_layout_dynamic(), 1)
    compiled.export_to_c(str(tmp_path / "ss.o"), function_name="ss")
    libs = cute.runtime.find_runtime_libraries(enable_tvm_ffi=True)
    subprocess.run([CC, "-shared", "-o", str(tmp_path / "ss.so"), str(tmp_path / "ss.o"), *libs], check=True)
    mod = tvm_ffi.load_module(str(tmp_path / "ss.so"))
    assert mod.ss(tvm_ffi.from_dlpack(np.zeros((5, 3), np.float32)), 4) == 5 * 100 + 3 * 10 + 4
    with pytest.raises(TypeError, match="expected float32, got float64"):
        mod.ss(tvm_ffi.from_dlpack(np.zeros((5, 3), np.float64)), 4)
    # cute.runtime.load_module reads the same library.
    y = np.zeros((5, 7), dtype=np.float32)[:, :3]
    assert cute.runtime.load_module(str(tmp_path / "ss.so"), enable_tvm_ffi=True).ss(y, 4) == compiled(y, 4)


@pytest.mark.gpu
@pytest.mark.skipif(not os.path.isdir(EXAMPLES), reason="NVIDIA's examples are not checked out beside the repo")
def test_nvidia_tvm_ffi_aot_tutorial(tmp_path):
    pytest.importorskip("tvm_ffi")
    pytest.importorskip("torch")
    tvm_examples = os.path.join(EXAMPLES, "..", "tvm_ffi")
    env = _nvidia_layout(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    for cmd in ([sys.executable, os.path.join(tvm_examples, "aot_export.py")],
                [sys.executable, os.path.join(tvm_examples, "aot_use_in_torch.py")],
                ["bash", os.path.join(tvm_examples, "aot_use_in_cpp_bundle.sh")]):
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "1 2 3 4 5 6 7 8 9 10" in done.stdout


@cute.jit
def shared_symbol_probe(a: cute.Tensor, b: cute.Tensor):
    return a.shape[0] * 1000 + b.shape[1]


def test_tensors_sharing_a_symbol_each_have_their_fields_and_must_agree(tmp_path):
    # As NVIDIA's export_to_c.py: two fake tensors built from one shape of symbols. The code reads
    # the symbols from the first; the second's struct still has its fields, checked to match.
    from cutlass.cute.runtime import make_fake_compact_tensor
    shape = (cute.sym_int(divisibility=2), cute.sym_int())
    a = make_fake_compact_tensor(cutlass.Float32, shape, stride_order=(1, 0))
    b = make_fake_compact_tensor(cutlass.Float32, shape, stride_order=(1, 0))
    compiled = cute.compile(shared_symbol_probe, a, b)
    compiled.export_to_c(str(tmp_path), file_name="shared", function_prefix="shared")
    header = (tmp_path / "shared.h").read_text()
    assert header.count("int32_t dynamic_shapes[2];") == 2, header
    main = r'''
#include "shared.h"
#include "CuteDSLRuntime.h"
int main(int argc, char** argv) {
  float buf[64];
  shared_Tensor_a_t a;
  shared_Tensor_b_t b;
  shared_Kernel_Module_t m;
  int32_t r0 = 0;
  a.data = buf; a.dynamic_shapes[0] = 4; a.dynamic_shapes[1] = 6; a.dynamic_strides[0] = 6;
  b.data = buf; b.dynamic_shapes[0] = 4; b.dynamic_shapes[1] = argc > 1 ? 5 : 6; b.dynamic_strides[0] = 6;
  if (shared_Kernel_Module_Load(&m) != 0) return 1;
  int32_t rc = cute_dsl_shared_wrapper(&m, &a, &b, &r0);
  printf("%d %d\n", rc, r0);
  if (rc != 0) fprintf(stderr, "%s\n", CuteDSLRT_Get_Last_Error());
  return 0;
}
'''
    done = _run_c(tmp_path, main, [tmp_path / "shared.o"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "4006"]
    mismatch = subprocess.run([str(tmp_path / "main"), "mismatch"], capture_output=True, text=True)
    rc, _ = mismatch.stdout.split()
    assert rc != "0"
    assert "must equal 6" in mismatch.stderr + mismatch.stdout
