#!/usr/bin/env python3
"""FlashAttention-4 (flash_attn.cute, SM90 path) on OpenCuTe against torch's SDPA (issue 23).

    python3 benchmarks/bench_fa4.py [--hdims 64 128] [--seqlens 1024 ...] [--tokens 16384]

Forward and backward, causal and not, bf16, batch = tokens // seqlen, heads = 2048 // hdim.
SDPA runs with the backend torch picks (flash or cuDNN on an H100); both are timed with triton's
do_bench (median) in the same process on the same tensors. Every `cute.compile` is timed, so the
first call of each configuration also gives FA4's cold compile time (disk cache off).
"""
import argparse
import os
import sys
import time

os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")
os.environ.setdefault("OPENCUTE_DISABLE_TRACE_KEY_CACHE", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from library_compile_timer import install_compile_timer  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hdims", type=int, nargs="*", default=[64, 128])
    p.add_argument("--seqlens", type=int, nargs="*", default=[1024, 2048, 4096, 8192, 16384])
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--no-backward", action="store_true")
    p.add_argument("--host-time", action="store_true", help="also time the host side of a forward call")
    args = p.parse_args()

    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench

    compile_log = []
    import cutlass.cute as cute
    install_compile_timer()
    timed = cute.compile

    class Recording:
        def __getitem__(self, options):
            return timed[options]

        def __call__(self, fn, *a, **k):
            start = time.perf_counter()
            out = timed(fn, *a, **k)
            compile_log.append(time.perf_counter() - start)
            return out

    cute.compile = Recording()
    from flash_attn.cute.interface import flash_attn_func

    rows = []
    for d in args.hdims:
        for s in args.seqlens:
            b, h = max(1, args.tokens // s), 2048 // d
            for causal in (False, True):
                q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                           for _ in range(3))
                g = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                qt, kt, vt = (t.detach().transpose(1, 2).contiguous().requires_grad_() for t in (q, k, v))
                gt = g.transpose(1, 2).contiguous()
                flops = 4 * b * h * s * s * d / (2 if causal else 1)

                n0 = len(compile_log)
                out = flash_attn_func(q, k, v, causal=causal)
                out = out[0] if isinstance(out, tuple) else out
                fwd_compile = sum(compile_log[n0:])
                ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
                err = (out.float() - ref.transpose(1, 2).float()).norm() / ref.float().norm()
                t_fa = do_bench(lambda: flash_attn_func(q, k, v, causal=causal), warmup=25, rep=100,
                                return_mode="median")
                t_sd = do_bench(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal),
                                warmup=25, rep=100, return_mode="median")
                row = dict(d=d, s=s, b=b, h=h, causal=causal, err=float(err), fwd_compile=fwd_compile,
                           fwd=flops / t_fa / 1e9, fwd_ref=flops / t_sd / 1e9, fwd_us=t_fa * 1e3)
                if args.host_time:
                    # Host time per forward call, FA4's Python interface and our call path together,
                    # with the queue kept full: above the GPU time, the forward is host-bound.
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    for _ in range(50):
                        flash_attn_func(q, k, v, causal=causal)
                    row["fwd_host_us"] = (time.perf_counter() - start) / 50 * 1e6
                    torch.cuda.synchronize()
                # FA4's own tests xfail this backward on SM90 ("d=64 + non-causal has invalid MMA
                # tile config (m_block=80)"): its dQ MMA would be 32 rows, and wgmma has 64.
                fa4_has_no_backward = torch.cuda.get_device_capability()[0] == 9 and d == 64 and not causal
                if not args.no_backward and not fa4_has_no_backward:
                    n0 = len(compile_log)
                    torch.autograd.grad(out, (q, k, v), g, retain_graph=True)
                    row["bwd_compile"] = sum(compile_log[n0:])
                    t_fb = do_bench(lambda: torch.autograd.grad(out, (q, k, v), g, retain_graph=True),
                                    warmup=10, rep=100, return_mode="median")
                    t_sb = do_bench(lambda: torch.autograd.grad(ref, (qt, kt, vt), gt, retain_graph=True),
                                    warmup=10, rep=100, return_mode="median")
                    row["bwd"] = 2.5 * flops / t_fb / 1e9
                    row["bwd_ref"] = 2.5 * flops / t_sb / 1e9
                rows.append(row)
                print(row, flush=True)
                del q, k, v, g, qt, kt, vt, gt, out, ref
                torch.cuda.empty_cache()

    print("\n| hdim | seqlen | causal | fwd TFLOP/s FA4 / SDPA | ratio | bwd TFLOP/s FA4 / SDPA | ratio "
          "| cold compile fwd / bwd s | rel err |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        bwd = (f"{r['bwd']:.0f} / {r['bwd_ref']:.0f} | {r['bwd'] / r['bwd_ref']:.0%}" if "bwd" in r
               else "- | -" if args.no_backward else "not in FA4 on SM90 | -")
        comp = f"{r['fwd_compile']:.2f} / {r.get('bwd_compile', 0):.2f}"
        print(f"| {r['d']} | {r['s']} | {'yes' if r['causal'] else 'no'} | {r['fwd']:.0f} / {r['fwd_ref']:.0f} "
              f"| {r['fwd'] / r['fwd_ref']:.0%} | {bwd} | {comp} | {r['err']:.1e} |")


if __name__ == "__main__":
    main()
