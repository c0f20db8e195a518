"""Cold compile of NVIDIA's Blackwell persistent GEMM (cute/blackwell/kernel/dense_gemm/
dense_gemm_persistent.py, its defaults: TF32 operands, F32 accumulator and output, 128x128 MMA tiler,
TMA store) for sm_100a on a machine without a GPU: the time from the first `cute.compile` of a fresh
process to the linked kernel (trace, verify, lower, libNVVM, nvJitLink cubin), with the file cache
off (CUTE_DSL_DISABLE_FILE_CACHING=True), for the 1-CTA MMA (cluster 1x1) and the 2-CTA MMA
(cta_group::2, cluster 2x1). Each run is a fresh process; the figure is the median. The main
thread's CPU time is printed beside the wall clock: a shared machine's load disturbs it less.

    python benchmarks/bench_sm100_compile.py --examples DIR [--runs 3] [--variant 1cta|2cta|both]

DIR: a copy of ../shared/nvidia-examples (loaded by path; nothing of it enters the repository).
Needs libNVVM and nvJitLink (a CUDA toolkit or the nvidia-cuda-nvcc / nvidia-nvjitlink wheels).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ONE_COMPILE = r"""
import importlib.util, json, os, sys, time, types
import numpy as np
try:
    import cuda.bindings.driver  # noqa: F401  (the example imports it for an annotation)
except ImportError:
    cuda, bindings, driver = (types.ModuleType(n) for n in ("cuda", "cuda.bindings", "cuda.bindings.driver"))
    driver.CUstream = type("CUstream", (int,), {})
    driver.CUstream_flags = types.SimpleNamespace(CU_STREAM_DEFAULT=0)
    cuda.bindings, bindings.driver = bindings, driver
    sys.modules.update({"cuda": cuda, "cuda.bindings": bindings, "cuda.bindings.driver": driver})
import cutlass, cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

examples, two_cta = sys.argv[1], sys.argv[2] == "1"
spec = importlib.util.spec_from_file_location(
    "dense_gemm_persistent", os.path.join(examples, "cute/blackwell/kernel/dense_gemm/dense_gemm_persistent.py"))
dg = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dg)


class DeviceArray:  # a GPU array's metadata: the kernel is compiled, never run
    def __init__(self, host):
        self._host = host
        self.__cuda_array_interface__ = {"data": (host.ctypes.data, False), "shape": host.shape,
                                         "typestr": host.dtype.str, "version": 3,
                                         "strides": tuple(host.strides)}


def tensor(host, dtype, leading_dim):
    t = from_dlpack(DeviceArray(host), assumed_align=16)
    t.element_type = dtype
    return t.mark_layout_dynamic(leading_dim=leading_dim)


m, n, k, l = 256, 256, 512, 1  # the example's default problem: A (l, m, k) and B (l, k, n) K-major, C (l, m, n)
a = tensor(np.zeros((l, m, k), np.float32), cutlass.TFloat32, 2)
b = tensor(np.zeros((l, n, k), np.float32).transpose(0, 2, 1), cutlass.TFloat32, 1)
c = tensor(np.zeros((l, m, n), np.float32), cutlass.Float32, 2)
cluster = (2, 1) if two_cta else (1, 1)
tiler = (256, 128) if two_cta else (128, 128)  # the pair: 128 rows in each CTA
gemm = dg.PersistentDenseGemmKernel(cutlass.Float32, two_cta, tiler, cluster, True)
assert gemm.can_implement((m, n, k, l), cutlass.TFloat32, cutlass.TFloat32, cutlass.Float32, "k", "k", "n")
max_active_clusters = 148 // (cluster[0] * cluster[1])  # a B200's SMs
t0, c0 = time.perf_counter(), time.thread_time()
f = cute.compile(dg.bmm, gemm, a, b, c, max_active_clusters, make_fake_stream(), lambda x: x,
                 options="--target gpu --gpu-arch sm_100a")
wall, cpu = (time.perf_counter() - t0) * 1e3, (time.thread_time() - c0) * 1e3
cubin = f.__cubin__
assert cubin is not None and bytes(cubin[:4]) == b"\x7fELF", "no sm_100a cubin was linked"
phases = {k: v for k, v in f.timings_ms.items() if isinstance(v, float)}
print(json.dumps({"wall": wall, "cpu": cpu, "phases": phases, "ptx_lines": (f.__ptx__ or "").count("\n"),
                  "cubin_bytes": len(bytes(cubin))}))
"""


def measure(examples, two_cta, runs):
    env = dict(os.environ, CUTE_DSL_DISABLE_FILE_CACHING="True")
    out = []
    for _ in range(runs):
        p = subprocess.run([sys.executable, "-c", ONE_COMPILE, examples, "1" if two_cta else "0"], env=env,
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("compile failed:\n" + p.stderr[-3000:])
        out.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--examples", required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--variant", default="both", choices=["1cta", "2cta", "both"])
    args = p.parse_args()
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"{os.cpu_count()} CPUs, load average {' '.join(load)} at the start")
    for two_cta in ([False, True] if args.variant == "both" else [args.variant == "2cta"]):
        runs = measure(args.examples, two_cta, args.runs)
        name = "2-CTA (cta_group::2, cluster 2x1)" if two_cta else "1-CTA (cluster 1x1)"
        print(f"dense_gemm_persistent sm_100a {name}: PTX {runs[0]['ptx_lines']} lines, cubin "
              f"{runs[0]['cubin_bytes']} bytes")
        for key in ("wall", "cpu"):
            values = [r[key] for r in runs]
            print(f"  {key:6s} median {statistics.median(values):7.0f} ms  min {min(values):7.0f}  "
                  f"runs {[round(v) for v in values]}")
        for phase in runs[0]["phases"]:
            values = [r["phases"][phase] for r in runs]
            print(f"  {phase:6s} median {statistics.median(values):7.1f} ms  min {min(values):7.1f}")


if __name__ == "__main__":
    main()
