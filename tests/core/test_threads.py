"""Calls from several Python threads at once: a compiled function (default ABI), a direct call of
a @jit function, a TVM-FFI function and an exported module, each called by 8 threads x 20 times
with arguments of its own (its own length, data and factor, so a call that read another thread's
arguments or scratch shows), every result checked against numpy (CPU emulator) or torch (GPU);
and first compiles of one function from several threads at once.

The CUDA context of each calling thread is checked twice: on the CPU against a stand-in driver
(a libcuda.so.1 built here with the driver's per-thread current context, whose launches fail
without it), and on the GPU, where the worker threads start with no context current (the state
of a thread that never touched CUDA) and the stream tests check that each thread's launches go
to that thread's stream."""
import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import traceback

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor, make_fake_stream
from conftest import run_python

THREADS = 8
CALLS = 20
CC = os.environ.get("CC", "cc")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def _traces_counted(monkeypatch):
    # These tests count traces and direct calls: a call that loads an earlier run's trace-key
    # entry from disk is neither (tests/core/test_trace_key.py covers those calls from threads).
    monkeypatch.setenv("OPENCUTE_DISABLE_TRACE_KEY_CACHE", "1")


@cute.kernel
def _axpb_kernel(x: cute.Tensor, y: cute.Tensor, alpha: cutlass.Float32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = bid * 32 + tid
    if i < x.shape[0]:
        y[i] = x[i] * alpha + 1.0


@cute.jit
def axpb(x: cute.Tensor, y: cute.Tensor, alpha: cutlass.Float32):
    n = x.shape[0]
    _axpb_kernel(x, y, alpha).launch(grid=((n + 31) // 32, 1, 1), block=(32, 1, 1))


@cute.jit
def axpb_on(x: cute.Tensor, y: cute.Tensor, alpha: cutlass.Float32, stream):
    n = x.shape[0]
    _axpb_kernel(x, y, alpha).launch(grid=((n + 31) // 32, 1, 1), block=(32, 1, 1), stream=stream)


@cute.jit
def weighted(a: cutlass.Int32, b: cutlass.Int32, w: cutlass.Float32):
    return a * 1000 + b, cutlass.Float32(a) * w


@cute.jit
def combine(a: cutlass.Int32, b: cutlass.Int32):
    return a * 1000 + b


@cute.kernel
def _tick(v: cutlass.Int32):
    cute.arch.thread_idx()


@cute.jit
def launch_tick(v: cutlass.Int32):
    _tick(v).launch(grid=(1, 1, 1), block=(32, 1, 1))


@cute.jit
def launch_tick_on(v: cutlass.Int32, stream):
    _tick(v).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)


# ---- the work of each call: its own length, data and factor ---------------------------------

def _length(t, c):
    return 17 + 13 * t + 3 * c  # several blocks, a partial last one


def _alpha(t, c):
    return 0.5 * (t + 1) + 0.25 * c  # dyadic: x * alpha + 1 is exact in float32 on either side


def _input(t, c):
    return (np.arange(_length(t, c), dtype=np.float32) - 7 * t + c) * np.float32(0.25)


def _expected(t, c):
    return _input(t, c) * np.float32(_alpha(t, c)) + np.float32(1)


def run_in_threads(work, threads=THREADS, calls=CALLS, before=None):
    """Runs work(t, c) for c in range(calls) on each of `threads` threads, all released at once;
    re-raises the first failure with its thread's traceback."""
    start = threading.Barrier(threads)
    failures = []

    def body(t):
        try:
            if before is not None:
                before(t)
            start.wait()
            for c in range(calls):
                work(t, c)
        except BaseException:  # noqa: BLE001 - reported below with its traceback
            failures.append(f"thread {t}:\n{traceback.format_exc()}")
            start.abort()

    workers = [threading.Thread(target=body, args=(t,)) for t in range(threads)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads take turns often: races show up in few calls
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures, failures[0]


# ---- CPU emulator ----------------------------------------------------------------------------

def _fake_xy():
    n = cute.sym_int()
    return make_fake_compact_tensor(cute.Float32, (n,)), make_fake_compact_tensor(cute.Float32, (n,))


def _check_cpu_calls(call):
    """8 x 20 calls of call(x, y, alpha) on numpy arrays, each checked as it returns."""
    def work(t, c):
        x = _input(t, c)
        y = np.full_like(x, -99)
        call(x, y, _alpha(t, c))
        np.testing.assert_array_equal(y, _expected(t, c), err_msg=f"thread {t} call {c}")

    run_in_threads(work)


def test_compiled_function_from_threads_on_emulator():
    x = np.zeros(8, np.float32)
    f = cute.compile(axpb, from_dlpack(x).mark_layout_dynamic(), from_dlpack(x.copy()).mark_layout_dynamic(), 1.0,
                     options="--target cpu")
    _check_cpu_calls(f)


def test_direct_jit_calls_from_threads_on_emulator(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")

    @cute.jit
    def axpb_direct(x: cute.Tensor, y: cute.Tensor, alpha: cutlass.Float32):
        n = x.shape[0]
        _axpb_kernel(x, y, alpha).launch(grid=((n + 31) // 32, 1, 1), block=(32, 1, 1))

    # No call before the threads: the first calls trace at once, then later ones take the direct path.
    _check_cpu_calls(axpb_direct)
    stats = axpb_direct.direct_call_stats
    assert stats["traced"] + stats["direct"] == THREADS * CALLS and stats["direct"] > 0, stats


def test_tvm_ffi_function_from_threads_on_emulator():
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    f = cute.compile(axpb, *_fake_xy(), 1.0, options="--enable-tvm-ffi --target cpu")
    _check_cpu_calls(f)


def test_exported_module_from_threads_on_emulator(tmp_path):
    x = np.zeros(8, np.float32)
    compiled = cute.compile(axpb, from_dlpack(x).mark_layout_dynamic(), from_dlpack(x.copy()).mark_layout_dynamic(),
                            1.0, options="--target cpu")
    compiled.export_to_c(str(tmp_path), file_name="axpb_threads", function_prefix="axpb")
    module = cute.runtime.load_module(str(tmp_path / "axpb_threads.o"))
    _check_cpu_calls(module.axpb)


def test_paths_called_from_threads_at_the_same_time(tmp_path, monkeypatch):
    """Each thread goes round every path, and a host-only function between calls: the state the
    paths share (the emulator's kernels, the program of a function and of its export, the
    direct-call cache) under mixed calls."""
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    x = np.zeros(8, np.float32)
    compiled = cute.compile(axpb, from_dlpack(x).mark_layout_dynamic(), from_dlpack(x.copy()).mark_layout_dynamic(),
                            1.0)
    compiled.export_to_c(str(tmp_path), file_name="mixed", function_prefix="mixed")
    host = cute.compile(weighted, 1, 2, 0.5)
    paths = [compiled, cute.runtime.load_module(str(tmp_path / "mixed.o")).mixed, axpb]
    if importlib.util.find_spec("tvm_ffi") is not None:  # optional: the TVM-FFI path too when installed
        paths.append(cute.compile(axpb, *_fake_xy(), 1.0, options="--enable-tvm-ffi"))

    def work(t, c):
        x = _input(t, c)
        y = np.full_like(x, -99)
        paths[(t + c) % len(paths)](x, y, _alpha(t, c))
        np.testing.assert_array_equal(y, _expected(t, c), err_msg=f"thread {t} call {c} path {(t + c) % len(paths)}")
        assert host(t, c, 0.25 * c) == (t * 1000 + c, np.float32(t) * np.float32(0.25 * c))

    run_in_threads(work)


def test_host_only_exported_library_from_threads(tmp_path):
    """The C runtime's exported program (what a C program or tvm_ffi.load_module calls) from
    several threads: its host interpreter and argument reading share nothing between calls."""
    tvm_ffi = pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    if shutil.which(CC) is None:
        pytest.skip("needs a C compiler")
    cute.compile(combine, 1, 2).export_to_c(str(tmp_path / "combine.o"), function_name="combine")
    libs = cute.runtime.find_runtime_libraries(enable_tvm_ffi=True)
    subprocess.run([CC, "-shared", "-o", str(tmp_path / "combine.so"), str(tmp_path / "combine.o"), *libs],
                   check=True)
    fn = tvm_ffi.load_module(str(tmp_path / "combine.so"))["combine"]

    def work(t, c):
        assert fn(t, c) == t * 1000 + c, (t, c)

    run_in_threads(work)


def test_first_compiles_of_one_function_from_threads(monkeypatch):
    """8 threads compile the same function with the same arguments at once (each its own
    trace, one in-memory cache), then call what they got; and 8 threads make the first direct
    calls of a fresh @jit function at once."""
    results = [None] * THREADS

    @cute.jit
    def fresh(x: cute.Tensor, y: cute.Tensor, alpha: cutlass.Float32):
        n = x.shape[0]
        _axpb_kernel(x, y, alpha).launch(grid=((n + 31) // 32, 1, 1), block=(32, 1, 1))

    def compile_and_call(t, c):
        x = _input(t, c)
        y = np.full_like(x, -99)
        f = cute.compile(fresh, from_dlpack(x).mark_layout_dynamic(), from_dlpack(y).mark_layout_dynamic(), 1.0,
                         options="--target cpu")
        results[t] = f
        f(x, y, _alpha(t, c))
        np.testing.assert_array_equal(y, _expected(t, c), err_msg=f"thread {t}")

    run_in_threads(compile_and_call, calls=1)
    assert all(f is not None for f in results)
    assert len({f.hash for f in results}) == 1  # one program, however many traces made it

    @cute.jit
    def fresh_direct(x: cute.Tensor, y: cute.Tensor, alpha: cutlass.Float32):
        n = x.shape[0]
        _axpb_kernel(x, y, alpha).launch(grid=((n + 31) // 32, 1, 1), block=(32, 1, 1))

    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")

    def first_calls(t, c):
        x = _input(t, c)
        y = np.full_like(x, -99)
        fresh_direct(x, y, _alpha(t, c))
        np.testing.assert_array_equal(y, _expected(t, c), err_msg=f"thread {t} call {c}")

    run_in_threads(first_calls, calls=3)
    stats = fresh_direct.direct_call_stats
    assert stats["traced"] >= 1 and stats["traced"] + stats["direct"] == THREADS * 3, stats


def test_first_tvm_ffi_compiles_from_threads():
    """The TVM-FFI function class and factory are made once, by whichever of the first compiles
    gets there (in a fresh interpreter: this process has made them already)."""
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    paths = [os.path.dirname(os.path.abspath(__file__)), os.path.join(ROOT, "tests")]  # this module, conftest
    rc, out, err = run_python(f"import sys; sys.path[:0] = {paths!r}; import test_threads; "
                              "test_threads.first_tvm_ffi_compiles(); print('done')")
    assert rc == 0 and out.strip().endswith("done"), err


def first_tvm_ffi_compiles():
    def compile_and_call(t, c):
        f = cute.compile(axpb, *_fake_xy(), 1.0, options="--enable-tvm-ffi --target cpu")
        x = _input(t, c)
        y = np.full_like(x, -99)
        f(x, y, _alpha(t, c))
        np.testing.assert_array_equal(y, _expected(t, c), err_msg=f"thread {t}")

    run_in_threads(compile_and_call, calls=2)


# ---- the CUDA context of each calling thread, against a stand-in driver (no GPU needed) ------

# A libcuda.so.1 with the driver's per-thread current context and nothing else: a launch from a
# thread with no current context fails with CUDA_ERROR_INVALID_CONTEXT (201) and one in another
# context than the module's with CUDA_ERROR_INVALID_HANDLE (400), as on the GPU; kernels do not
# run, but each launch adds its first kernel parameter (an Int32) to a sum the test reads.
FAKE_DRIVER = r"""
#include <stddef.h>
#include <stdint.h>
typedef int CUresult;
static int primary_storage, module_storage, function_storage;
static __thread void *current;
static void *loaded_in;
static long launches, launch_sum, stream_mismatches;
static int check_streams;

#define STUB(name, ...) CUresult name(__VA_ARGS__) { return 0; }
CUresult cuInit(unsigned flags) { return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = r == 201 ? "CUDA_ERROR_INVALID_CONTEXT" : "CUDA_ERROR_INVALID_HANDLE"; return 0; }
CUresult cuGetErrorString(CUresult r, const char **s) { *s = r == 201 ? "invalid device context" : "invalid resource handle"; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return i == 0 ? 0 : 101; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) { *v = attr == 75 ? 9 : attr == 76 ? 0 : 65536; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int dev) { *c = &primary_storage; return 0; }
CUresult cuCtxSetCurrent(void *c) { current = c; return 0; }
CUresult cuCtxGetCurrent(void **c) { *c = current; return 0; }
CUresult cuCtxSynchronize(void) { return current ? 0 : 201; }
CUresult cuModuleLoadData(void **m, const void *image) {
  if (!current) return 201;
  loaded_in = current;
  *m = &module_storage;
  return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { *f = &function_storage; return 0; }
static CUresult launch(void *stream, void **params) {
  if (!current) return 201;
  if (current != loaded_in) return 400;
  int32_t v = *(int32_t *)params[0];
  __sync_fetch_and_add(&launches, 1);
  __sync_fetch_and_add(&launch_sum, (long)v);
  /* With streams checked, the call for thread t passes v = 1000 t + c and stream (t + 1) * 16. */
  if (check_streams && (size_t)stream != (size_t)(v / 1000 + 1) * 16) __sync_fetch_and_add(&stream_mismatches, 1);
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, void *stream, void **params, void **extra) { return launch(stream, params); }
CUresult cuLaunchKernelEx(const void *config, void *f, void **params, void **extra) {
  return launch(*(void *const *)((const char *)config + 32), params);  /* CUlaunchConfig.hStream */
}
CUresult cuStreamIsCapturing(void *s, int *status) { *status = 0; return 0; }
STUB(cuModuleUnload, void *m)
STUB(cuFuncSetAttribute, void *f, int a, int v)
STUB(cuStreamSynchronize, void *s)
STUB(cuMemAlloc_v2, void *p, size_t n)
STUB(cuMemFree_v2, unsigned long long p)
STUB(cuMemcpyHtoD_v2, unsigned long long d, const void *s, size_t n)
STUB(cuMemcpyDtoH_v2, void *d, unsigned long long s, size_t n)
STUB(cuEventCreate, void **e, unsigned f)
STUB(cuEventRecord, void *e, void *s)
STUB(cuEventSynchronize, void *e)
STUB(cuEventDestroy_v2, void *e)
STUB(cuEventElapsedTime_v2, float *ms, void *a, void *b)
STUB(cuStreamBeginCapture_v2, void *s, int mode)
STUB(cuStreamEndCapture, void *s, void **g)
STUB(cuGraphInstantiateWithFlags, void **e, void *g, unsigned long long f)
STUB(cuGraphLaunch, void *e, void *s)
STUB(cuGraphExecDestroy, void *e)
STUB(cuGraphDestroy, void *g)
long fake_launches(void) { return launches; }
long fake_launch_sum(void) { return launch_sum; }
long fake_stream_mismatches(void) { return stream_mismatches; }
void fake_check_streams(int on) { check_streams = on; }
"""

FAKE_DRIVER_PROGRAM = r"""
import ctypes, os, sys
sys.path[:0] = {tests!r}
import cutlass, cutlass.cute as cute
import test_threads as T

fake = ctypes.CDLL("libcuda.so.1")
fake.fake_launches.restype = fake.fake_launch_sum.restype = fake.fake_stream_mismatches.restype = ctypes.c_long
assert cutlass.cuda.is_available(), "the stand-in driver was not loaded"


def no_context():
    assert fake.cuCtxSetCurrent(ctypes.c_void_p(0)) == 0


launch_tick = T.launch_tick
compiled = cute.compile(launch_tick, 1)  # on the main thread, which has no context either
compiled.export_to_c({tmp!r}, file_name="tick", function_prefix="tick")
paths = {{"compiled": compiled, "direct": launch_tick,
          "exported": cute.runtime.load_module(os.path.join({tmp!r}, "tick.o")).tick}}
if {tvm_ffi!r}:
    paths["tvm_ffi"] = cute.compile(launch_tick, 1, options="--enable-tvm-ffi")
    if {library!r}:
        import subprocess, tvm_ffi
        so = os.path.join({tmp!r}, "tick.so")
        subprocess.run([{cc!r}, "-shared", "-o", so, os.path.join({tmp!r}, "tick.o"),
                        *cute.runtime.find_runtime_libraries(enable_tvm_ffi=True)], check=True)
        paths["c_runtime"] = tvm_ffi.load_module(so)["tick"]



def check(name, call):
    before, sum_before = fake.fake_launches(), fake.fake_launch_sum()

    def work(t, c):
        if c % 5 == 4:
            no_context()  # something on this thread unset its context since its last call
        call(fn, t, 1000 * t + c)

    T.run_in_threads(work, before=lambda t: no_context())
    launched = fake.fake_launches() - before
    total = fake.fake_launch_sum() - sum_before
    want = sum(1000 * t + c for t in range(T.THREADS) for c in range(T.CALLS))
    assert (launched, total) == (T.THREADS * T.CALLS, want), (name, launched, total, want)
    assert fake.fake_stream_mismatches() == 0, (name, fake.fake_stream_mismatches())
    print(name, "ok")


for name, fn in paths.items():
    check(name, lambda fn, t, v: fn(v))


class CUstream:  # a stream handle (named as cuda-python's, as streams are recognised by type name)
    def __init__(self, handle):
        self.handle = handle

    def __int__(self):
        return self.handle


# Each thread launches on its own stream: (t + 1) * 16, checked by the driver against the argument.
fake.fake_check_streams(1)
fn = cute.compile(T.launch_tick_on, 1, cute.runtime.make_fake_stream())
check("compiled stream", lambda fn, t, v: fn(v, CUstream((t + 1) * 16)))
fn = T.launch_tick_on
check("direct stream", lambda fn, t, v: fn(v, CUstream((t + 1) * 16)))
if {tvm_ffi!r}:
    import tvm_ffi
    fn = cute.compile(T.launch_tick_on, 1, cute.runtime.make_fake_stream(use_tvm_ffi_env_stream=True),
                      options="--enable-tvm-ffi")
    cuda0 = tvm_ffi.device("cuda", 0)

    def on_env_stream(fn, t, v):
        with tvm_ffi.use_raw_stream(cuda0, (t + 1) * 16):  # TVM-FFI's environment stream is per thread
            fn(v)

    check("tvm_ffi env stream", on_env_stream)
"""


@pytest.mark.skipif(shutil.which(CC) is None, reason="needs a C compiler")
def test_each_thread_launches_in_the_programs_context(tmp_path):
    """Against a stand-in CUDA driver with per-thread current contexts: threads that have no
    context current (every thread here, the main one included, and some again between calls)
    call each path; every launch must find the module's context current, every call's argument
    must reach its launch, and with a stream per thread (an argument, or TVM-FFI's environment
    stream) each launch must go to its own thread's."""
    driver = tmp_path / "driver"
    driver.mkdir()
    (driver / "fake_cuda.c").write_text(FAKE_DRIVER)
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(driver / "libcuda.so.1"), str(driver / "fake_cuda.c")],
                   check=True, capture_output=True)
    try:
        import tvm_ffi  # noqa: F401
        have_tvm_ffi = True
    except ImportError:
        have_tvm_ffi = False
    tests = [os.path.dirname(os.path.abspath(__file__)), os.path.join(ROOT, "tests")]  # this module, conftest
    code = FAKE_DRIVER_PROGRAM.format(tests=tests, tmp=str(tmp_path), tvm_ffi=have_tvm_ffi, library=have_tvm_ffi,
                                      cc=CC)
    env = {"LD_LIBRARY_PATH": str(driver) + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""),
           "CUTE_DSL_TARGET": "", "CUTE_DSL_CACHE_DIR": str(tmp_path / "cache")}
    rc, out, err = run_python(code, env=env)
    assert rc == 0, out + err
    expected = ["compiled ok", "direct ok", "exported ok"] + (["tvm_ffi ok", "c_runtime ok"] if have_tvm_ffi else [])
    expected += ["compiled stream ok", "direct stream ok"] + (["tvm_ffi env stream ok"] if have_tvm_ffi else [])
    assert out.split("\n")[-len(expected) - 1:-1] == expected, out + err


# ---- GPU (torch CUDA tensors) ----------------------------------------------------------------

def _no_context_on_this_thread():
    """Leaves the calling thread with no current CUDA context, as a thread that never touched
    CUDA has: what a call from a fresh worker thread meets."""
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuCtxSetCurrent(ctypes.c_void_p(0)) == 0
    current = ctypes.c_void_p(1)
    assert cuda.cuCtxGetCurrent(ctypes.byref(current)) == 0 and not current.value


class _GpuCase:
    """Every thread's inputs and outputs, made (and finished) on the main thread before the
    threads start, so that the workers do nothing on the GPU but call the function."""

    def __init__(self, torch):
        self.torch = torch
        self.x = [[torch.from_numpy(_input(t, c)).cuda() for c in range(CALLS)] for t in range(THREADS)]
        self.y = [[torch.full_like(x, -99) for x in row] for row in self.x]
        self.streams = [torch.cuda.Stream() for _ in range(THREADS)]
        torch.cuda.synchronize()

    def check(self, outputs=None):
        self.torch.cuda.synchronize()
        outputs = outputs or self.y
        for t in range(THREADS):
            for c in range(CALLS):
                want = self.torch.from_numpy(_expected(t, c))
                got = outputs[t][c].cpu()
                assert self.torch.equal(got, want), f"thread {t} call {c}: {got} != {want}"

    def run_plain(self, call):
        """Each thread, with no context current, calls call(x, y, alpha) on the default stream."""
        run_in_threads(lambda t, c: call(self.x[t][c], self.y[t][c], _alpha(t, c)),
                       before=lambda t: _no_context_on_this_thread())
        self.check()

    def run_on_own_streams(self, call):
        """Each thread works on its own stream: there a sleep, then y is cleared, then the call
        (call(x, y, alpha, stream) launches on `stream`), then y is copied. Unless the kernel
        ran on the thread's stream, after the clearing, the copy shows the cleared values."""
        torch = self.torch
        copies = [[None] * CALLS for _ in range(THREADS)]

        def work(t, c):
            s = self.streams[t]
            with torch.cuda.stream(s):
                torch.cuda._sleep(200_000)
                self.y[t][c].fill_(-1)
                call(self.x[t][c], self.y[t][c], _alpha(t, c), s)
                copies[t][c] = self.y[t][c].clone()

        run_in_threads(work)
        self.check(copies)


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def _torch_pair(torch):
    x = torch.zeros(64, device="cuda")
    return from_dlpack(x).mark_layout_dynamic(), from_dlpack(torch.zeros_like(x)).mark_layout_dynamic()


@pytest.mark.gpu
def test_compiled_function_from_threads_on_gpu():
    torch = _torch()
    case = _GpuCase(torch)
    f = cute.compile(axpb, *_torch_pair(torch), 1.0)
    case.run_plain(f)


@pytest.mark.gpu
def test_a_thread_whose_context_was_unset_since_its_last_call_still_launches():
    """The per-thread memory of the context made current is not trusted blindly: after code on
    the thread unset the context (cuCtxSetCurrent(NULL)), the next launch finds no context, makes
    the program's current again and launches."""
    torch = _torch()
    case = _GpuCase(torch)
    f = cute.compile(axpb, *_torch_pair(torch), 1.0)

    def work(t, c):
        if c % 2:
            _no_context_on_this_thread()
        f(case.x[t][c], case.y[t][c], _alpha(t, c))

    run_in_threads(work, before=lambda t: _no_context_on_this_thread())
    case.check()


@pytest.mark.gpu
def test_compiled_function_from_threads_on_their_own_streams():
    torch = _torch()
    case = _GpuCase(torch)
    f = cute.compile(axpb_on, *_torch_pair(torch), 1.0, make_fake_stream())
    case.run_on_own_streams(f)


@pytest.mark.gpu
def test_direct_jit_calls_from_threads_on_gpu():
    torch = _torch()
    case = _GpuCase(torch)

    @cute.jit
    def axpb_direct(x: cute.Tensor, y: cute.Tensor, alpha: cutlass.Float32):
        n = x.shape[0]
        _axpb_kernel(x, y, alpha).launch(grid=((n + 31) // 32, 1, 1), block=(32, 1, 1))

    case.run_plain(axpb_direct)  # the first calls trace and compile on the worker threads
    assert axpb_direct.direct_call_stats["direct"] > 0


@pytest.mark.gpu
def test_direct_jit_calls_from_threads_on_their_own_streams():
    torch = _torch()
    case = _GpuCase(torch)
    case.run_on_own_streams(axpb_on)


@pytest.mark.gpu
def test_tvm_ffi_function_from_threads_on_gpu():
    torch = _torch()
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    case = _GpuCase(torch)
    n = cute.sym_int()
    fakes = make_fake_compact_tensor(cute.Float32, (n,)), make_fake_compact_tensor(cute.Float32, (n,))
    case.run_plain(cute.compile(axpb, *fakes, 1.0, options="--enable-tvm-ffi"))


@pytest.mark.gpu
def test_tvm_ffi_environment_stream_is_each_threads_torch_stream():
    torch = _torch()
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    case = _GpuCase(torch)
    n = cute.sym_int()
    fakes = make_fake_compact_tensor(cute.Float32, (n,)), make_fake_compact_tensor(cute.Float32, (n,))
    f = cute.compile(axpb_on, *fakes, 1.0, make_fake_stream(use_tvm_ffi_env_stream=True), options="--enable-tvm-ffi")
    # No stream argument: the function launches on the calling thread's current torch stream.
    case.run_on_own_streams(lambda x, y, alpha, stream: f(x, y, alpha))


@pytest.mark.gpu
def test_exported_module_from_threads_on_gpu(tmp_path):
    torch = _torch()
    case = _GpuCase(torch)
    compiled = cute.compile(axpb, *_torch_pair(torch), 1.0)
    compiled.export_to_c(str(tmp_path), file_name="axpb_threads", function_prefix="axpb")
    module = cute.runtime.load_module(str(tmp_path / "axpb_threads.o"))
    case.run_plain(module.axpb)


@pytest.mark.gpu
def test_exported_library_through_tvm_ffi_from_threads_on_gpu(tmp_path):
    """The C runtime's exported program (no Python in the call) launching from worker threads."""
    torch = _torch()
    tvm_ffi = pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    if shutil.which(CC) is None:
        pytest.skip("needs a C compiler")
    case = _GpuCase(torch)
    compiled = cute.compile(axpb, *_torch_pair(torch), 1.0)
    compiled.export_to_c(str(tmp_path / "axpb.o"), function_name="axpb")
    libs = cute.runtime.find_runtime_libraries(enable_tvm_ffi=True)
    subprocess.run([CC, "-shared", "-o", str(tmp_path / "axpb.so"), str(tmp_path / "axpb.o"), *libs], check=True)
    fn = tvm_ffi.load_module(str(tmp_path / "axpb.so"))["axpb"]
    case.run_plain(fn)


# A C program whose worker threads (pthreads that never touch CUDA) call an exported kernel
# through the C runtime: memory is made and checked on the main thread with the driver API.
PTHREADS_MAIN = r"""
#include "axpb_c.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#define THREADS 8
#define CALLS 20
typedef unsigned long long dptr;
static int (*cuInit_)(unsigned);
static int (*cuDeviceGet_)(int *, int);
static int (*cuDevicePrimaryCtxRetain_)(void **, int);
static int (*cuCtxSetCurrent_)(void *);
static int (*cuCtxSynchronize_)(void);
static int (*cuMemAlloc_)(dptr *, size_t);
static int (*cuMemcpyHtoD_)(dptr, const void *, size_t);
static int (*cuMemcpyDtoH_)(void *, dptr, size_t);

static axpb_Kernel_Module_t module;
static dptr xs[THREADS][CALLS], ys[THREADS][CALLS];
static int failures;

static int length(int t, int c) { return 17 + 13 * t + 3 * c; }
static float alpha(int t, int c) { return 0.5f * (float)(t + 1) + 0.25f * (float)c; }
static float input(int t, int c, int i) { return (float)(i - 7 * t + c) * 0.25f; }

static void *work(void *arg) {
  int t = (int)(long)arg;
  for (int c = 0; c < CALLS; ++c) {
    axpb_Tensor_x_t x = {(void *)(size_t)xs[t][c], {length(t, c)}};
    axpb_Tensor_y_t y = {(void *)(size_t)ys[t][c], {length(t, c)}};
    int rc = cute_dsl_axpb_wrapper(&module, &x, &y, alpha(t, c));
    if (rc != 0) {
      printf("thread %d call %d: %d %s\n", t, c, rc, CuteDSLRT_Get_Last_Error());
      __sync_fetch_and_add(&failures, 1);
    }
  }
  return NULL;
}

#define BIND(f, name) if (!(*(void **)&f = dlsym(lib, name))) { printf("no %s\n", name); return 2; }
#define CHECK(call) if ((call) != 0) { printf("failed: %s\n", #call); return 3; }

int main(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) { printf("no libcuda\n"); return 2; }
  BIND(cuInit_, "cuInit") BIND(cuDeviceGet_, "cuDeviceGet")
  BIND(cuDevicePrimaryCtxRetain_, "cuDevicePrimaryCtxRetain") BIND(cuCtxSetCurrent_, "cuCtxSetCurrent")
  BIND(cuCtxSynchronize_, "cuCtxSynchronize") BIND(cuMemAlloc_, "cuMemAlloc_v2")
  BIND(cuMemcpyHtoD_, "cuMemcpyHtoD_v2") BIND(cuMemcpyDtoH_, "cuMemcpyDtoH_v2")
  void *ctx = NULL;
  int dev = 0;
  CHECK(cuInit_(0)) CHECK(cuDeviceGet_(&dev, 0)) CHECK(cuDevicePrimaryCtxRetain_(&ctx, dev))
  CHECK(cuCtxSetCurrent_(ctx))
  float buf[512];
  for (int t = 0; t < THREADS; ++t)
    for (int c = 0; c < CALLS; ++c) {
      size_t bytes = sizeof(float) * (size_t)length(t, c);
      CHECK(cuMemAlloc_(&xs[t][c], bytes)) CHECK(cuMemAlloc_(&ys[t][c], bytes))
      for (int i = 0; i < length(t, c); ++i) buf[i] = input(t, c, i);
      CHECK(cuMemcpyHtoD_(xs[t][c], buf, bytes))
      for (int i = 0; i < length(t, c); ++i) buf[i] = -99.0f;
      CHECK(cuMemcpyHtoD_(ys[t][c], buf, bytes))
    }
  if (axpb_Kernel_Module_Load(&module) != 0) { printf("load: %s\n", CuteDSLRT_Get_Last_Error()); return 4; }
  pthread_t threads[THREADS];
  for (long t = 0; t < THREADS; ++t) pthread_create(&threads[t], NULL, work, (void *)t);
  for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
  CHECK(cuCtxSynchronize_())
  int wrong = 0;
  for (int t = 0; t < THREADS; ++t)
    for (int c = 0; c < CALLS; ++c) {
      CHECK(cuMemcpyDtoH_(buf, ys[t][c], sizeof(float) * (size_t)length(t, c)))
      for (int i = 0; i < length(t, c); ++i)
        if (buf[i] != input(t, c, i) * alpha(t, c) + 1.0f) ++wrong;
    }
  printf("failures %d wrong %d\n", failures, wrong);
  return 0;
}
"""


def _build_pthreads_program(tmp_path, target):
    x = np.zeros(64, np.float32)
    compiled = cute.compile(axpb, from_dlpack(x).mark_layout_dynamic(), from_dlpack(x.copy()).mark_layout_dynamic(),
                            1.0, options=f"--target {target}")
    compiled.export_to_c(str(tmp_path), file_name="axpb_c", function_prefix="axpb")
    (tmp_path / "main.c").write_text(PTHREADS_MAIN)
    exe = tmp_path / "main"
    subprocess.run([CC, str(tmp_path / "main.c"), str(tmp_path / "axpb_c.o"), *cute.runtime.find_runtime_libraries(),
                    "-I", str(tmp_path), "-I", os.path.join(ROOT, "cpp", "include"), "-ldl", "-lpthread",
                    "-o", str(exe)], check=True, capture_output=True)
    return exe


@pytest.mark.skipif(shutil.which(CC) is None, reason="needs a C compiler")
def test_pthreads_program_with_exported_kernels_builds(tmp_path):
    """The GPU test's C program builds against the generated header (it runs only on a GPU)."""
    assert os.access(_build_pthreads_program(tmp_path, "gpu"), os.X_OK)


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which(CC) is None, reason="needs a C compiler")
def test_c_program_calls_exported_kernels_from_pthreads(tmp_path):
    done = subprocess.run([str(_build_pthreads_program(tmp_path, "gpu"))], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "failures 0 wrong 0", done.stdout
