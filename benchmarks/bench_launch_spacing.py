"""Does a launch cost more when launches are spaced out? The in-process floor (bench_call_overhead.py)
with a busy wait of S ns before each launch, touching no memory, against the same floor back to
back (paired, minus S); beside it, the compiled call's host path and its distance from the floor.
H100 figures in RESULTS.md ("Launch spacing").

    python3 benchmarks/bench_launch_spacing.py
"""
import os, sys, json, statistics, importlib.util, tempfile, textwrap, time
import torch
import cutlass, cutlass.cute as cute
from cutlass import _core
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_call_overhead as b
def batch(fn, iters=400):
    t0 = time.perf_counter()
    for _ in range(iters): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize(); return (t1 - t0) / iters * 1e6
for n in (3, 19):
    f = b.opencute_kernels(n); ts = [torch.randn(1024, device="cuda") for _ in range(n)]
    fl = _core._LaunchFloor(n)
    c = cute.compile(f, *ts); h = cute.compile(f, *ts, options="--target gpu"); h._discard_launches = True
    host = statistics.median(batch(lambda: h(*ts)) for _ in range(31))
    rows = {}
    for _ in range(3): batch(lambda: c(*ts)); fl.batch_us(400)
    for spin in (0, 500, 1000, 2000, 3000, 4000):
        d = []
        for r in range(41):
            base = fl.batch_us(400); spaced = fl.batch_us(400, spin)
            d.append(spaced - spin / 1000 - base)
        rows[spin] = statistics.median(d)
    above = statistics.median(batch(lambda: c(*ts)) - fl.batch_us(400) for _ in range(41))
    print(f"n={n}: host path only {host:.2f} us; call above floor {above:.2f} us; "
          "floor with a busy wait of S ns before each launch, minus S, above the floor: " +
          ", ".join(f"S={k}: {v:.2f}" for k, v in rows.items()), flush=True)
