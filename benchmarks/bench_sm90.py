"""NVIDIA's Hopper GEMM examples, unchanged, timed through their own `run(...)` functions (which
time with `cute.testing.benchmark`), side by side in one process with cuBLAS (`torch.matmul`)
for fp16/bf16 and `torch._scaled_mm` for fp8. Also the cold compile time of
dense_gemm_persistent (the first `cute.compile` of a fresh process with the file cache off).

    python benchmarks/bench_sm90.py --examples DIR      # DIR: a copy of ../shared/nvidia-examples

The example files stay outside the repository (they are NVIDIA's); they are imported by path.
"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_sm80 import load, time_torch_us  # noqa: E402

GEMM_DIR = "cute/hopper/kernel/dense_gemm"


@contextlib.contextmanager
def gaussian_operands():
    """The example fills A and B with small integers (`cutlass.torch.matrix`'s default); inside
    this block it fills them with N(0, 1) values, the data cuBLAS is timed on, because a GEMM's
    clock (and so its rate) depends on how much power its data draws."""
    import cutlass.torch as cutlass_torch  # the example imports it inside run()
    original = cutlass_torch.matrix

    def gaussian(l, mode0, mode1, is_mode0_major, dtype, *args, **kwargs):
        return original(l, mode0, mode1, is_mode0_major, dtype, cutlass_torch.TensorInitType.GAUSSIAN,
                        cutlass_torch.GaussianInitConfig(0.0, 1.0, 1.0))

    cutlass_torch.matrix = gaussian
    try:
        yield
    finally:
        cutlass_torch.matrix = original


def persistent_rows(ex, n, dtypes, clusters, tile=(128, 256)):
    """fp16 on N(0, 1) data for both; fp8 (e4m3 in, fp16 out) on the example's small integers
    (-2..1) for both, against torch._scaled_mm."""
    import torch
    import cutlass
    mod = load(os.path.join(ex, GEMM_DIR, "dense_gemm_persistent.py"), "dense_gemm_persistent")
    rows = []
    flops = 2.0 * n * n * n
    for name in dtypes:
        dt = getattr(cutlass, name)
        if dt.width == 8:
            a = torch.randint(-2, 2, (n, n), device="cuda").to(torch.float8_e4m3fn)
            b = torch.randint(-2, 2, (n, n), device="cuda").to(torch.float8_e4m3fn).t()  # column-major
            one = torch.tensor(1.0, device="cuda")
            ref_us = time_torch_us(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float16))
            what, c_dt, data = "torch._scaled_mm", cutlass.Float16, contextlib.nullcontext
        else:
            tdt = {"Float16": torch.float16, "BFloat16": torch.bfloat16}[name]
            a = torch.randn(n, n, device="cuda", dtype=tdt)
            b = torch.randn(n, n, device="cuda", dtype=tdt)
            ref_us = time_torch_us(lambda: torch.matmul(a, b))
            what, c_dt, data = "cuBLAS (torch.matmul)", dt, gaussian_operands
        if name == "BFloat16":
            # The kernel class takes bf16 (as CUTLASS's does; the emulator tests run it), but the
            # example's run() refuses it in its is_valid_dtypes: accept it for this row only.
            valid = mod.HopperWgmmaGemmPersistentKernel.is_valid_dtypes
            mod.HopperWgmmaGemmPersistentKernel.is_valid_dtypes = staticmethod(lambda *args: True)
        for cluster in clusters:
            with data():
                us = mod.run((n, n, n, 1), dt, dt, c_dt, cutlass.Float32, "k", "k", "n", tile, cluster,
                             warmup_iterations=5, iterations=50, skip_ref_check=True)
            rows.append((f"dense_gemm_persistent {name} {n}^3 tile {tile[0]}x{tile[1]} cluster "
                         f"{cluster[0]}x{cluster[1]}", flops / us / 1e6, flops / ref_us / 1e6, what))
        if name == "BFloat16":
            mod.HopperWgmmaGemmPersistentKernel.is_valid_dtypes = valid
    return rows


def fp8_2xacc_rows(ex, n, clusters, tile=(128, 128)):
    """The 2x-accumulator fp8 kernel at the example's default tile: 128x128 is one MMA warpgroup
    with 128 fp32 accumulators per thread and 128 more for the promoted sum, which already fills
    the register file (ptxas spills a little); 128x256 spills heavily and is not timed."""
    import torch
    import cutlass
    mod = load(os.path.join(ex, GEMM_DIR, "dense_gemm_fp8_2xacc.py"), "dense_gemm_fp8_2xacc")
    flops = 2.0 * n * n * n
    a = torch.randint(-2, 2, (n, n), device="cuda").to(torch.float8_e4m3fn)
    b = torch.randint(-2, 2, (n, n), device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
    one = torch.tensor(1.0, device="cuda")
    ref_us = time_torch_us(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float16))
    rows = []
    for cluster in clusters:
        us = mod.run((n, n, n, 1), cutlass.Float16, tile, cluster, warmup_iterations=5, iterations=50,
                     skip_ref_check=True)
        rows.append((f"dense_gemm_fp8_2xacc e4m3 {n}^3 tile {tile[0]}x{tile[1]} cluster {cluster[0]}x{cluster[1]}",
                     flops / us / 1e6, flops / ref_us / 1e6, "torch._scaled_mm"))
    return rows


COLD_COMPILE = r"""
import importlib.util, sys, time, json
import torch, cutlass, cutlass.cute as cute
spec = importlib.util.spec_from_file_location("dense_gemm_persistent", sys.argv[1])
mod = importlib.util.module_from_spec(spec); sys.modules["dense_gemm_persistent"] = mod; spec.loader.exec_module(mod)
times, phases = [], []
real_compile = cute.compile
def timed(*a, **k):
    t0 = time.perf_counter(); r = real_compile(*a, **k); times.append((time.perf_counter() - t0) * 1e3)
    phases.append({k: v for k, v in getattr(r, "timings_ms", {}).items() if isinstance(v, float)})
    return r
cute.compile = timed
dt = cutlass.Float16
mod.run((1024, 1024, 256, 1), dt, dt, dt, cutlass.Float32, "k", "k", "n", (128, 256), (1, 1),
        warmup_iterations=0, iterations=1, skip_ref_check=True)
print(json.dumps([times, phases]))
"""


def cold_compile(ex, runs):
    env = dict(os.environ, CUTE_DSL_DISABLE_FILE_CACHING="True")
    path = os.path.join(ex, GEMM_DIR, "dense_gemm_persistent.py")
    results = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", COLD_COMPILE, path], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            return None, out.stderr[-2000:]
        times, phases = json.loads(out.stdout.strip().splitlines()[-1])
        results.append((times[0], phases[0]))
    return results, ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--examples", required=True)
    p.add_argument("--only", default="gemm,fp8,compile")
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--compile-runs", type=int, default=3)
    args = p.parse_args()
    parts = set(args.only.split(","))
    rows = []
    if "gemm" in parts:
        rows += persistent_rows(args.examples, args.size, ["Float16"], [(1, 1), (2, 1), (1, 2)])
        rows += persistent_rows(args.examples, args.size, ["BFloat16"], [(1, 1), (2, 1)])
    if "fp8" in parts:
        try:
            rows += persistent_rows(args.examples, args.size, ["Float8E4M3FN"], [(1, 1), (2, 1)])
            rows += fp8_2xacc_rows(args.examples, args.size, [(1, 1)])
        except Exception as e:  # noqa: BLE001 - report and go on to the other rows
            print("fp8 rows failed:", type(e).__name__, str(e)[-500:])
    print()
    print(f"{'kernel':64s} {'OpenCuTe TFLOP/s':>16s} {'reference':>10s} {'ratio':>7s}  reference")
    for name, ours, ref, what in rows:
        print(f"{name:64s} {ours:16.1f} {ref:10.1f} {ours / ref:7.1%}  {what}")
    if "compile" in parts:
        results, err = cold_compile(args.examples, args.compile_runs)
        if results is None:
            print("cold compile failed:", err)
        else:
            times = sorted(t for t, _ in results)
            med = statistics.median(times)
            phases = min(results, key=lambda r: abs(r[0] - med))[1]
            print(f"dense_gemm_persistent f16 cold compile (first cute.compile of a process, file cache off): "
                  f"median {med:.0f} ms of {[round(t) for t in times]}; phases: "
                  + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()))


if __name__ == "__main__":
    main()
