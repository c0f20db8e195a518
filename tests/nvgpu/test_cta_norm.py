"""A row normalisation kernel in the style of NVIDIA's Hopper cta_norm example: one CTA per row,
a vectorised tiled copy into registers, a warp butterfly reduction and a reduction across warps
through shared memory, with the `cute.Float` annotation (the abstract float class) on a scalar
parameter and a conditional expression that must only read shared memory on the arm it takes.
Runs on the CPU emulator against numpy; NVIDIA's own file is loaded too when it is present."""
import importlib.util
import math
import os
import sys
import types

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE_DIRS = [os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(ROOT, "..", "shared", "nvidia-examples"),
                os.path.join(ROOT, "..", "..", "shared", "nvidia-examples")]

VEC = 8  # values per thread per copy: 128 bits of f16


class RowNorm:
    def __init__(self, n, threads, layer):
        self.n, self.threads, self.layer = n, threads, layer
        self.warps = threads // 32

    @cute.jit
    def __call__(self, out, x, w, b, eps: cutlass.Float32 = 1e-5):
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), x.element_type, num_bits_per_copy=128)
        copy = cute.make_tiled_copy_tv(atom, cute.make_layout(self.threads), cute.make_layout(VEC))
        rows, _ = x.shape
        self.kernel(out, x, w, b, copy, eps).launch(grid=[rows, 1, 1], block=[self.threads, 1, 1])

    @cute.kernel
    def kernel(self, out: cute.Tensor, x: cute.Tensor, w: cute.Tensor, b: cute.Tensor, copy: cute.TiledCopy,
               eps: cute.Float):
        tidx, _, _ = cute.arch.thread_idx()
        row, _, _ = cute.arch.block_idx()
        thr = copy.get_slice(tidx)
        gx = cute.local_tile(x, tiler=(1, self.n), coord=(row, 0))[0, None]
        go = cute.local_tile(out, tiler=(1, self.n), coord=(row, 0))[0, None]
        tx, to, tw, tb = thr.partition_S(gx), thr.partition_S(go), thr.partition_S(w), thr.partition_S(b)
        rx, rw, rb = cute.make_fragment_like(tx), cute.make_fragment_like(tw), cute.make_fragment_like(tb)
        rx.fill(0)
        rw.fill(0)
        rb.fill(0)
        ok = cute.make_rmem_tensor(cute.size(tx, mode=[1]), cutlass.Boolean)
        for i in range(cute.size(ok)):
            ok[i] = (i * self.threads + tidx) * VEC < self.n
        for i in range(cute.size(rx, mode=[1])):
            if ok[i]:
                cute.autovec_copy(tx[None, i], rx[None, i])
                cute.autovec_copy(tw[None, i], rw[None, i])
                cute.autovec_copy(tb[None, i], rb[None, i])
        partial = cute.make_rmem_tensor(2, cutlass.Float32)  # partial sums of x and x*x
        partial.fill(0.0)
        for k in range(cute.size(rx)):
            v = rx[k].to(cutlass.Float32)
            partial[0] = partial[0] + v
            partial[1] = partial[1] + v * v
        smem = cutlass.utils.SmemAllocator()
        scratch = smem.allocate_tensor(cutlass.Float32, self.warps + 1)
        total = self.block_sum(partial[0], scratch, tidx)
        total_sq = self.block_sum(partial[1], scratch, tidx)
        mean = total / self.n if cutlass.const_expr(self.layer) else cutlass.Float32(0.0)
        var = total_sq / self.n - mean * mean
        scale = cute.rsqrt(var + eps)
        y = cute.make_fragment_like(rx)
        if cutlass.const_expr(self.layer):
            y.store(((rx.load().to(cutlass.Float32) - mean) * scale * rw.load().to(cutlass.Float32)
                     + rb.load().to(cutlass.Float32)).to(y.element_type))
        else:
            y.store((rx.load().to(cutlass.Float32) * scale * rw.load().to(cutlass.Float32)).to(y.element_type))
        for i in range(cute.size(y, mode=[1])):
            if ok[i]:
                cute.autovec_copy(y[None, i], to[None, i])

    @cute.jit
    def block_sum(self, val, scratch, tidx):
        for i in range(5):
            val = val + cute.arch.shuffle_sync_bfly(val, offset=1 << i)
        warp, lane = tidx >> 5, tidx & 31
        if lane == 0:
            scratch[warp] = val
        cute.arch.sync_threads()
        if warp == 0:
            # Only lanes below the warp count may read scratch: the other arm must not run.
            val = scratch[lane] if lane < self.warps else cutlass.Float32(0)
            for i in range(5):
                val = val + cute.arch.shuffle_sync_bfly(val, offset=1 << i)
            scratch[self.warps] = val
        cute.arch.sync_threads()
        val = scratch[self.warps]
        cute.arch.sync_threads()  # the next call reuses scratch
        return val


def numpy_norm(x, w, b, eps, layer):
    xf = x.astype(np.float64)
    if layer:
        mu = xf.mean(-1, keepdims=True)
        return (xf - mu) / np.sqrt(xf.var(-1, keepdims=True) + eps) * w + b
    return xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + eps) * w


@pytest.mark.parametrize("layer", [True, False])
def test_row_norm_on_emulator(layer):
    rows, n, threads = 3, 1000, 64  # 1000 is not a multiple of 64*8: the tail is predicated off
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, n)).astype(np.float16)
    w, b = rng.standard_normal(n).astype(np.float16), rng.standard_normal(n).astype(np.float16)
    out = np.zeros_like(x)
    f = lambda a: from_dlpack(a, assumed_align=16)  # noqa: E731
    norm = RowNorm(n, threads, layer)
    compiled = cute.compile(norm, f(out), f(x), f(w), f(b), options="--target cpu")
    compiled(f(out), f(x), f(w), f(b), 1e-5)
    ref = numpy_norm(x, w.astype(np.float64), b.astype(np.float64), 1e-5, layer)
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=2e-2, rtol=1e-2)


def test_abstract_float_annotation_keeps_the_value_type():
    seen = []

    @cute.kernel
    def k(dst: cute.Tensor, a: cute.Float, i: cutlass.Integer):
        seen.append((type(a).__name__, type(i).__name__))
        dst[0] = a.to(cutlass.Float32) + i.to(cutlass.Float32)

    @cute.jit
    def host(dst: cute.Tensor, a: cute.Float, h: cutlass.Float16, i: cutlass.Integer):
        seen.append((type(a).__name__, type(h).__name__, type(i).__name__))
        k(dst, h, i).launch(grid=[1, 1, 1], block=[1, 1, 1])

    dst = np.zeros(1, np.float32)
    cute.compile(host, from_dlpack(dst), 2.5, cutlass.Float16(1.5), 3, options="--target cpu")(
        from_dlpack(dst), 2.5, cutlass.Float16(1.5), 3)
    # A Python float for `cute.Float` is a Float32, an int for `cutlass.Integer` an Int32; a
    # Float16 passed on to a `cute.Float` parameter stays a Float16.
    assert seen == [("Float32", "Float16", "Int32"), ("Float16", "Int32")]
    assert dst[0] == 4.5


def test_conditional_expression_runs_only_the_chosen_arm():
    @cute.kernel
    def k(dst: cute.Tensor, src: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        # src has 4 elements; threads 4..7 must not read it
        dst[tidx] = src[tidx] * 2.0 if tidx < 4 else cutlass.Float32(-1.0)

    @cute.jit
    def host(dst: cute.Tensor, src: cute.Tensor):
        k(dst, src).launch(grid=[1, 1, 1], block=[8, 1, 1])

    src, dst = np.arange(4, dtype=np.float32) + 1, np.zeros(8, np.float32)
    cute.compile(host, from_dlpack(dst), from_dlpack(src), options="--target cpu")(from_dlpack(dst), from_dlpack(src))
    np.testing.assert_array_equal(dst, [2, 4, 6, 8, -1, -1, -1, -1])


def test_conditional_expression_arms_of_different_types_raise():
    @cute.kernel
    def k(dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        dst[0] = cutlass.Float32(1.0) if tidx < 4 else cutlass.Int32(2)  # @mismatch

    @cute.jit
    def host(dst: cute.Tensor):
        k(dst).launch(grid=[1, 1, 1], block=[8, 1, 1])

    dst = np.zeros(1, np.float32)
    with pytest.raises(cutlass.DSLUserCodeError, match="same type") as info:
        cute.compile(host, from_dlpack(dst), options="--target cpu")
    assert "@mismatch" in str(info.value)


def load_example(relative):
    for base in EXAMPLE_DIRS:
        path = os.path.join(base, relative)
        if base and os.path.isfile(path):
            # The example imports torch at module level and uses it only on the GPU path.
            saved = sys.modules.get("torch")
            sys.modules["torch"] = types.ModuleType("torch")
            try:
                spec = importlib.util.spec_from_file_location("example_" + os.path.basename(path)[:-3], path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            finally:
                if saved is None:
                    del sys.modules["torch"]
                else:
                    sys.modules["torch"] = saved
            return module
    pytest.skip(f"NVIDIA's {relative} is not present")


def test_nvidia_cta_norm_example_on_emulator():
    m = load_example("cute/hopper/kernel/cta_norm/cta_norm.py")
    rows, n = 2, 1024
    rng = np.random.default_rng(2)
    x = rng.standard_normal((rows, n)).astype(np.float16)
    w, b = rng.standard_normal(n).astype(np.float16), rng.standard_normal(n).astype(np.float16)
    out = np.zeros_like(x)
    f = lambda a: from_dlpack(a, assumed_align=16)  # noqa: E731
    compiled = cute.compile(m.CtaNorm(n, "layer"), f(out), f(x), f(w), f(b),
                            options="--generate-line-info --target cpu")
    compiled(f(out), f(x), f(w), f(b), 1e-6)
    ref = numpy_norm(x, w.astype(np.float64), b.astype(np.float64), 1e-6, True)
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=2e-2, rtol=1e-2)
