"""One side of an A/B of the call path: the paired distance from the in-process floor and the host
path, both ABIs, 3 and 19 tensors, for whichever OpenCuTe is importable; prints one JSON line.
Install the two versions side by side (`pip install --no-deps --target /tmp/old <old tree>`, the
same for /tmp/new) and alternate `PYTHONPATH=/tmp/old ...` and `PYTHONPATH=/tmp/new ...` runs.

    python3 benchmarks/ab_call_path.py
"""
import json
import os
import sys

import torch

import cutlass.cute as cute
from cutlass import _core

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_call_overhead as bench  # noqa: E402  (its kernels and timing, not its package path)

ITERS, REPS = 400, 61
out = {}
for n in (3, 19):
    f = bench.opencute_kernels(n)
    ts = [torch.randn(1024, device="cuda") for _ in range(n)]
    floor = _core._LaunchFloor(n)
    for abi, options in (("def", ""), ("ffi", "--enable-tvm-ffi")):
        compiled = cute.compile(f, *ts, options=options)
        host = cute.compile(f, *ts, options=options + " --target gpu")
        (host._compiled if abi == "ffi" else host)._discard_launches = True
        _, _, above = bench.interleaved_us(lambda: compiled(*ts), floor, torch.cuda.synchronize, ITERS, REPS)
        out[f"{abi}{n}_above"] = above
        out[f"{abi}{n}_host"] = bench.per_call_us(lambda: host(*ts), torch.cuda.synchronize, ITERS, REPS)
print("AB " + json.dumps(out))
