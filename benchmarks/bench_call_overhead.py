"""Host time per call with 0, 3 and 19 tensor arguments, and the first compile of a process.

Rows, each an empty kernel launched on a 1x1x1 grid of 128 threads with N tensors of 1024 fp32:
- OpenCuTe compiled call (default ABI): `compiled = cute.compile(f, *ts)`; `compiled(*ts)`.
- OpenCuTe compiled call, launch discarded: the same with `compiled._discard_launches = True`:
  everything up to cuLaunchKernel (argument reading, checks, host program, parameter packing).
- OpenCuTe compiled call through TVM-FFI (`--enable-tvm-ffi`), when `tvm_ffi` is installed and
  the option is implemented; skipped with the reason otherwise. Its call slot reads torch tensors
  through DLPack's C exchange table itself; the row "through tvm-ffi's own conversion" is the same
  function called through `tvm_ffi.Function.__call__`'s argument conversion (an owned ffi.Tensor
  per tensor), for comparison; "launch discarded" is its host path only.
- OpenCuTe direct `@cute.jit` call `f(*ts)` (no trace while the cached kernel is valid; the
  table shows how many calls traced during the timing: it should be 0).
- Triton: an empty `@triton.jit` kernel with the same tensors; `torch.add(a, 1.0, out=b)`.
- The driver floor: `cuLaunchKernel` from C++ of an empty kernel with the same parameters
  (pointer and int32 length per tensor: exactly what the OpenCuTe kernels here take, since their
  tensors have a dynamic extent and a static unit stride). Measured two ways:
  * in this process (`_core._LaunchFloor`, the same kernel text and launch loop as
    `launch_floor.cpp`), batch by batch INTERLEAVED with the two compiled-call rows: each
    repetition times one batch of floor launches and one batch of calls back to back (the order
    alternating), so that both see the same clocks, the same GPU state and the same neighbours.
    The rows "... above the floor (paired)" are the median over repetitions of (call batch - floor
    batch), the figure to compare with the targets; "driver floor, in process" is the median of
    all the floor batches of that column.
  * in a process of its own, `launch_floor` (built with -DOPENCUTE_BUILD_BENCHMARKS=ON), run
    before and after all other rows; the spread between the two runs shows how far a floor taken
    at another moment can move (on the H100 a same-session run once read 3.79 / 3.42 / 4.07 us
    for 0 / 3 / 19 tensors: lower at 3 than at 0).
- "cuLaunchKernel through a one-line Python binding": the in-process floor's kernel launched by a
  nanobind method that takes the call's tensors and ignores them, timed like the compiled calls:
  the floor plus what any Python call of a launcher costs (the call, its argument tuple, the
  interpreter's cache traffic between launches). The compiled calls minus this row are what
  OpenCuTe's own argument reading, checks and host program cost.
- Launch spacing: back-to-back bare launches keep the GPU busy, and a launch after the GPU has gone
  idle costs more. On the H100 a busy wait of S ns before each floor launch changed the launch
  itself by -0.4 us at S = 2000 (no back-pressure from the queue) and by +0.5 to +0.7 us at
  S = 3000-4000 (the GPU idle), at 3 and 19 tensors alike. So "... above the floor spaced by its
  host path (paired)" compares the call with floor launches preceded by a busy wait as long as the
  call's own host path (the "launch discarded" row): what the call costs beyond a bare launch made
  at the same pace.
- "torch's DLPack exchange read": torch's `dltensor_from_py_object_no_sync` over the call's
  tensors, timed in a C++ loop (`_core._time_dlpack_exchange_reads`): the framework's share of the
  per-tensor cost, which no caller of torch's table can avoid.
- First compile of a process: a fresh subprocess, CUDA already initialised by torch (as in an
  application), disk cache off, `cute.compile` of an empty kernel: the first and the second.

Method (as bench_add_one.py): the median over `reps` repetitions of `iters` back-to-back calls,
synchronised outside the timed region, so that the launch queue never fills and the figure is
host time per call. The floor is timed the same way (batches of `iters`, synchronised after).

    python benchmarks/bench_call_overhead.py [--launch-floor build/bench/launch_floor] [--json out.json]
    python benchmarks/bench_call_overhead.py --cpu      # no GPU: numpy arrays, reduced, a smoke test
    python benchmarks/bench_call_overhead.py --processes 9   # the target rows, median and range over 9 processes

On the H100 machine one process's 19-tensor rows can move by a microsecond from one process to the
next (host noise the pairing cannot remove), so the targets are read from --processes runs.

--cpu runs the same rows on the CPU emulator with numpy arrays (Triton, torch and the floor are
skipped) and the "launch discarded" rows compiled for the GPU: the figures are this machine's host
costs, for finding regressions, not the H100's. Without torch, the TVM-FFI host-path rows use
tensors of the tests' DLPack exchange provider (`_core._testing_dlpack_exchange_api()`, whose
own conversion costs more than torch's: ~300 instructions per tensor).
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The in-tree package when it has a built _core (a development checkout), else the installed one.
PKG = os.path.join(HERE, "..", "python")
if not any(f.startswith("_core") for f in os.listdir(os.path.join(PKG, "cutlass"))):
    PKG = None
COUNTS = (0, 3, 19)


def load_generated(name, source):
    """Imports generated source from a file (the DSL and Triton read functions' source)."""
    path = os.path.join(tempfile.mkdtemp(prefix="bench-call-"), name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def opencute_kernels(n):
    params = ", ".join(f"t{i}: cute.Tensor" for i in range(n))
    args = ", ".join(f"t{i}" for i in range(n))
    return load_generated(f"opencute_empty_{n}", textwrap.dedent(f"""
        import cutlass
        import cutlass.cute as cute

        @cute.kernel
        def empty_kernel({params}):
            pass

        @cute.jit
        def launch_empty({params}):
            empty_kernel({args}).launch(grid=(1, 1, 1), block=(128, 1, 1))
        """)).launch_empty


def triton_kernel(n):
    params = ", ".join([f"p{i}" for i in range(n)] + ["n"])
    return load_generated(f"triton_empty_{n}", textwrap.dedent(f"""
        import triton

        @triton.jit
        def empty_kernel({params}):
            pass
        """)).empty_kernel


def batch_us(fn, sync, iters):
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    t1 = time.perf_counter()
    sync()
    return (t1 - t0) / iters * 1e6


def interleaved_us(fn, floor, sync, iters, reps, spin_ns=0):
    """(median us per call, median us per floor launch, median paired difference): each repetition
    times a batch of `fn` and a batch of floor launches back to back, alternating which goes first.
    With `spin_ns`, each floor launch follows a busy wait of that long (counted in the floor)."""
    for _ in range(max(iters, 50)):
        fn()
    sync()
    floor.batch_us(max(iters, 50), spin_ns) if spin_ns else floor.batch_us(max(iters, 50))
    ours, floors, above = [], [], []
    for r in range(reps):
        if r % 2:
            f = floor.batch_us(iters, spin_ns) if spin_ns else floor.batch_us(iters)
            o = batch_us(fn, sync, iters)
        else:
            o = batch_us(fn, sync, iters)
            f = floor.batch_us(iters, spin_ns) if spin_ns else floor.batch_us(iters)
        ours.append(o)
        floors.append(f)
        above.append(o - f)
    return statistics.median(ours), floors, statistics.median(above)


def per_call_us(fn, sync, iters, reps):
    for _ in range(max(iters, 50)):
        fn()
    sync()
    results = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        t1 = time.perf_counter()
        sync()
        results.append((t1 - t0) / iters * 1e6)
    return statistics.median(results)


FIRST_COMPILE = r"""
import json, os, sys, time
use_gpu = sys.argv[1] == "gpu"
if use_gpu:
    import torch
    torch.cuda.init()
    torch.empty(1, device="cuda")
t0 = time.perf_counter()
import cutlass
import cutlass.cute as cute
t1 = time.perf_counter()

@cute.kernel
def empty_kernel():
    pass

@cute.jit
def launch_empty():
    empty_kernel().launch(grid=(1, 1, 1), block=(128, 1, 1))

out = {"import_ms": (t1 - t0) * 1e3}
for which in ("first", "second"):
    t = time.perf_counter()
    compiled = cute.compile(launch_empty, options="" if use_gpu else "--target gpu")
    out[which + "_ms"] = (time.perf_counter() - t) * 1e3
    out[which + "_timings"] = {k: v for k, v in compiled.timings_ms.items()}
print(json.dumps(out))
"""


def first_compile(use_gpu):
    env = dict(os.environ, CUTE_DSL_DISABLE_FILE_CACHING="1")
    if PKG:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PKG, env.get("PYTHONPATH", "")) if p)
    script = os.path.join(tempfile.mkdtemp(prefix="bench-first-compile-"), "first_compile.py")
    with open(script, "w") as f:
        f.write(FIRST_COMPILE)  # from a file: the DSL reads the functions' source
    runs = []
    for _ in range(3):
        p = subprocess.run([sys.executable, script, "gpu" if use_gpu else "cpu"], capture_output=True,
                           text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return runs


def launch_floor(path):
    if not path or not os.path.exists(path):
        return {}
    p = subprocess.run([path], capture_output=True, text=True)
    floors = {}
    for line in p.stdout.splitlines():
        if line.startswith("launch_floor tensors="):
            parts = dict(kv.split("=") for kv in line.split()[1:])
            floors[int(parts["tensors"])] = float(parts["us"])
    return floors


def over_processes(args):
    """--processes K: --targets-only in K fresh processes (one at a time); each row's median and range."""
    runs = []
    for k in range(args.processes):
        out = os.path.join(tempfile.mkdtemp(prefix="bench-call-"), "rows.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--targets-only", "--json", out]
        if args.cpu:
            cmd.append("--cpu")
        for flag, value in (("--iters", args.iters), ("--reps", args.reps)):
            if value:
                cmd += [flag, str(value)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        with open(out) as fh:
            runs.append(json.load(fh)["per_call_us"])
    print(f"| host time per call, us: median [min-max] of {len(runs)} processes | " +
          " | ".join(f"{n} tensors" for n in COUNTS) + " |")
    print("|---|" + "---|" * len(COUNTS))
    summary = {}
    for name in runs[0]:
        cells = []
        for n in COUNTS:
            values = [r.get(name, {}).get(str(n)) for r in runs]
            values = [v for v in values if isinstance(v, (int, float))]
            if not values:
                cells.append("")
                continue
            summary.setdefault(name, {})[n] = {"median": statistics.median(values), "all": values}
            cells.append(f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"over_processes": summary}, fh, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", action="store_true", help="no GPU: emulator, numpy arrays, reduced repetitions")
    ap.add_argument("--launch-floor", default=os.path.join(HERE, "..", "build", "bench", "launch_floor"))
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--targets-only", action="store_true",
                    help="only the rows the targets are read from (paired calls, their host paths, torch's reads)")
    ap.add_argument("--processes", type=int, default=1,
                    help="run --targets-only in this many fresh processes, one after another, and print the "
                         "median and range of each row over them")
    args = ap.parse_args()
    if args.processes > 1:
        return over_processes(args)
    use_gpu = not args.cpu
    iters = args.iters or (400 if use_gpu else 50)
    reps = args.reps or (101 if use_gpu else 5)
    if not use_gpu:
        os.environ["CUTE_DSL_TARGET"] = "cpu"
    if PKG:
        sys.path.insert(0, PKG)

    import numpy as np
    import cutlass  # noqa: F401
    import cutlass.cute as cute

    if use_gpu:
        import torch

        def make_tensors(n):
            return [torch.randn(1024, device="cuda") for _ in range(n)]

        sync = torch.cuda.synchronize
    else:
        def make_tensors(n):
            return [np.random.default_rng(i).standard_normal(1024).astype(np.float32) for i in range(n)]

        def sync():
            pass

    rows = {}  # name -> {count: us or str}

    def exchange_tensors(n):
        # Host tensors offering DLPack's C exchange table, as torch tensors do (no torch here).
        from cutlass import _core

        class ExchangeTensor:
            __dlpack_c_exchange_api__ = _core._testing_dlpack_exchange_api()

            def __init__(self, array):
                self._array = array
                self._dlpack_view = _core._DLPackView(array.ctypes.data, [array.size], [1], 2, 32, 1)

        return [ExchangeTensor(a) for a in make_tensors(n)]

    def put(name, n, value):
        rows.setdefault(name, {})[n] = value

    tvm_ffi_reason = None
    try:
        import tvm_ffi  # noqa: F401
    except ImportError:
        tvm_ffi_reason = "tvm_ffi is not installed"

    floor_reason = None
    floor_batches = {}  # count -> every in-process floor batch of that column

    def in_process_floor(n):
        nonlocal floor_reason
        if not use_gpu or floor_reason:
            return None
        try:
            from cutlass import _core
            return _core._LaunchFloor(n)
        except Exception as e:  # an older _core, or no driver: the separate-process floor remains
            floor_reason = f"{type(e).__name__}: {str(e)[:120]}"
            return None

    def timed_against_floor(name, n, fn, floor):
        if floor is None:
            put(name, n, per_call_us(fn, sync, iters, reps))
            return
        ours, floors, above = interleaved_us(fn, floor, sync, iters, reps)
        put(name, n, ours)
        put(name + " above the floor (paired)", n, above)
        floor_batches.setdefault(n, []).extend(floors)

    def timed_against_spaced_floor(name, n, fn, floor, host_us):
        # The floor's launches spaced by the call's own host path (a busy wait): what the call
        # costs beyond launching at the same pace (see "Launch spacing" above).
        if floor is None:
            return
        try:
            floor.batch_us(1, 1)
        except TypeError:  # an older _core without spin_ns
            return
        _, _, above = interleaved_us(fn, floor, sync, iters, reps, spin_ns=int(host_us * 1000))
        put(name + " above the floor spaced by its host path (paired)", n, above)

    separate_floor_before = launch_floor(args.launch_floor) if use_gpu else {}

    for n in COUNTS:
        f = opencute_kernels(n)
        ts = make_tensors(n)
        floor = in_process_floor(n)
        compiled = cute.compile(f, *ts)
        timed_against_floor("OpenCuTe compiled call", n, lambda: compiled(*ts), floor)
        if floor is not None and hasattr(floor, "launch"):
            timed_against_floor("cuLaunchKernel through a one-line Python binding (tensors passed, ignored)", n,
                                lambda: floor.launch(*ts), floor)
        if use_gpu and n:
            from cutlass import _core
            if hasattr(_core, "_time_dlpack_exchange_reads"):
                reads = [_core._time_dlpack_exchange_reads(ts, 2000) for _ in range(21)]
                put("torch's DLPack exchange read (dltensor_from_py_object_no_sync), all tensors of the call", n,
                    statistics.median(reads) * n / 1000)

        host = cute.compile(f, *ts, options="--target gpu")
        host._discard_launches = True
        host_us = per_call_us(lambda: host(*ts), sync, iters, reps)
        put("OpenCuTe compiled call, launch discarded (host path only)", n, host_us)
        if use_gpu:
            timed_against_spaced_floor("OpenCuTe compiled call", n, lambda: compiled(*ts), floor, host_us)

        if tvm_ffi_reason is None:
            try:
                ffi = cute.compile(f, *ts, options="--enable-tvm-ffi")
                ffi(*ts)
                timed_against_floor("OpenCuTe compiled call, TVM-FFI", n, lambda: ffi(*ts), floor)
                xs = ts if use_gpu else exchange_tensors(n)
                ffi_host = cute.compile(f, *ts, options="--enable-tvm-ffi --target gpu")
                ffi_host._compiled._discard_launches = True
                ffi_host_us = per_call_us(lambda: ffi_host(*xs), sync, iters, reps)
                put("OpenCuTe compiled call, TVM-FFI, launch discarded (host path only)", n, ffi_host_us)
                if use_gpu:
                    timed_against_spaced_floor("OpenCuTe compiled call, TVM-FFI", n, lambda: ffi(*ts), floor,
                                               ffi_host_us)
                if not args.targets_only:
                    state = ffi_host.__dict__.pop("_opencute_state", None)  # tvm-ffi's own conversion
                    put("OpenCuTe compiled call, TVM-FFI through tvm-ffi's own conversion, launch discarded", n,
                        per_call_us(lambda: ffi_host(*xs), sync, iters, reps))
                    ffi_host._opencute_state = state
            except Exception as e:  # the option may not be implemented on this branch
                tvm_ffi_reason = f"--enable-tvm-ffi failed: {type(e).__name__}: {str(e)[:120]}"

        if args.targets_only:
            continue
        f(*ts)  # traces and compiles; later calls must not trace
        before = f.direct_call_stats["traced"]
        put("OpenCuTe direct @cute.jit call", n, per_call_us(lambda: f(*ts), sync, iters, reps))
        put("  traces during the direct-call timing", n, f.direct_call_stats["traced"] - before)

        if use_gpu:
            try:
                tk = triton_kernel(n)
                tk[(1,)](*ts, 1024)
                put("Triton empty kernel", n, per_call_us(lambda: tk[(1,)](*ts, 1024), sync, iters, reps))
            except Exception as e:  # Triton missing or failing is reported, not fatal
                put("Triton empty kernel", n, f"{type(e).__name__}")

    if args.targets_only:
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"per_call_us": rows}, fh, indent=1, default=str)
        for name, values in rows.items():
            print(f"| {name} | " + " | ".join(f"{values[n]:.2f}" if isinstance(values.get(n), float) else ""
                                             for n in COUNTS) + " |")
        return
    if use_gpu:
        a, b = make_tensors(2)
        put("torch.add(a, 1.0, out=b) (2 tensors, in the 3 column)", 3, per_call_us(lambda: torch.add(a, 1.0, out=b), sync, iters, reps))
        for n in COUNTS:
            if n in floor_batches:
                put("cuLaunchKernel from C++ (driver floor, in process, interleaved)", n,
                    statistics.median(floor_batches[n]))
        separate_floor_after = launch_floor(args.launch_floor)
        for label, floors in (("before", separate_floor_before), ("after", separate_floor_after)):
            for n, us in floors.items():
                put(f"cuLaunchKernel from C++ (driver floor, own process, {label} the rows above)", n, us)

    compiles = first_compile(use_gpu)

    print("| host time per call, us | " + " | ".join(f"{n} tensors" for n in COUNTS) + " |")
    print("|---|" + "---|" * len(COUNTS))
    for name, values in rows.items():
        cells = []
        for n in COUNTS:
            v = values.get(n, "")
            cells.append(f"{v:.2f}" if isinstance(v, float) else str(v))
        print(f"| {name} | " + " | ".join(cells) + " |")
    if tvm_ffi_reason:
        print(f"TVM-FFI row skipped: {tvm_ffi_reason}")
    if floor_reason:
        print(f"in-process floor unavailable ({floor_reason}): compiled calls timed alone")
    print()
    print("| first compile of a process (cache off) | import cutlass ms | first compile ms | load ms | "
          "second compile ms |")
    print("|---|---|---|---|---|")
    for i, c in enumerate(compiles):
        print(f"| run {i + 1} | {c['import_ms']:.1f} | {c['first_ms']:.1f} | {c['first_timings'].get('load', 0):.1f} | "
              f"{c['second_ms']:.1f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"per_call_us": rows, "first_compile": compiles, "tvm_ffi_skipped": tvm_ffi_reason,
                       "in_process_floor_batches_us": floor_batches, "in_process_floor_skipped": floor_reason}, fh,
                      indent=1, default=str)


if __name__ == "__main__":
    main()
