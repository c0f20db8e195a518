"""NVIDIA's Ampere tensor-core examples, unchanged, timed through their own `run(...)` functions
(which time with `cute.testing.benchmark`), side by side in one process with the library they
are measured against: torch.matmul (cuBLAS) for the GEMMs, scaled_dot_product_attention with the
flash backend for FlashAttention-2. Also the cold compile time of tensorop_gemm (the first
`cute.compile` of a fresh process with the file cache off).

    python benchmarks/bench_sm80.py --examples DIR      # DIR: a copy of ../shared/nvidia-examples

The example files stay outside the repository (they are NVIDIA's); they are imported by path.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def time_torch_us(fn, iters=50, repeats=5):
    import torch
    for _ in range(5):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    runs = []
    for _ in range(repeats):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) * 1e3 / iters)
    return statistics.median(runs)


def gemm_rows(ex, sizes, dtypes):
    import torch
    import cutlass
    mod = load(os.path.join(ex, "cute/ampere/kernel/dense_gemm/tensorop_gemm.py"), "tensorop_gemm")
    rows = []
    for name in dtypes:
        dt = getattr(cutlass, name)
        tdt = {"Float16": torch.float16, "BFloat16": torch.bfloat16}[name]
        for n in sizes:
            # The example's default configuration (A m-major, B n-major, C n-major, 2x2x1 atoms).
            us = mod.run((n, n, n, 1), dt, dt, cutlass.Float32, "m", "n", "n", (2, 2, 1),
                         warmup_iterations=5, iterations=50, skip_ref_check=True, benchmark=True)
            a = torch.randn(n, n, device="cuda", dtype=tdt)
            b = torch.randn(n, n, device="cuda", dtype=tdt)
            ref_us = time_torch_us(lambda: torch.matmul(a, b))
            flops = 2.0 * n * n * n
            rows.append((f"tensorop_gemm {name} {n}^3", flops / us / 1e6, flops / ref_us / 1e6, "cuBLAS"))
    return rows


def sgemm_rows(ex, n):
    import torch
    mod = load(os.path.join(ex, "cute/ampere/kernel/dense_gemm/sgemm.py"), "sgemm")
    us = mod.run((n, n, n), "k", "k", "n", warmup_iterations=5, iterations=20, skip_ref_check=True)
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    ref_us = time_torch_us(lambda: torch.matmul(a, b), iters=20)
    flops = 2.0 * n * n * n
    return [(f"sgemm fp32 {n}^3", flops / us / 1e6, flops / ref_us / 1e6, "cuBLAS fp32")]


def attention_rows(ex, causal_modes):
    import torch
    import torch.nn.functional as F
    import cutlass
    mod = load(os.path.join(ex, "cute/ampere/kernel/attention/flash_attention_v2.py"), "flash_attention_v2")
    b, s, h, d = 4, 8192, 16, 128
    rows = []
    for causal in causal_modes:
        us = mod.run(cutlass.BFloat16, b, s, s, h, d, softmax_scale=0.5, m_block_size=128, n_block_size=64,
                     num_threads=128, is_causal=causal, warmup_iterations=3, iterations=10, skip_ref_check=True)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            ref_us = time_torch_us(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.5),
                                   iters=10)
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        rows.append((f"flash_attention_v2 bf16{' causal' if causal else ''}", flops / us / 1e6,
                     flops / ref_us / 1e6, "SDPA flash"))
    return rows


COLD_COMPILE = r"""
import importlib.util, sys, time, json
import torch, cutlass, cutlass.cute as cute
spec = importlib.util.spec_from_file_location("tensorop_gemm", sys.argv[1])
mod = importlib.util.module_from_spec(spec); sys.modules["tensorop_gemm"] = mod; spec.loader.exec_module(mod)
times, phases = [], []
real_compile = cute.compile
def timed(*a, **k):
    t0 = time.perf_counter(); r = real_compile(*a, **k); times.append((time.perf_counter() - t0) * 1e3)
    phases.append({k: v for k, v in getattr(r, "timings_ms", {}).items() if isinstance(v, float)})
    return r
cute.compile = timed
dtype = getattr(cutlass, sys.argv[2])
mod.run((512, 512, 64, 1), dtype, dtype, cutlass.Float32, "m", "n", "n", (2, 2, 1),
        warmup_iterations=0, iterations=1, skip_ref_check=True, benchmark=False)
print(json.dumps([times, phases]))
"""


def cold_compile_ms(ex, dtype="Float16"):
    """(times of each cute.compile of a fresh process, their phases: trace, verify, lower, nvvm
    (libNVVM), link (nvJitLink/ptxas) ... in ms), or (None, the error)."""
    env = dict(os.environ, CUTE_DSL_DISABLE_FILE_CACHING="True")
    path = os.path.join(ex, "cute/ampere/kernel/dense_gemm/tensorop_gemm.py")
    out = subprocess.run([sys.executable, "-c", COLD_COMPILE, path, dtype], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--examples", required=True)
    p.add_argument("--only", default="gemm,sgemm,attention,compile")
    p.add_argument("--sizes", default="4096,8192")
    p.add_argument("--compile-runs", type=int, default=5, help="fresh processes for the cold-compile figure")
    args = p.parse_args()
    parts = args.only.split(",")
    rows = []
    if "gemm" in parts:
        rows += gemm_rows(args.examples, [int(x) for x in args.sizes.split(",")], ["Float16", "BFloat16"])
    if "sgemm" in parts:
        rows += sgemm_rows(args.examples, 4096)
    if "attention" in parts:
        rows += attention_rows(args.examples, [False, True])
    print()
    print(f"{'kernel':36s} {'OpenCuTe TFLOP/s':>17s} {'reference':>10s} {'ratio':>7s}  reference")
    for name, mine, ref, what in rows:
        print(f"{name:36s} {mine:17.1f} {ref:10.1f} {100 * mine / ref:6.1f}%  {what}")
    if "compile" in parts:
        # Several fresh processes: the first compile of each, and its phases (the median run shown).
        for dtype in ("Float16", "BFloat16"):
            runs = []
            for _ in range(args.compile_runs):
                result, err = cold_compile_ms(args.examples, dtype)
                if result is None:
                    print("cold compile failed:", err)
                    break
                runs.append((result[0][0], result[1][0] if result[1] else {}))
            if not runs:
                continue
            runs.sort(key=lambda r: r[0])
            total, phases = runs[len(runs) // 2]
            print(f"tensorop_gemm {dtype} cold compile (first cute.compile of a process, file cache off): "
                  f"median {total:.0f} ms of {[round(r[0]) for r in runs]}; its phases: "
                  + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()))


if __name__ == "__main__":
    main()
