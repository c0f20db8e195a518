"""Does a launch cost more when launches are spaced out? The in-process floor (bench_call_overhead.py)
with a busy wait of S ns before each launch, touching no memory, against the same floor back to
back (paired, minus S); beside it, the compiled call's host path and its distance from the floor.
H100 figures in RESULTS.md ("Launch spacing").

    python3 benchmarks/bench_launch_spacing.py
"""
import os
import statistics
import sys

import torch

import cutlass.cute as cute
from cutlass import _core

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_call_overhead as bench  # noqa: E402  (its kernels and timing, not its package path)

ITERS = 400
sync = torch.cuda.synchronize
for n in (3, 19):
    f = bench.opencute_kernels(n)
    ts = [torch.randn(1024, device="cuda") for _ in range(n)]
    floor = _core._LaunchFloor(n)
    compiled = cute.compile(f, *ts)
    host = cute.compile(f, *ts, options="--target gpu")
    host._discard_launches = True
    host_us = bench.per_call_us(lambda: host(*ts), sync, ITERS, 31)
    _, _, above = bench.interleaved_us(lambda: compiled(*ts), floor, sync, ITERS, 41)
    spaced = {}
    for spin in (0, 500, 1000, 2000, 3000, 4000):
        d = [floor.batch_us(ITERS, spin) - spin / 1000 - floor.batch_us(ITERS) for _ in range(41)]
        spaced[spin] = statistics.median(d)
    print(f"n={n}: host path only {host_us:.2f} us; call above floor {above:.2f} us; "
          "floor with a busy wait of S ns before each launch, minus S, above the floor: " +
          ", ".join(f"S={k}: {v:.2f}" for k, v in spaced.items()), flush=True)
