#!/usr/bin/env python3
"""quack's kernels on OpenCuTe against torch, side by side in one run (issue 23).

    python3 benchmarks/bench_quack.py --quack PATH [--memory] [--gemm] [--shapes ...] [--configs ...]

--memory: quack's memory-bound forward kernels (rmsnorm, softmax, cross_entropy, layernorm) at
reduction sizes 4k-32k, timed with triton's do_bench (median) against torch eager and
torch.compile on the same tensors. Bytes are counted as quack's own benchmark scripts count them
(each input read once, each output written once).

--gemm: quack's `benchmarks/benchmark_gemm_sm90.py` run unchanged per shape through
library_compile_timer.py, which also gives the cold compile time of its kernel; the script
itself times cuBLAS (torch.matmul) in the same process. Its "Cute-DSL" line is OpenCuTe here.

--tuned: quack's GEMM as its users call it, `quack.gemm_interface.gemm_tuned`, whose autotuner
times every configuration of quack's SM90 search space (`get_all_configs`: tile, pingpong or
cooperative, cluster 1x2 or 2x1, swap_ab) on the shape and keeps the fastest; then that and
cuBLAS (torch.matmul on the same operands, B k-major) are timed alternately in this process.
Configurations that fail are listed (quack's autotuner would skip them silently).
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

GEMM_SHAPES = [
    (8192, 8192, 8192),
    (4096, 4096, 4096), (4096, 11008, 4096), (4096, 4096, 11008), (4096, 14336, 4096),
    (8192, 4096, 14336), (8192, 14336, 4096), (16384, 4096, 4096), (16384, 11008, 4096),
    (16384, 4096, 14336),
]


def memory_bound(args):
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench

    sys.path.insert(0, args.quack)
    from quack.rmsnorm import rmsnorm_fwd
    from quack.softmax import softmax
    from quack.cross_entropy import cross_entropy
    from quack.rmsnorm import layernorm_fwd

    def rmsnorm_ref(x, w, eps=1e-6):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w).to(x.dtype)

    def layernorm_ref(x, w, eps=1e-6):
        return F.layer_norm(x.float(), (x.shape[-1],), w, None, eps).to(x.dtype)

    rows = []
    dtype = torch.bfloat16
    for n in args.n_values:
        m = max(1, args.elements // n)
        x = torch.randn(m, n, device="cuda", dtype=dtype)
        w = torch.randn(n, device="cuda", dtype=torch.float32)
        target = torch.randint(0, n, (m,), device="cuda", dtype=torch.int64)
        cases = {
            # name: (quack fn, torch eager fn, bytes moved)
            "rmsnorm": (lambda: rmsnorm_fwd(x, w, eps=1e-6), lambda: rmsnorm_ref(x, w),
                        2 * x.numel() * 2 + n * 4),
            "softmax": (lambda: softmax(x), lambda: F.softmax(x, dim=-1), 2 * x.numel() * 2),
            "cross_entropy": (lambda: cross_entropy(x, target, reduction="none"),
                              lambda: F.cross_entropy(x, target, reduction="none"),
                              (x.numel() + 2 * m) * 2),
            "layernorm": (lambda: layernorm_fwd(x, w, eps=1e-6), lambda: layernorm_ref(x, w),
                          2 * x.numel() * 2 + n * 4),
        }
        for name in args.ops:
            fn, eager, nbytes = cases[name]
            fn()
            compiled = torch.compile(eager)
            compiled()
            torch.cuda.synchronize()
            t = {k: do_bench(f, warmup=25, rep=200, return_mode="median")
                 for k, f in (("quack", fn), ("eager", eager), ("compile", compiled))}
            gbps = {k: nbytes / (v * 1e-3) / 1e9 for k, v in t.items()}
            rows.append((name, m, n, gbps["quack"], gbps["eager"], gbps["compile"]))
            print(f"{name} M={m} N={n}: quack {gbps['quack']:.0f} GB/s, eager {gbps['eager']:.0f}, "
                  f"torch.compile {gbps['compile']:.0f}", flush=True)
        del x, w, target
        torch.cuda.empty_cache()
    print("\n| kernel | M | N | OpenCuTe GB/s | torch eager GB/s | torch.compile GB/s | vs compile |")
    print("|---|---|---|---|---|---|---|")
    for name, m, n, q, e, c in rows:
        print(f"| {name} | {m} | {n} | {q:.0f} | {e:.0f} | {c:.0f} | {q / c:.0%} |")


def run_gemm_config(args, m, n, k, config):
    """(OpenCuTe TFLOP/s or None, best cuBLAS TFLOP/s or None, cold compile seconds) of one run."""
    script = os.path.join(args.quack, "benchmarks", "benchmark_gemm_sm90.py")
    cmd = [sys.executable, os.path.join(HERE, "library_compile_timer.py"), script,
           "--mnkl", f"{m},{n},{k},1", "--iterations", "50", "--skip_ref_check", *config]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=args.quack, timeout=300)
    text = r.stdout + r.stderr
    ours = re.search(r"Cute-DSL Average time: ([\d.]+) ms, TFLOPS: ([\d.]+)", text)
    cublas = re.findall(r"CuBLAS Average time: ([\d.]+) ms, TFLOPS: ([\d.]+)", text)
    compiles = [float(s) for s in re.findall(r"COMPILE_S ([\d.]+)", text)]
    if not ours or not cublas:
        print(f"{m}x{n}x{k} {' '.join(config)}: no result (rc {r.returncode})\n{text[-1500:]}", flush=True)
        return None, None, compiles
    return float(ours.group(2)), max(float(tf) for _, tf in cublas), compiles


def gemm(args):
    """Each shape under each configuration (as quack's autotuner would try them); the row keeps
    the best configuration against the best cuBLAS time of all the runs of that shape."""
    configs = [shlex.split(c) for c in args.configs] if args.configs else [args.gemm_args]
    rows = []
    for (m, n, k) in args.shapes:
        results = []
        for config in configs:
            ours, ref, compiles = run_gemm_config(args, m, n, k, config)
            print(f"{m}x{n}x{k} [{' '.join(config)}]: OpenCuTe {ours} TFLOP/s, cuBLAS {ref}, compile {compiles}",
                  flush=True)
            results.append((ours, ref, compiles, " ".join(config)))
        refs = [r for _, r, _, _ in results if r is not None]
        done = [x for x in results if x[0] is not None]
        if not done:
            rows.append((m, n, k, None, None, [], ""))
            continue
        ours, _, compiles, config = max(done, key=lambda x: x[0])
        rows.append((m, n, k, ours, max(refs), compiles, config))
    print("\n| M | N | K | quack on OpenCuTe TFLOP/s | cuBLAS TFLOP/s | ratio | cold compile s | configuration |")
    print("|---|---|---|---|---|---|---|---|")
    for m, n, k, ours, ref, compiles, config in rows:
        c = ", ".join(f"{s:.2f}" for s in compiles) or "-"
        if ours is None:
            print(f"| {m} | {n} | {k} | failed | | | {c} | |")
        else:
            print(f"| {m} | {n} | {k} | {ours:.1f} | {ref:.1f} | {ours / ref:.0%} | {c} | {config or 'default'} |")


def gemm_tuned(args):
    import statistics
    import torch
    from triton.testing import do_bench

    os.environ.setdefault("QUACK_CACHE_DIR", tempfile.mkdtemp())  # tune afresh, not from disk
    sys.path.insert(0, args.quack)
    from quack.gemm_interface import gemm_tuned as tuned

    rows = []
    for (m, n, k) in args.shapes:
        torch.manual_seed(0)
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).mT  # (K, N), k-major
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ref = torch.empty_like(out)
        tuned(a, b, out)  # autotunes this shape
        timings = tuned.configs_timings
        failed = [c for c, t in timings.items() if t[0] == float("inf")]
        best = tuned.best_config
        torch.matmul(a, b, out=ref)
        err = (out.float() - ref.float()).abs().max().item()
        cfg = best.kwargs["config"]
        ours, cublas = [], []
        for _ in range(args.rounds):
            # the chosen kernel through quack's untuned entry (no autotuner key per call)
            ours.append(do_bench(lambda: tuned.fn(a, b, out, config=cfg), warmup=50, rep=300))
            cublas.append(do_bench(lambda: torch.matmul(a, b, out=ref), warmup=50, rep=300))
        flop = 2.0 * m * n * k
        t_ours, t_ref = statistics.median(ours), statistics.median(cublas)
        name = (f"{cfg.tile_m}x{cfg.tile_n} {'pingpong' if cfg.pingpong else 'cooperative'} "
                f"cluster {cfg.cluster_m}x{cfg.cluster_n}{' swap_ab' if cfg.swap_ab else ''}")
        print(f"{m}x{n}x{k}: {len(timings)} configurations tried, {len(failed)} failed; best {name}; "
              f"max |quack - cuBLAS| {err:.3g}; ms ours {ours} cuBLAS {cublas}", flush=True)
        for c in failed:
            print(f"  failed: {c.kwargs['config']}", flush=True)
        rows.append((m, n, k, flop / t_ours / 1e9, flop / t_ref / 1e9, name))
    print("\n| M | N | K | quack (autotuned) on OpenCuTe TFLOP/s | cuBLAS TFLOP/s | ratio | configuration |")
    print("|---|---|---|---|---|---|---|")
    for m, n, k, ours, ref, name in rows:
        print(f"| {m} | {n} | {k} | {ours:.1f} | {ref:.1f} | {ours / ref:.0%} | {name} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quack", required=True, help="quack checkout at 21dd6de")
    p.add_argument("--memory", action="store_true")
    p.add_argument("--gemm", action="store_true")
    p.add_argument("--ops", nargs="*", default=["rmsnorm", "softmax", "cross_entropy", "layernorm"])
    p.add_argument("--n-values", type=int, nargs="*", default=[4096, 8192, 16384, 32768])
    p.add_argument("--elements", type=int, default=32768 * 8192, help="M = elements // N")
    p.add_argument("--tuned", action="store_true", help="quack's autotuned GEMM, in this process")
    p.add_argument("--rounds", type=int, default=3, help="--tuned: alternate timings per shape")
    p.add_argument("--shapes", nargs="*", default=None, help="MxNxK shapes for --gemm")
    p.add_argument("--configs", nargs="*", default=None,
                   help="benchmark_gemm_sm90.py options per configuration, each one quoted string; "
                        "every shape runs under each and keeps the fastest")
    p.add_argument("--gemm-args", nargs=argparse.REMAINDER, default=[],
                   help="passed on to benchmark_gemm_sm90.py (last option)")
    args = p.parse_args()
    args.quack = os.path.abspath(args.quack)
    args.shapes = ([tuple(int(v) for v in s.split("x")) for s in args.shapes]
                   if args.shapes else GEMM_SHAPES)
    if args.memory:
        memory_bound(args)
    if args.gemm:
        gemm(args)
    if args.tuned:
        gemm_tuned(args)


if __name__ == "__main__":
    main()
