"""Cold compile time of add_one (trace / lower+libNVVM / cubin) and host overhead per call of
the compiled function with two torch tensors, against Triton and torch.add in the same run.

    python benchmarks/bench_add_one.py
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))


def per_call_us(fn, iters=400, reps=201):
    """Median host time of one call. Each repetition times `iters` back-to-back calls and then
    synchronises outside the timed region, so the launch queue never fills and the figure is the
    host's cost per call, not the GPU's kernel throughput."""
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


def main():
    # An empty compile cache, so that the compile figures are cold ones.
    import tempfile
    os.environ["CUTE_DSL_CACHE_DIR"] = tempfile.mkdtemp(prefix="opencute-cold-")
    t_import = time.perf_counter()
    import cutlass
    import cutlass.cute as cute
    import torch
    from add_one import add_one
    import_ms = (time.perf_counter() - t_import) * 1e3

    cutlass.cuda.initialize_cuda_context()
    n_sym = cute.sym_int()
    a_fake = cute.runtime.make_fake_compact_tensor(cute.Float32, (n_sym,))
    b_fake = cute.runtime.make_fake_compact_tensor(cute.Float32, (n_sym,))
    rows = []
    for attempt in ("first in process", "second (libraries loaded)"):
        t0 = time.perf_counter()
        compiled = cute.compile(add_one, a_fake, b_fake)
        total = (time.perf_counter() - t0) * 1e3
        t = compiled.timings_ms
        parts = t["trace"] + t["verify"] + t["lower"] + t["nvvm"] + t["link"]
        rows.append((attempt, t["trace"], t["verify"] + t["lower"], t["nvvm"], t["link"], total - parts, total))

    n = 1 << 20
    a = torch.randn(n, device="cuda")
    b = torch.empty_like(a)
    compiled(a, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(b, a + 1, rtol=0, atol=0)

    @cute.jit
    def add_one_without_launch(a: cute.Tensor, b: cute.Tensor):
        # The same arguments and grid arithmetic as add_one, minus the launch: the cost of
        # reading the two torch tensors and running the host program.
        n = a.shape[0]
        blocks = (n + 127) // 128
        if blocks < 0:  # never true; keeps the arithmetic alive without adding a printf
            b[0] = 0.0

    no_launch = cute.compile(add_one_without_launch, a_fake, b_fake)

    ours = per_call_us(lambda: compiled(a, b))
    ours_no_launch = per_call_us(lambda: no_launch(a, b))
    tadd = per_call_us(lambda: torch.add(a, 1.0, out=b))
    triton_us = triton_cold = None
    try:
        # A fresh cache directory, so that Triton's figure is a cold compile like ours.
        import tempfile
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cold-")
        import triton
        import triton.language as tl

        @triton.jit
        def add_one_kernel(a_ptr, b_ptr, n, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(b_ptr + offs, tl.load(a_ptr + offs, mask=m) + 1.0, mask=m)

        grid = (triton.cdiv(n, 1024),)
        t0 = time.perf_counter()
        add_one_kernel[grid](a, b, n, BLOCK=1024)
        torch.cuda.synchronize()
        triton_cold = (time.perf_counter() - t0) * 1e3
        triton_us = per_call_us(lambda: add_one_kernel[grid](a, b, n, BLOCK=1024))
    except Exception as e:  # Triton missing or failing is reported, not fatal
        print("triton:", type(e).__name__, e)

    print(f"import cutlass+torch: {import_ms:.1f} ms")
    print("| compile | trace ms | verify+lower ms | libNVVM ms | nvJitLink ms | library loads + other ms | total ms |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.2f} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f} |")
    if triton_cold is not None:
        print(f"| Triton cold compile+first launch | | | | | | {triton_cold:.1f} |")
    print("| host overhead per call (2 torch tensors, 1M fp32) | us |")
    print("|---|---|")
    print(f"| OpenCuTe compiled add_one | {ours:.2f} |")
    print(f"| OpenCuTe, same call without the launch | {ours_no_launch:.2f} |")
    print(f"| torch.add(out=) | {tadd:.2f} |")
    if triton_us is not None:
        print(f"| Triton add_one | {triton_us:.2f} |")


if __name__ == "__main__":
    main()
