"""NVIDIA's Blackwell dense GEMM example (dense_gemm_persistent.py, tcgen05 UMMA with 1- and 2-CTA
instructions), unchanged, timed through its own `run(...)` (which times with
`cute.testing.benchmark`), side by side in one process with cuBLAS (`torch.matmul`); and the cold
compile time of dense_gemm_persistent for sm_100a (the first `cute.compile` of a fresh process with
the file cache off).

    python benchmarks/bench_sm100.py --examples DIR      # DIR: a copy of ../shared/nvidia-examples

It needs an SM100 device (a B200 / GB200 or a B300, compute capability 10.x): on any other machine
it says so and exits with status 2 before importing torch, since timings of the emulator or of
another GPU say nothing about Blackwell. The example files stay outside the repository (they are
NVIDIA's); they are imported by path.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GEMM_DIR = "cute/blackwell/kernel/dense_gemm"
NO_SM100_STATUS = 2


def sm100_device_problem():
    """Why this machine cannot run the benchmark (no CUDA device, or device 0 is not an SM100 part),
    or None. Asks the driver through OpenCuTe, which needs no GPU to import."""
    from cutlass import _core
    if not _core.cuda_available():
        return "no CUDA device is present"
    arch = _core.device_arch(0)
    if not arch.startswith("sm_10"):
        return f"device 0 is {arch}, not an SM100 (Blackwell datacenter) part"
    return None


def require_sm100():
    why = sm100_device_problem()
    if why is not None:
        print(f"bench_sm100: needs an SM100 GPU (B200, GB200 or B300) and {why}; the Blackwell GEMMs are "
              "not timed on the emulator or on other GPUs.", file=sys.stderr)
        sys.exit(NO_SM100_STATUS)


def gemm_rows(ex, n, configs):
    """fp16 in, fp16 out, fp32 accumulation on N(0, 1)-sized data for cuBLAS; each config is
    (mma tile (M, N), cluster (M, N), use_2cta_instrs)."""
    import torch
    import cutlass
    from bench_sm80 import load, time_torch_us
    mod = load(os.path.join(ex, GEMM_DIR, "dense_gemm_persistent.py"), "dense_gemm_persistent")
    flops = 2.0 * n * n * n
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    ref_us = time_torch_us(lambda: torch.matmul(a, b))
    rows = []
    dt = cutlass.Float16
    for tile, cluster, two_cta in configs:
        us = mod.run((n, n, n, 1), dt, dt, cutlass.Float32, "k", "k", "n", tile, cluster, two_cta,
                     warmup_iterations=5, iterations=50, skip_ref_check=True)
        rows.append((f"dense_gemm_persistent f16 {n}^3 tile {tile[0]}x{tile[1]} cluster {cluster[0]}x{cluster[1]}"
                     f"{' 2cta' if two_cta else ''}", flops / us / 1e6, flops / ref_us / 1e6, "cuBLAS (torch.matmul)"))
    return rows


COLD_COMPILE = r"""
import importlib.util, sys, time, json
import torch, cutlass, cutlass.cute as cute
spec = importlib.util.spec_from_file_location("dense_gemm_persistent", sys.argv[1])
mod = importlib.util.module_from_spec(spec); sys.modules["dense_gemm_persistent"] = mod; spec.loader.exec_module(mod)
times = []
real_compile = cute.compile
def timed(*a, **k):
    t0 = time.perf_counter(); r = real_compile(*a, **k); times.append((time.perf_counter() - t0) * 1e3)
    return r
cute.compile = timed
dt = cutlass.Float16
mod.run((1024, 1024, 256, 1), dt, dt, cutlass.Float32, "k", "k", "n", (256, 256), (2, 1), True,
        warmup_iterations=0, iterations=1, skip_ref_check=True)
print(json.dumps(times))
"""


def cold_compile_ms(ex, runs):
    env = dict(os.environ, CUTE_DSL_DISABLE_FILE_CACHING="True")
    path = os.path.join(ex, GEMM_DIR, "dense_gemm_persistent.py")
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", COLD_COMPILE, path], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            return None, out.stderr[-2000:]
        times.append(json.loads(out.stdout.strip().splitlines()[-1])[0])
    return times, ""


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--examples", required=True)
    p.add_argument("--only", default="gemm,compile")
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--compile-runs", type=int, default=3)
    args = p.parse_args(argv)
    require_sm100()
    parts = set(args.only.split(","))
    if "gemm" in parts:
        rows = gemm_rows(args.examples, args.size, [((128, 256), (1, 1), False), ((256, 256), (2, 1), True),
                                                    ((256, 256), (2, 2), True)])
        print(f"{'kernel':72s} {'OpenCuTe TFLOP/s':>16s} {'reference':>10s} {'ratio':>7s}  reference")
        for name, ours, ref, what in rows:
            print(f"{name:72s} {ours:16.1f} {ref:10.1f} {ours / ref:7.1%}  {what}")
    if "compile" in parts:
        times, err = cold_compile_ms(args.examples, args.compile_runs)
        if times is None:
            print("cold compile failed:", err)
        else:
            print(f"dense_gemm_persistent f16 2cta sm_100a cold compile (first cute.compile of a process, file "
                  f"cache off): median {statistics.median(times):.0f} ms of {[round(t) for t in times]}")


if __name__ == "__main__":
    main()
