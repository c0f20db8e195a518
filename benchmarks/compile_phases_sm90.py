#!/usr/bin/env python3
"""Where the cold compile of FlashAttention-4's SM90 forward and quack's SM90 GEMM goes (issue 23),
without a GPU: each kernel is traced and compiled for sm_90a (PTX and a cubin; the launch then
refuses the CPU tensors), disk cache off.

    python3 benchmarks/compile_phases_sm90.py [--fa4 DIR] [--kernels fa4 fa4_causal gemm] [--runs 3]

Each run is a fresh process, so its first compile is cold (the preprocessor rewrites every @jit
function it reaches, the toolchain loads); the same compile then runs again warm in that process.
Per compile: wall time, the main thread's CPU time and the CPU time of ptxas (a subprocess), which
on a shared machine say more than the wall times; the main thread's CPU split into the Python side
(trace_cpu: preprocessor, tracing, argument plan; of it preprocess_ms the preprocessor) and the C++
back end (backend_cpu: dead code, verifier, IR print and hash, NVVM IR emission, libNVVM), and
OpenCuTe's own wall-clock phases (`timings_ms`: trace, verify = dead code, verifier, IR print and
hash, lower = NVVM IR emission, nvvm = libNVVM, link = ptxas or nvJitLink).
--python-cache keeps the preprocessor's rewritten functions on disk between the runs (the case of a
new configuration of a library whose source an earlier process traced); without it every run starts
with none (CUTE_DSL_DISABLE_FILE_CACHING). quack is imported from the environment; FA4's flash_attn/cute from --fa4. torch (CPU)
must be importable.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

CHILD = r'''
import glob, json, math, os, resource, sys, time, types, importlib
kernel, fa4_dir, python_cache = sys.argv[1], sys.argv[2], sys.argv[3]
if python_cache:  # the preprocessor's cache there; compiled kernels removed before each compile
    os.environ["CUTE_DSL_CACHE_DIR"] = python_cache
else:
    os.environ["CUTE_DSL_DISABLE_FILE_CACHING"] = "1"
os.environ["OPENCUTE_DISABLE_TRACE_KEY_CACHE"] = "1"
os.environ["CUTE_DSL_ARCH"] = "sm_90a"
os.environ["CUTE_DSL_TARGET"] = "gpu"
import torch
import cutlass
import cutlass.cute as cute
from cutlass._dsl import preprocess

preprocess_s = [0.0]
transform = preprocess._transform_code


def timed_transform(fn):
    start = time.thread_time()
    try:
        return transform(fn)
    finally:
        preprocess_s[0] += time.thread_time() - start


preprocess._transform_code = timed_transform


class OnCpu:
    """The libraries assert is_cuda on their inputs."""

    def __enter__(self):
        self.saved = torch.Tensor.is_cuda
        torch.Tensor.is_cuda = property(lambda self: True)

    def __exit__(self, *exc):
        torch.Tensor.is_cuda = self.saved


if kernel.startswith("fa4"):
    pkg = types.ModuleType("flash_attn")
    pkg.__path__ = [os.path.join(fa4_dir, "flash_attn")]
    sys.modules["flash_attn"] = pkg
    for name, cls in [("flash_fwd_sm100", "FlashAttentionForwardSm100"),
                      ("flash_bwd_sm100", "FlashAttentionBackwardSm100"),
                      ("flash_bwd_postprocess", "FlashAttentionBackwardPostprocess")]:
        sys.modules[f"flash_attn.cute.{name}"] = types.SimpleNamespace(**{cls: type(cls, (), {})})
    interface = importlib.import_module("flash_attn.cute.interface")
    torch.cuda.current_stream = lambda *a, **k: types.SimpleNamespace(cuda_stream=0)

    def compile_once():
        interface._flash_attn_fwd.compile_cache.clear()
        q, k, v = (torch.randn(1, 2048, 2, 128, dtype=torch.bfloat16) for _ in range(3))
        with OnCpu():
            try:
                interface._flash_attn_fwd(q, k, v, causal=kernel == "fa4_causal", _compute_capability=9,
                                          return_lse=True)
            except ValueError as e:  # compiled; the CPU tensors are refused
                assert "device_type" in str(e), e
else:
    sys.modules.setdefault("quack.gemm_sm100", types.SimpleNamespace(GemmSm100=type("GemmSm100", (), {})))
    import cuda.bindings.driver as cuda_driver
    import cutlass.torch as cutlass_torch
    import quack.gemm as qg
    qg.get_device_capacity = lambda device=None: (9, 0)
    qg.get_max_active_clusters = lambda n: 132 // n
    cutlass_torch.current_stream = lambda: cuda_driver.CUstream(0)
    validate = qg.GemmWrapperBase.validate_and_prepare_tensors

    def validate_on_cpu(*args, **kwargs):
        with OnCpu():
            return validate(*args, **kwargs)

    qg.GemmWrapperBase.validate_and_prepare_tensors = staticmethod(validate_on_cpu)

    def compile_once():
        for value in list(vars(qg).values()):
            if hasattr(value, "compile_cache"):
                value.compile_cache.clear()
        a, b = (torch.randn(1, 256, 256, dtype=torch.bfloat16) for _ in range(2))
        d = torch.empty(1, 256, 256, dtype=torch.bfloat16)
        try:  # quack's default configuration: 128x192 tile, cluster 2x1, pingpong, persistent
            qg.gemm(a, b, d, None, None, 128, 192, 2, 1, True, persistent=True)
        except cutlass.DSLRuntimeError as e:
            assert "host memory" in str(e), e

inner = cute.compile
records = []
backend_s = [0.0]


class TimedCore:
    """cutlass._core as jit.py sees it, with compile_traced (verify, lower, libNVVM; ptxas waited
    for) timed in the main thread's CPU time."""

    def __init__(self, core):
        self._core = core

    def __getattr__(self, name):
        return getattr(self._core, name)

    def compile_traced(self, *args, **kwargs):
        start = time.thread_time()
        try:
            return self._core.compile_traced(*args, **kwargs)
        finally:
            backend_s[0] += time.thread_time() - start


import cutlass._dsl.jit as _jit
_jit._core = TimedCore(_jit._core)


class TimedCompile:
    def __init__(self, compile_fn):
        self._compile = compile_fn

    def __getitem__(self, options):
        return TimedCompile(self._compile[options])

    def __call__(self, fn, *args, **kwargs):
        preprocess_s[0] = backend_s[0] = 0.0
        for entry in glob.glob(os.path.join(python_cache, "*.ocache")) if python_cache else ():
            os.unlink(entry)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall, cpu = time.perf_counter(), time.thread_time()
        compiled = self._compile(fn, *args, **kwargs)
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        child_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
        records.append(dict(wall_ms=wall * 1e3, cpu_ms=cpu * 1e3, ptxas_cpu_ms=child_cpu * 1e3,
                            trace_cpu_ms=(cpu - backend_s[0]) * 1e3, backend_cpu_ms=backend_s[0] * 1e3,
                            preprocess_ms=preprocess_s[0] * 1e3, **compiled.timings_ms))
        return compiled


cute.compile = TimedCompile(inner)
compile_once()
compile_once()
print("RECORDS " + json.dumps(records))
'''

PHASES = ["wall_ms", "cpu_ms", "ptxas_cpu_ms", "trace_cpu_ms", "preprocess_ms", "backend_cpu_ms", "trace", "verify",
          "lower", "nvvm", "link"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fa4", default=os.environ.get("FLASH_ATTENTION_DIR", ".deps/fa4"),
                   help="a flash-attention checkout (its flash_attn/cute is used)")
    p.add_argument("--kernels", nargs="*", default=["fa4", "fa4_causal", "gemm"])
    p.add_argument("--runs", type=int, default=3, help="fresh processes per kernel")
    p.add_argument("--python-cache", action="store_true",
                   help="keep the preprocessor's rewritten code on disk between the runs (a folder made for "
                        "this benchmark, filled by one run first); compiled kernels are never reused")
    args = p.parse_args()
    python_cache = tempfile.mkdtemp(prefix="opencute-phases-") if args.python_cache else ""
    print("kernel      | compile | " + " | ".join(f"{h[:-3] if h.endswith('_ms') else h:>11}" for h in PHASES)
          + "   (ms, median of runs)")
    for kernel in args.kernels:
        cold, warm = [], []
        for run in range(args.runs + bool(python_cache)):
            out = subprocess.run([sys.executable, "-c", CHILD, kernel, os.path.abspath(args.fa4), python_cache],
                                 capture_output=True, text=True)
            line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RECORDS ")), None)
            if line is None:
                sys.exit(f"{kernel}: the compile failed\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
            records = json.loads(line[len("RECORDS "):])
            if python_cache and run == 0:
                continue  # it filled the preprocessor's cache
            cold.append(records[0])
            warm.append(records[-1])
        for label, rows in (("cold", cold), ("warm", warm)):
            med = {h: sorted(r[h] for r in rows)[len(rows) // 2] for h in PHASES}
            print(f"{kernel:11} | {label:7} | " + " | ".join(f"{med[h]:11.0f}" for h in PHASES), flush=True)
    if python_cache:
        shutil.rmtree(python_cache, ignore_errors=True)


if __name__ == "__main__":
    main()
