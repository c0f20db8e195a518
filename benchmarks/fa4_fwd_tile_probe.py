#!/usr/bin/env python3
"""FlashAttention-4's SM90 forward on OpenCuTe with its key tile and tile scheduler forced (issue 23).

    python3 benchmarks/fa4_fwd_tile_probe.py [--hdim 128] [--seqlen 2048] [--tokens 16384]
                                             [--configs nc:192:single nc:192:lpt c:128:lpt ...]

For head dim 128, FA4's interface gives the non-causal forward a 192-row key tile (230,400 bytes of
shared memory) and a one-tile-per-CTA scheduler over a (m_block, head, batch) grid, and the causal
forward a 128-row tile and the longest-first (LPT) scheduler over a 1-D grid. Each configuration
`nc|c : tile_n : single|lpt` runs FA4's forward with that tile and scheduler, checked against SDPA
and timed with CUDA events (median of --reps calls), SDPA timed in the same process, so that a gap
between the two forwards can be put down to the tile, the scheduler or the code path (session 11's
16x was nvJitLink ignoring setmaxnreg: benchmarks/RESULTS.md).
"""
import argparse
import os

os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")

DEFAULT_CONFIGS = ["nc:192:single", "nc:192:lpt", "nc:128:single", "nc:176:single",
                   "c:128:lpt", "c:128:single", "c:192:lpt"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hdim", type=int, default=128)
    p.add_argument("--seqlen", type=int, default=2048)
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--configs", nargs="*", default=DEFAULT_CONFIGS)
    args = p.parse_args()

    import torch
    import torch.nn.functional as F
    from flash_attn.cute import flash_fwd, interface

    d, s = args.hdim, args.seqlen
    b, h = max(1, args.tokens // s), 2048 // d
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))

    def median_ms(fn):
        fn()
        times = []
        for _ in range(args.reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return sorted(times)[len(times) // 2]

    original_class = interface.FlashAttentionForwardSm90
    schedulers = {"single": flash_fwd.SingleTileScheduler, "lpt": flash_fwd.SingleTileLPTScheduler}
    print(f"b{b} s{s} h{h} d{d} bf16: TFLOP/s (ms)")
    for causal in (False, True):
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
        ms = median_ms(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal))
        print(f"  {'causal' if causal else 'non-causal':10}  SDPA              {flops / ms / 1e9:7.1f} ({ms:.3f})")
        for config in args.configs:
            kind, tile_n, scheduler = config.split(":")
            if (kind == "c") != causal:
                continue
            tile_n = int(tile_n)

            class ForcedTile(original_class):
                def __init__(self, *a, **kw):
                    kw["tile_n"] = tile_n
                    super().__init__(*a, **kw)

            # FA4 picks its scheduler by these two module names: point both at the one wanted.
            interface.FlashAttentionForwardSm90 = ForcedTile
            flash_fwd.SingleTileScheduler = flash_fwd.SingleTileLPTScheduler = schedulers[scheduler]
            interface._flash_attn_fwd.compile_cache.clear()
            label = f"{'causal' if causal else 'non-causal':10}  FA4 {tile_n:3} {scheduler:6}"
            try:
                out, _ = interface._flash_attn_fwd(q, k, v, causal=causal, return_lse=True)
                err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
                ms = median_ms(lambda: interface._flash_attn_fwd(q, k, v, causal=causal, return_lse=True))
                print(f"  {label} {flops / ms / 1e9:7.1f} ({ms:.3f})  rel err {err:.1e}", flush=True)
            except Exception as e:  # a configuration FA4 refuses: say so and go on
                print(f"  {label} failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}", flush=True)
            finally:
                interface.FlashAttentionForwardSm90 = original_class
                flash_fwd.SingleTileScheduler, flash_fwd.SingleTileLPTScheduler = schedulers["single"], schedulers["lpt"]
                interface._flash_attn_fwd.compile_cache.clear()


if __name__ == "__main__":
    main()
