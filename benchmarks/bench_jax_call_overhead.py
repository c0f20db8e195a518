"""Per-call overhead of `cutlass.jax.cutlass_call` inside `jax.jit`, against the same op in
`jax.numpy`, at a size where overhead dominates (an elementwise add of a few thousand floats).

Three measurements per op, side by side in one run:
  dispatch: a jitted function of one op, called in a loop and waited for at the end (JAX's
            per-call dispatch plus one custom call or one XLA kernel);
  sync:     the same, waiting after every call (adds the round trip to the device);
  in-graph: one jitted function chaining 32 such ops (the cost of a custom call inside an XLA
            computation, where JAX's dispatch is paid once; jnp's adds do not fuse across the
            chain because each reads the previous result and an extra input).

    python benchmarks/bench_jax_call_overhead.py [--n 4096] [--iters 2000]

On a machine without a GPU JAX runs on the CPU and the kernels on OpenCuTe's CPU emulator, so
only the GPU figures mean anything.
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import cutlass
import cutlass.cute as cute
import cutlass.jax as cjax

CHAIN = 32


@cute.kernel
def add_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < a.shape[0]:
        c[i] = a[i] + b[i]


@cute.jit
def launch_add(stream, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    n = a.shape[0]
    add_kernel(a, b, c).launch(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), stream=stream)


def cutlass_add(a, b):
    return cjax.cutlass_call(launch_add, output_shape_dtype=a)(a, b)


def jnp_add(a, b):
    return a + b


def chain(op):
    def f(a, bs):
        for k in range(CHAIN):
            a = op(a, bs[k])
        return a
    return f


def per_call_us(fn, args, iters, sync):
    out = fn(*args)
    out.block_until_ready()
    for _ in range(20):
        fn(*args).block_until_ready()
    t0 = time.perf_counter()
    if sync:
        for _ in range(iters):
            fn(*args).block_until_ready()
    else:
        for _ in range(iters):
            out = fn(*args)
        out.block_until_ready()
    return (time.perf_counter() - t0) / iters * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--iters", type=int, default=2000)
    args = p.parse_args()
    key = jax.random.key(0)
    a = jax.random.normal(key, (args.n,), jnp.float32)
    b = jax.random.normal(jax.random.key(1), (args.n,), jnp.float32)
    bs = [jax.random.normal(jax.random.key(2 + k), (args.n,), jnp.float32) for k in range(CHAIN)]

    one = {name: jax.jit(op) for name, op in (("cutlass_call", cutlass_add), ("jax.numpy", jnp_add))}
    chained = {name: jax.jit(chain(op)) for name, op in (("cutlass_call", cutlass_add), ("jax.numpy", jnp_add))}
    # Same answers first.
    np.testing.assert_allclose(np.asarray(one["cutlass_call"](a, b)), np.asarray(a + b), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(chained["cutlass_call"](a, bs)), np.asarray(chained["jax.numpy"](a, bs)),
                               rtol=1e-5, atol=1e-5)

    print(f"device: {jax.devices()[0]}  (backend {jax.default_backend()}), n = {args.n} float32, "
          f"iters = {args.iters}")
    print(f"{'op':<14}{'dispatch us/call':>18}{'sync us/call':>15}{'in-graph us/op':>16}")
    rows = {}
    for name in ("cutlass_call", "jax.numpy"):
        d = per_call_us(one[name], (a, b), args.iters, sync=False)
        s = per_call_us(one[name], (a, b), args.iters, sync=True)
        g = per_call_us(chained[name], (a, bs), max(1, args.iters // CHAIN), sync=False) / CHAIN
        rows[name] = (d, s, g)
        print(f"{name:<14}{d:>18.2f}{s:>15.2f}{g:>16.2f}")
    c, j = rows["cutlass_call"], rows["jax.numpy"]
    print(f"{'difference':<14}{c[0] - j[0]:>18.2f}{c[1] - j[1]:>15.2f}{c[2] - j[2]:>16.2f}")


if __name__ == "__main__":
    main()
