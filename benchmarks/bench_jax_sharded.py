"""OpenCuTe kernels sharded by JAX over 1 and 2 GPUs (`jax.shard_map` around `cutlass_call`),
against the same ops in `jax.numpy` sharded the same way, in one run: time, bandwidth or
TFLOP/s, and scaling efficiency (time on 1 GPU / (devices x time on the mesh)).

  elementwise: c = a + b in float32, a vectorised CuTe kernel (each thread copies 4 contiguous
               floats with autovec_copy), sharded along the leading dimension;
  GEMM:        C = A @ B^T in float16 (float32 accumulation) with NVIDIA's Ampere tensor-core
               example kernel (TensorOpGemm of cute/ampere/kernel/dense_gemm/tensorop_gemm.py,
               loaded from --examples, never copied here), sharded along M; the jnp reference is
               an einsum in float16 with float32 accumulation (cuBLAS).

Strong scaling: the global problem is the same on 1 and 2 GPUs.

    python benchmarks/bench_jax_sharded.py --examples ../shared/nvidia-examples [--devices 1 2]

Run on nvidia-h200-x2 (keep NCCL's NVLink multicast off: NCCL_NVLS_ENABLE=0; no collective is
needed here, the outputs stay sharded).
"""
import argparse
import importlib.util
import os
import sys
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

import cutlass
import cutlass.cute as cute
import cutlass.jax as cjax

VEC = 4        # floats per thread
THREADS = 256  # threads per block


@cute.kernel
def vec_add_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    fa = cute.make_rmem_tensor(cute.size(a, mode=[0]), a.element_type)
    fb = cute.make_rmem_tensor(cute.size(b, mode=[0]), b.element_type)
    fc = cute.make_rmem_tensor(cute.size(c, mode=[0]), c.element_type)
    cute.autovec_copy(a[None, tidx, bidx], fa)
    cute.autovec_copy(b[None, tidx, bidx], fb)
    fc.store(fa.load() + fb.load())
    cute.autovec_copy(fc, c[None, tidx, bidx])


@cute.jit
def launch_vec_add(stream, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    vec_add_kernel(a, b, c).launch(grid=[a.shape[2], 1, 1], block=[a.shape[1], 1, 1], stream=stream)


# JAX arrays (blocks, THREADS, VEC) are seen by the kernel as (VEC, THREADS, blocks): each
# thread's VEC floats are contiguous, threads of a block are adjacent.
VEC_SPEC = cjax.TensorSpec(mode=(2, 1, 0), static=True)


def cutlass_vec_add(a, b):
    return cjax.cutlass_call(launch_vec_add, output_shape_dtype=a, input_spec=VEC_SPEC, output_spec=VEC_SPEC)(a, b)


def load_tensorop_gemm(examples):
    path = os.path.join(examples, "cute", "ampere", "kernel", "dense_gemm", "tensorop_gemm.py")
    if not os.path.isfile(path):
        return None
    spec = importlib.util.spec_from_file_location("tensorop_gemm", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["tensorop_gemm"] = module
    spec.loader.exec_module(module)
    return module


# A (L, M, K), B (L, N, K), C (L, M, N), row-major: the kernel takes (M, K, L), (N, K, L),
# (M, N, L), i.e. K-major A and B and N-major C.
GEMM_SPEC = cjax.TensorSpec(mode=(1, 2, 0), static=True)


def make_cutlass_gemm(module):
    gemm = module.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))

    def cutlass_gemm(a, b):
        out = jax.ShapeDtypeStruct((a.shape[0], a.shape[1], b.shape[1]), jnp.float16)
        return cjax.cutlass_call(lambda stream, a, b, c: gemm(a, b, c, stream), output_shape_dtype=out,
                                 input_spec=GEMM_SPEC, output_spec=GEMM_SPEC)(a, b)
    return cutlass_gemm


def jnp_gemm(a, b):
    return jnp.einsum("lmk,lnk->lmn", a, b, preferred_element_type=jnp.float32).astype(jnp.float16)


def sharded(fn, mesh, specs_in, spec_out):
    return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=specs_in, out_specs=spec_out))


def time_ms(fn, args, iters):
    fn(*args).block_until_ready()
    for _ in range(3):
        fn(*args).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(iters):
        out = fn(*args)
    out.block_until_ready()
    return (time.perf_counter() - t0) / iters * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--examples", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                      "nvidia-examples"))
    p.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    p.add_argument("--elems", type=int, default=1 << 28, help="elementwise: global float32 elements")
    p.add_argument("--gemm", type=int, nargs=3, default=[8192, 8192, 8192], metavar=("M", "N", "K"))
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args()
    devices = [n for n in args.devices if n <= jax.device_count()]
    print(f"JAX {jax.__version__}, {jax.device_count()} devices: {jax.devices()}")
    if len(devices) < len(args.devices):
        print(f"note: only {jax.device_count()} device(s); measuring {devices}")

    rows = []
    # ---- elementwise -------------------------------------------------------------------
    blocks = args.elems // (THREADS * VEC)
    blocks -= blocks % max(devices)
    shape = (blocks, THREADS, VEC)
    a = jax.random.normal(jax.random.key(0), shape, jnp.float32)
    b = jax.random.normal(jax.random.key(1), shape, jnp.float32)
    bytes_moved = 3 * a.size * 4
    times = {}
    for n in devices:
        mesh = jax.make_mesh((n,), ("x",), devices=jax.devices()[:n])
        spec = P("x", None, None)
        sh = NamedSharding(mesh, spec)
        an, bn = jax.device_put(a, sh), jax.device_put(b, sh)
        for name, op in (("cutlass_call", cutlass_vec_add), ("jax.numpy", lambda x, y: x + y)):
            f = sharded(op, mesh, (spec, spec), spec)
            if n == devices[0]:
                np.testing.assert_allclose(np.asarray(f(an, bn)[:4]), np.asarray((a + b)[:4]), rtol=1e-6)
            t = time_ms(f, (an, bn), args.iters)
            times[(name, n)] = t
            rows.append(("elementwise add f32", f"{a.size / 2**20:g} Mi elems", name, n, t,
                         f"{bytes_moved / t / 1e6:.1f} GB/s"))
    # ---- GEMM --------------------------------------------------------------------------
    module = load_tensorop_gemm(args.examples)
    if module is None:
        print(f"note: NVIDIA's tensorop_gemm.py not found under {args.examples}; GEMM rows skipped")
    else:
        m, n_, k = args.gemm
        A = jax.random.normal(jax.random.key(2), (1, m, k), jnp.float32).astype(jnp.float16)
        B = jax.random.normal(jax.random.key(3), (1, n_, k), jnp.float32).astype(jnp.float16)
        flops = 2.0 * m * n_ * k
        cutlass_gemm = make_cutlass_gemm(module)
        for n in devices:
            mesh = jax.make_mesh((n,), ("x",), devices=jax.devices()[:n])
            a_spec, b_spec, c_spec = P(None, "x", None), P(None, None, None), P(None, "x", None)
            An = jax.device_put(A, NamedSharding(mesh, a_spec))
            Bn = jax.device_put(B, NamedSharding(mesh, b_spec))
            for name, op in (("cutlass_call", cutlass_gemm), ("jax.numpy", jnp_gemm)):
                f = sharded(op, mesh, (a_spec, b_spec), c_spec)
                if n == devices[0]:
                    got = np.asarray(f(An, Bn)[0, :64, :64], np.float32)
                    want = np.asarray(jnp_gemm(A[:, :64], B[:, :64])[0], np.float32)
                    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-1)
                t = time_ms(f, (An, Bn), args.iters)
                times[(name + " gemm", n)] = t
                rows.append(("GEMM f16 (TensorOpGemm)", f"{m}x{n_}x{k}", name, n, t,
                             f"{flops / t / 1e9:.2f} TFLOP/s"))

    print(f"\n{'op':<26}{'size':<18}{'impl':<14}{'GPUs':>5}{'ms':>10}{'rate':>16}{'scaling eff.':>14}")
    for op, size, name, n, t, rate in rows:
        key = name + (" gemm" if op.startswith("GEMM") else "")
        base = times.get((key, devices[0]))
        eff = f"{base / (n / devices[0] * t) * 100:.0f}%" if base else ""
        print(f"{op:<26}{size:<18}{name:<14}{n:>5}{t:>10.3f}{rate:>16}{eff:>14}")


if __name__ == "__main__":
    main()
