"""Cold compile of NVIDIA's Ampere examples for sm_80 on a machine without a GPU: the first
`cute.compile` of a fresh process (file cache off), its phases (trace, verify, lower, libNVVM,
nvJitLink) and the main thread's CPU time, which a shared machine's load disturbs less than the
wall clock. What bench_sm80.py measures on the GPU machine, minus the GPU.

    python benchmarks/bench_compile_sm80.py --examples DIR [--kernel gemm|fa2] [--dtype Float16] [--runs 5]

DIR: a copy of ../shared/nvidia-examples (the files stay outside the repository; they are loaded
by path). `--ptxas-info` also prints ptxas's register and spill report of the compiled kernel.
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
    import cuda.bindings.driver  # noqa: F401  (the examples import it for an annotation)
except ImportError:
    cuda, bindings, driver = (types.ModuleType(n) for n in ("cuda", "cuda.bindings", "cuda.bindings.driver"))
    driver.CUstream = type("CUstream", (int,), {})
    driver.CUstream_flags = types.SimpleNamespace(CU_STREAM_DEFAULT=0)
    cuda.bindings, bindings.driver = bindings, driver
    sys.modules.update({"cuda": cuda, "cuda.bindings": bindings, "cuda.bindings.driver": driver})
import cutlass, cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

examples, kernel, dtype_name, arch, ptxas_info = sys.argv[1:6]
dtype = getattr(cutlass, dtype_name)
ptxas = " --ptxas-options -v" if ptxas_info == "1" else ""


def load(relative):
    spec = importlib.util.spec_from_file_location(os.path.basename(relative)[:-3], os.path.join(examples, relative))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class DeviceArray:  # a GPU array's metadata: the kernels are compiled, never run
    def __init__(self, host):
        self._host = host
        self.__cuda_array_interface__ = {"data": (host.ctypes.data, False), "shape": host.shape,
                                         "typestr": host.dtype.str, "strides": None, "version": 3}


if kernel == "gemm":
    tg = load("cute/ampere/kernel/dense_gemm/tensorop_gemm.py")
    m, n, k, l = 512, 512, 64, 1  # the example's default problem
    storage = np.float16 if dtype_name == "Float16" else np.uint16
    a = np.zeros((l, k, m), storage).transpose(0, 2, 1)
    b, c = np.zeros((l, k, n), storage), np.zeros((l, m, n), storage)
    a_, b_, c_ = tg.mark_dynamic_layout(a, b, c, 1, 2, 2, dtype, dtype)
    gemm = tg.TensorOpGemm(dtype, dtype, cutlass.Float32, (2, 2, 1), False)
    args, fn = (gemm, a_, b_, c_, make_fake_stream(), lambda x: x), tg.bmm
else:
    fa2 = load("cute/ampere/kernel/attention/flash_attention_v2.py")
    def tensor(x):
        t = from_dlpack(DeviceArray(x), assumed_align=16)
        t.element_type = dtype
        return t.mark_layout_dynamic(leading_dim=3).mark_compact_shape_dynamic(
            mode=3, stride_order=(0, 1, 2, 3), divisibility=8)
    q = np.zeros((1, 256, 2, 128), np.float16)  # the example's default head_dim 128, 128x64 tiles
    fn = fa2.FlashAttentionForwardAmpere(128, 128, 64, 128, False)
    args = tuple(tensor(q) for _ in range(4)) + (0.5, cutlass.cuda.CUstream(0))
t0, c0 = time.perf_counter(), time.thread_time()
f = cute.compile(fn, *args, options=f"--target gpu --gpu-arch {arch}" + ptxas)
wall, cpu = (time.perf_counter() - t0) * 1e3, (time.thread_time() - c0) * 1e3
phases = {k: v for k, v in f.timings_ms.items() if isinstance(v, float)}
print(json.dumps({"wall": wall, "cpu": cpu, "phases": phases,
                  "ptx_lines": (f.__ptx__ or "").count("\n"), "nvvm_ir_lines": f.nvvm_ir.count("\n")}))
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--examples", required=True)
    p.add_argument("--kernel", default="gemm", choices=["gemm", "fa2"])
    p.add_argument("--dtype", default=None, help="Float16 or BFloat16 (default: the example's: gemm f16, fa2 bf16)")
    p.add_argument("--arch", default="sm_80")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--ptxas-info", action="store_true")
    args = p.parse_args()
    dtype = args.dtype or ("Float16" if args.kernel == "gemm" else "BFloat16")
    env = dict(os.environ, CUTE_DSL_DISABLE_FILE_CACHING="True")
    if args.ptxas_info:  # the linker's report reaches the log at level INFO
        env.update(CUTE_DSL_LOG_TO_CONSOLE="1", CUTE_DSL_LOG_LEVEL="20")
    runs = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", ONE_COMPILE, args.examples, args.kernel, dtype, args.arch,
                              "1" if args.ptxas_info else "0"], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("compile failed:\n" + out.stderr[-3000:])
        if args.ptxas_info:
            print("\n".join(line for line in out.stderr.splitlines() + out.stdout.splitlines()
                            if "spill" in line or "Used" in line))
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{args.kernel} {dtype} {args.arch}: NVVM IR {runs[0]['nvvm_ir_lines']} lines, PTX {runs[0]['ptx_lines']} lines")
    for key in ("wall", "cpu"):
        values = [r[key] for r in runs]
        print(f"  {key:6s} median {statistics.median(values):7.0f} ms  min {min(values):7.0f}  runs {[round(v) for v in values]}")
    for phase in runs[0]["phases"]:
        values = [r["phases"][phase] for r in runs]
        print(f"  {phase:6s} median {statistics.median(values):7.1f} ms  min {min(values):7.1f}")


if __name__ == "__main__":
    main()
