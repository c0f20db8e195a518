"""The CPU SIMT emulator's speed: elementwise add of two 1024x1024 float32 arrays (1M threads,
8192 blocks of 128), on one host thread (OPENCUTE_EMULATOR_THREADS=1) and on all cores. Target:
under 2 s on one core. The result is checked against numpy.

    python benchmarks/bench_emulator.py
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

CHILD = r'''
import sys, time
import numpy as np
import cutlass
import cutlass.cute as cute


@cute.kernel
def add_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    bx, _, _ = cute.arch.block_idx()
    tx, _, _ = cute.arch.thread_idx()
    i = bx * 128 + tx
    if i < a.shape[0]:
        c[i] = a[i] + b[i]


@cute.jit
def add(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    n = a.shape[0]
    add_kernel(a, b, c).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


n = 1024 * 1024
rng = np.random.default_rng(0)
a = rng.standard_normal(n).astype(np.float32)
b = rng.standard_normal(n).astype(np.float32)
c = np.zeros_like(a)
compiled = cute.compile(add, a, b, c, options="--target cpu")
compiled(a, b, c)  # warm-up (builds the emulator program)
best = float("inf")
for _ in range(3):
    c[:] = 0
    t0 = time.perf_counter()
    compiled(a, b, c)
    best = min(best, time.perf_counter() - t0)
np.testing.assert_array_equal(c, a + b)
print(f"{best:.3f}")
'''


def run(threads):
    import cutlass  # children import the same package (installed, or the source tree on PYTHONPATH)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__))))
    if threads:
        env["OPENCUTE_EMULATOR_THREADS"] = str(threads)
    else:
        env.pop("OPENCUTE_EMULATOR_THREADS", None)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:  # @jit needs a source file
        f.write(CHILD)
    try:
        p = subprocess.run([sys.executable, f.name], capture_output=True, text=True, env=env, cwd=ROOT)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        sys.exit(p.stderr)
    return float(p.stdout.strip().splitlines()[-1])


def main():
    one = run(1)
    print(f"emulated add of 1024x1024 fp32, 1 host thread: {one:.3f} s (target < 2 s)")
    all_cores = run(0)
    print(f"emulated add of 1024x1024 fp32, {os.cpu_count()} host threads: {all_cores:.3f} s")


if __name__ == "__main__":
    main()
