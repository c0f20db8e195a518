#!/usr/bin/env python3
"""FlashAttention-4's SM90 forward on OpenCuTe with its key-block tile forced (issue 23).

    python3 benchmarks/fa4_fwd_tile_probe.py [--hdim 128] [--seqlen 2048] [--tokens 16384]

For head dim 128, FA4's interface gives the non-causal forward a 192-row key tile (230,400 bytes of
shared memory) and the causal one a 128-row tile. This runs both code paths with both tiles, so
that a slow non-causal forward can be put down to the tile (its shared memory, its wgmma n192) or
to the non-causal code path: causal/non-causal x tile_n 128/176/192, each checked against SDPA and
timed with CUDA events (median of --reps calls), SDPA timed in the same process.
"""
import argparse
import os

os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hdim", type=int, default=128)
    p.add_argument("--seqlen", type=int, default=2048)
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--tiles", type=int, nargs="*", default=[128, 176, 192],
                   help="key tiles to force (176: FlashAttention-3's non-causal choice, 212 KB of shared memory)")
    args = p.parse_args()

    import torch
    import torch.nn.functional as F
    from flash_attn.cute import interface

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

    original = interface.FlashAttentionForwardSm90
    print(f"b{b} s{s} h{h} d{d} bf16; TFLOP/s (ms)")
    for causal in (False, True):
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
        sdpa = median_ms(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal))
        print(f"  {'causal' if causal else 'non-causal':10} SDPA            {flops / sdpa / 1e9:7.1f} ({sdpa:.3f})")
        for tile_n in args.tiles:
            class ForcedTile(original):
                def __init__(self, *a, **kw):
                    kw["tile_n"] = tile_n
                    super().__init__(*a, **kw)

            interface.FlashAttentionForwardSm90 = ForcedTile
            interface._flash_attn_fwd.compile_cache.clear()
            try:
                out, _ = interface._flash_attn_fwd(q, k, v, causal=causal, return_lse=True)
                err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
                ms = median_ms(lambda: interface._flash_attn_fwd(q, k, v, causal=causal, return_lse=True))
                print(f"  {'causal' if causal else 'non-causal':10} FA4 tile_n={tile_n}  "
                      f"{flops / ms / 1e9:7.1f} ({ms:.3f})  rel err {err:.1e}")
            except Exception as e:  # a configuration FA4 refuses: say so and go on
                print(f"  {'causal' if causal else 'non-causal':10} FA4 tile_n={tile_n}  failed: "
                      f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
            finally:
                interface.FlashAttentionForwardSm90 = original
                interface._flash_attn_fwd.compile_cache.clear()


if __name__ == "__main__":
    main()
