"""Host time per call of a compiled function launching an empty kernel with 0, 3 and 19 torch
tensors: the default ABI, the TVM-FFI function (`--enable-tvm-ffi`, environment stream) and the
TVM-FFI function called with keyword arguments. Needs a GPU, torch and apache-tvm-ffi.

    python benchmarks/bench_tvm_ffi_call.py
"""
import importlib.util
import os
import statistics
import sys
import tempfile
import time


def per_call_us(fn, iters=400, reps=101):
    """Median host time of one call (see bench_add_one.py: synchronised outside the timing)."""
    import torch
    for _ in range(500):
        fn()
    torch.cuda.synchronize()
    results = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        results.append((t1 - t0) / iters * 1e6)
    return statistics.median(results)


def _module_with_functions(counts):
    """@jit functions with n tensor parameters each (a @jit function needs its source in a file)."""
    lines = ["import cutlass.cute as cute", ""]
    for n in counts:
        params = ", ".join(f"t{i}: cute.Tensor" for i in range(n))
        names = ", ".join(f"t{i}" for i in range(n))
        lines += ["@cute.kernel", f"def empty_kernel_{n}({params}):", "    pass", "",
                  "@cute.jit", f"def launch_{n}({params + ', ' if n else ''}stream):",
                  f"    empty_kernel_{n}({names}).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)", ""]
    path = os.path.join(tempfile.mkdtemp(prefix="opencute-bench-"), "tvm_ffi_call_functions.py")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    spec = importlib.util.spec_from_file_location("tvm_ffi_call_functions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    import torch
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream
    counts = (0, 3, 19)
    module = _module_with_functions(counts)
    stream = torch.cuda.current_stream()
    print(f"{'tensors':>8} {'default ABI':>12} {'TVM-FFI':>10} {'TVM-FFI kw':>11}   (us per call, median)")
    for n in counts:
        fn = getattr(module, f"launch_{n}")
        tensors = [torch.zeros(1024, device="cuda") for _ in range(n)]
        m = cute.sym_int()
        fakes = [make_fake_compact_tensor(cute.Float32, (m,)) for _ in range(n)]
        default = cute.compile(fn, *fakes, make_fake_stream())
        ffi = cute.compile(fn, *fakes, make_fake_stream(use_tvm_ffi_env_stream=True), options="--enable-tvm-ffi")
        raw = stream.cuda_stream
        kwargs = {f"t{i}": t for i, t in enumerate(tensors)}
        t_default = per_call_us(lambda: default(*tensors, raw))
        t_ffi = per_call_us(lambda: ffi(*tensors))
        t_kw = per_call_us(lambda: ffi(**kwargs)) if n else float("nan")
        print(f"{n:>8} {t_default:>12.2f} {t_ffi:>10.2f} {t_kw:>11.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
