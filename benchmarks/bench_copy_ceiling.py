#!/usr/bin/env python3
"""The device's memory ceiling as METHOD.md asks: a large device-to-device copy (bytes read plus
bytes written), median of triton's do_bench. Memory-bound kernels are compared with it."""
import torch
from triton.testing import do_bench

for mib in (256, 1024, 4096):
    src = torch.randn(mib * 2**20 // 4, device="cuda")
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=25, rep=200, return_mode="median")
    print(f"copy {mib} MiB: {2 * src.numel() * 4 / (ms * 1e-3) / 1e9:.0f} GB/s")
