"""First call of a @jit function in a new process: cold (empty compile cache) against warm (the
on-disk cache filled by an earlier process). Each figure is one fresh process; the first call
includes tracing, compiling or loading from the cache, module load and the launch.

    python benchmarks/bench_compile_cache.py            # on the GPU machine; CPU emulator otherwise
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
    import cutlass, cutlass.cute as cute
    on_gpu = cutlass.cuda.is_available()
    if on_gpu:
        import torch
        cutlass.cuda.initialize_cuda_context()

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
    print(json.dumps({"first_call_ms": (time.perf_counter() - t0) * 1e3, "gpu": on_gpu}))
''')


def run_child(script, kernel, cache_dir):
    env = dict(os.environ, CUTE_DSL_CACHE_DIR=cache_dir)
    env.pop("CUTE_DSL_DISABLE_FILE_CACHING", None)
    out = subprocess.run([sys.executable, script, kernel], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    work = tempfile.mkdtemp(prefix="opencute-cache-bench-")
    script = os.path.join(work, "child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    rows = []
    for kernel in ("add_one", "poly"):
        cold, warm = [], []
        for rep in range(3):
            cache_dir = os.path.join(work, f"cache-{kernel}-{rep}")
            cold.append(run_child(script, kernel, cache_dir)["first_call_ms"])
            warm.append(run_child(script, kernel, cache_dir)["first_call_ms"])
        rows.append((kernel, statistics.median(cold), statistics.median(warm)))
    device = "GPU" if run_child(script, "add_one", os.path.join(work, "probe"))["gpu"] else "CPU emulator"
    print(f"first call in a new process ({device}; median of 3 processes each)")
    print("| kernel | cold cache ms | warm cache ms | warm / cold |")
    print("|---|---|---|---|")
    for kernel, c, w in rows:
        print(f"| {kernel} | {c:.1f} | {w:.1f} | {w / c:.0%} |")


if __name__ == "__main__":
    main()
