"""First call of a @jit function in a new process: cold (empty compile cache), warm through the
IR-keyed entries (the process traces, then finds the code on disk) and warm through the
trace-key entries (the process keys the call without tracing and loads the whole compiled call;
python/cutlass/_dsl/trace_key.py). Each figure is one fresh process; the first call includes
tracing or keying, compiling or loading from the cache, module load and the launch. The split
columns are that call's parts: trace or key, compile or load, and the rest (module load,
argument checks, launch, synchronisation); "2nd call" is a second call of the same process
(launch only), so "run" minus "2nd call" is about the module load.

    python benchmarks/bench_compile_cache.py            # on the GPU machine; CPU emulator otherwise
    BENCH_REPS=5 BENCH_KERNELS=add_one python benchmarks/bench_compile_cache.py
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent('''
    import json, sys, time
    import numpy as np
    t_import = time.perf_counter()
    import cutlass, cutlass.cute as cute
    from cutlass import _core
    from cutlass._dsl import trace_key
    import_ms = (time.perf_counter() - t_import) * 1e3
    on_gpu = cutlass.cuda.is_available()
    if on_gpu:
        import torch
        cutlass.cuda.initialize_cuda_context()

    # The parts of the first call, timed where they happen.
    parts = {"key": 0.0, "load": 0.0, "compile": 0.0, "trace": 0.0}

    def timed(owner, name, part, after=None):
        inner = getattr(owner, name)
        def wrapper(*a, **k):
            t = time.perf_counter()
            out = inner(*a, **k)
            parts[part] += (time.perf_counter() - t) * 1e3
            if after is not None and out is not None:
                after(out)
            return out
        setattr(owner, name, wrapper)

    compiled_functions = []  # their trace_ms is set after compile_traced returns
    took_trace = compiled_functions.append
    timed(trace_key, "compute", "key")
    timed(_core, "traced_program_load", "load")
    timed(_core, "compile_traced", "compile", took_trace)

    @cute.kernel
    def add_one_kernel(a: cute.Tensor, b: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        i = bidx * 128 + tidx
        if i < a.shape[0]:
            b[i] = a[i] + 1.0

    @cute.jit
    def add_one(a: cute.Tensor, b: cute.Tensor):
        add_one_kernel(a, b).launch(grid=((a.shape[0] + 127) // 128, 1, 1), block=(128, 1, 1))

    @cute.kernel
    def poly_kernel(a: cute.Tensor, b: cute.Tensor):
        # The largest kernel here: 64 unrolled steps of transcendental arithmetic per element.
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        i = bidx * 128 + tidx
        if i < a.shape[0]:
            x = a[i]
            acc = x
            for k in cutlass.range_constexpr(64):
                acc = acc * 0.5 + cute.math.sin(acc + float(k)) * cute.math.exp(x * 0.01)
            b[i] = acc

    @cute.jit
    def poly(a: cute.Tensor, b: cute.Tensor):
        poly_kernel(a, b).launch(grid=((a.shape[0] + 127) // 128, 1, 1), block=(128, 1, 1))

    fn = {"add_one": add_one, "poly": poly}[sys.argv[1]]
    n = 1 << 16
    if on_gpu:
        a = torch.randn(n, device="cuda"); b = torch.empty_like(a)
    else:
        a = np.random.randn(n).astype(np.float32); b = np.empty_like(a)
    t0 = time.perf_counter()
    fn(a, b)
    if on_gpu:
        torch.cuda.synchronize()
    first = (time.perf_counter() - t0) * 1e3
    t1 = time.perf_counter()
    fn(a, b)
    if on_gpu:
        torch.cuda.synchronize()
    second = (time.perf_counter() - t1) * 1e3
    # trace_ms counts from before the toolchain preload to the end of the trace; the compile's
    # own timer starts after it.
    parts["trace"] = sum(c.trace_ms for c in compiled_functions)
    run = first - parts["key"] - parts["load"] - parts["compile"] - parts["trace"]
    print(json.dumps({"first_call_ms": first, "gpu": on_gpu, "import_ms": import_ms, "second_ms": second,
                      "run_ms": run, "hits": trace_key.stats["hits"], **{k + "_ms": v for k, v in parts.items()}}))
''')


def run_child(script, kernel, cache_dir, trace_key=True):
    env = dict(os.environ, CUTE_DSL_CACHE_DIR=cache_dir)
    env.pop("CUTE_DSL_DISABLE_FILE_CACHING", None)
    env.pop("OPENCUTE_DISABLE_TRACE_KEY_CACHE", None)
    if not trace_key:
        env["OPENCUTE_DISABLE_TRACE_KEY_CACHE"] = "1"
    out = subprocess.run([sys.executable, script, kernel], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_row(runs):
    return {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "gpu"}


def main():
    work = tempfile.mkdtemp(prefix="opencute-cache-bench-")
    script = os.path.join(work, "child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    reps = int(os.environ.get("BENCH_REPS", "3"))
    rows = []
    for kernel in os.environ.get("BENCH_KERNELS", "add_one,poly").split(","):
        cold, warm_ir, warm_key = [], [], []
        for rep in range(reps):
            cache_dir = os.path.join(work, f"cache-{kernel}-{rep}")
            cold.append(run_child(script, kernel, cache_dir))
            warm_ir.append(run_child(script, kernel, cache_dir, trace_key=False))
            warm_key.append(run_child(script, kernel, cache_dir))
            assert warm_key[-1]["hits"] == 1 and cold[-1]["hits"] == 0 and warm_ir[-1]["hits"] == 0
        rows.append((kernel, median_row(cold), median_row(warm_ir), median_row(warm_key)))
    device = "GPU" if run_child(script, "add_one", os.path.join(work, "probe"))["gpu"] else "CPU emulator"
    print(f"first call in a new process ({device}; median of {reps} processes each)")
    print("| kernel | cold ms | warm, IR key ms | warm, trace key ms | IR key / cold | trace key / cold |")
    print("|---|---|---|---|---|---|")
    for kernel, c, w, k in rows:
        print(f"| {kernel} | {c['first_call_ms']:.1f} | {w['first_call_ms']:.1f} | {k['first_call_ms']:.1f} | "
              f"{w['first_call_ms'] / c['first_call_ms']:.0%} | {k['first_call_ms'] / c['first_call_ms']:.1%} |")
    print()
    print("split of the first call (ms; import is `import cutlass` before it)")
    print("| kernel | process | import | trace | key | compile (incl. IR-keyed disk load) | trace-key load | run | 2nd call |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kernel, c, w, k in rows:
        for name, r in (("cold", c), ("warm, IR key", w), ("warm, trace key", k)):
            print(f"| {kernel} | {name} | {r['import_ms']:.1f} | {r['trace_ms']:.2f} | {r['key_ms']:.2f} | "
                  f"{r['compile_ms']:.2f} | {r['load_ms']:.2f} | {r['run_ms']:.2f} | {r['second_ms']:.2f} |")


if __name__ == "__main__":
    main()
