"""FlashAttention-2 building blocks on the SM80 path: cp.async into swizzled shared memory,
ldmatrix (plain and transposed) through `retile` into MMA fragments whose value mode is smaller
than one ldmatrix.x4, and NVIDIA's flash_attention_v2 example itself (loaded from
../shared/nvidia-examples when present) on the CPU emulator against numpy, plus its PTX."""
import importlib.util
import os
import sys
import types

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp
from cutlass.cute.runtime import from_dlpack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE_DIRS = [os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(ROOT, "..", "shared", "nvidia-examples"),
                os.path.join(ROOT, "..", "..", "shared", "nvidia-examples")]

ROWS, COLS, THREADS = 64, 64, 128


def _swizzled_tile_layout():
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    return cute.tile_to_shape(atom, (ROWS, COLS), (0, 1))


@cute.kernel
def _fragments_kernel(g: cute.Tensor, out_a: cute.Tensor, out_b: cute.Tensor, out_bt: cute.Tensor,
                      ref_a: cute.Tensor, ref_b: cute.Tensor, ref_bt: cute.Tensor, s_layout: cute.ComposedLayout):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    s = smem.allocate_tensor(cutlass.Float16, s_layout, byte_alignment=1024)
    # global -> swizzled shared with 16-byte cp.async, 8 threads per 64-element row
    g2s = cute.make_tiled_copy_tv(
        cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), cutlass.Float16,
                            num_bits_per_copy=128),
        cute.make_layout((THREADS // 8, 8), stride=(8, 1)), cute.make_layout((1, 8)))
    thr_g2s = g2s.get_slice(tidx)
    cute.copy(g2s, thr_g2s.partition_S(g), thr_g2s.partition_D(s))
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(0)
    cute.arch.sync_threads()

    mma = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)), (4, 1, 1),
                              permutation_mnk=(64, 16, 16))
    thr_mma = mma.get_slice(tidx)
    st = cute.composition(s, cute.make_layout((COLS, ROWS), stride=(ROWS, 1)))  # the tile transposed
    gt = cute.composition(g, cute.make_layout((COLS, ROWS), stride=(ROWS, 1)))
    r_a = thr_mma.make_fragment_A(thr_mma.partition_A(s))
    r_b = thr_mma.make_fragment_B(thr_mma.partition_B(s))
    r_bt = thr_mma.make_fragment_B(thr_mma.partition_B(st))
    pairs = ((cute.make_tiled_copy_A(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16), mma),
              s, r_a),
             (cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16), mma),
              s, r_b),
             (cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(True, 4), cutlass.Float16), mma),
              st, r_bt))
    for tiled, src, frag in pairs:
        thr = tiled.get_slice(tidx)
        src_view, frag_view = thr.partition_S(src), thr.retile(frag)
        for k in cutlass.range_constexpr(cute.size(src_view.shape[2])):
            cute.copy(tiled, src_view[None, None, k], frag_view[None, None, k])
    # The same elements read straight from global memory through the MMA's partitions.
    for frag, mine, ref, whole in ((r_a, out_a, ref_a, thr_mma.partition_A(g)),
                                   (r_b, out_b, ref_b, thr_mma.partition_B(g)),
                                   (r_bt, out_bt, ref_bt, thr_mma.partition_B(gt))):
        n = cute.size(frag)
        for i in cutlass.range_constexpr(n):
            mine[tidx * n + i] = frag[i]
            ref[tidx * n + i] = whole[i]


@cute.jit
def _fragments(g: cute.Tensor, out_a: cute.Tensor, out_b: cute.Tensor, out_bt: cute.Tensor,
               ref_a: cute.Tensor, ref_b: cute.Tensor, ref_bt: cute.Tensor):
    _fragments_kernel(g, out_a, out_b, out_bt, ref_a, ref_b, ref_bt, _swizzled_tile_layout()).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1))


def test_ldmatrix_retile_fills_mma_fragments_from_swizzled_smem():
    g = (np.arange(ROWS * COLS) % 2039).astype(np.float16).reshape(ROWS, COLS)  # distinct, exact in f16
    # A: the 64 rows split over 4 warps; B: every warp holds all 64 columns
    a_n, b_n = ROWS * COLS // THREADS, ROWS * COLS // 32
    outs = [np.full(THREADS * n, -1, np.float16) for n in (a_n, b_n, b_n)]
    refs = [np.full(THREADS * n, -2, np.float16) for n in (a_n, b_n, b_n)]
    args = [from_dlpack(g, assumed_align=16)] + [from_dlpack(x) for x in outs + refs]
    cute.compile(_fragments, *args, options="--target cpu")(*args)
    for name, mine, ref in zip(("A", "B", "B of the transposed tile"), outs, refs):
        assert (ref >= 0).all(), name  # every reference slot written
        np.testing.assert_array_equal(mine, ref, err_msg=name)


# ---- NVIDIA's flash_attention_v2.py ----------------------------------------------------------------

def _load_fa2():
    for base in EXAMPLE_DIRS:
        path = os.path.join(base, "cute", "ampere", "kernel", "attention", "flash_attention_v2.py")
        if base and os.path.isfile(path):
            break
    else:
        pytest.skip("NVIDIA's flash_attention_v2.py is not present")
    # It imports cuda.bindings.driver for its CUstream annotation; OpenCuTe's CUstream stands in.
    if "cuda.bindings.driver" not in sys.modules:
        try:
            import cuda.bindings.driver  # noqa: F401
        except ImportError:
            drv = types.ModuleType("cuda.bindings.driver")
            drv.CUstream = cutlass.cuda.CUstream
            pkg, bindings = types.ModuleType("cuda"), types.ModuleType("cuda.bindings")
            bindings.driver, pkg.bindings = drv, bindings
            sys.modules.update({"cuda": pkg, "cuda.bindings": bindings, "cuda.bindings.driver": drv})
    spec = importlib.util.spec_from_file_location("nvidia_flash_attention_v2", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _DeviceArray:
    """Metadata of a CUDA array (nothing reads it: the kernel is only compiled)."""

    def __init__(self, host):
        self._host = host
        self.__cuda_array_interface__ = {"data": (host.ctypes.data, False), "shape": host.shape,
                                         "typestr": host.dtype.str, "strides": None, "version": 3}


def _as_example_tensor(a, device=False):
    # as the example's create_tensor does
    return (from_dlpack(_DeviceArray(a) if device else a, assumed_align=16).mark_layout_dynamic(leading_dim=3)
            .mark_compact_shape_dynamic(mode=3, stride_order=(0, 1, 2, 3), divisibility=8))


def numpy_attention(q, k, v, scale, causal):
    """(batch, seqlen, heads, dim) in and out; a causal mask aligned at the top left, as torch's
    scaled_dot_product_attention(is_causal=True) which the example checks against."""
    qf, kf, vf = (x.astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    s = qf @ kf.transpose(0, 1, 3, 2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ vf).transpose(0, 2, 1, 3)


@pytest.mark.parametrize("causal,seqlen_q,seqlen_k,heads", [(False, 128, 128, 1), (True, 128, 128, 1),
                                                             (False, 96, 200, 2), (True, 200, 136, 1)])
def test_nvidia_flash_attention_v2_on_emulator(causal, seqlen_q, seqlen_k, heads):
    fa2 = _load_fa2()
    head_dim, m_block, n_block, threads = 64, 64, 64, 128
    assert fa2.FlashAttentionForwardAmpere.can_implement(cutlass.Float16, head_dim, m_block, n_block, threads,
                                                         causal)
    rng = np.random.default_rng(seqlen_q + seqlen_k)
    # the example's data: integers in [-2, 2)
    q, k, v = (rng.integers(-2, 2, size=(1, n, heads, head_dim)).astype(np.float16)
               for n in (seqlen_q, seqlen_k, seqlen_k))
    o = np.zeros_like(q)
    args = [_as_example_tensor(x) for x in (q, k, v, o)]
    kernel = fa2.FlashAttentionForwardAmpere(head_dim, m_block, n_block, threads, causal)
    stream = cutlass.cuda.CUstream(0)
    compiled = cute.compile(kernel, *args, 0.5, stream, options="--target cpu")
    compiled(*args, 0.5, stream)
    np.testing.assert_allclose(o.astype(np.float64), numpy_attention(q, k, v, 0.5, causal), atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize("causal", [False, True])
def test_nvidia_flash_attention_v2_ptx_main_loop_stays_in_registers(causal):
    fa2 = _load_fa2()
    # The example's default configuration (in f16): head_dim 128, 128x64 tiles, 4 warps.
    q = np.zeros((1, 256, 2, 128), np.float16)
    args = [_as_example_tensor(q, device=True) for _ in range(4)]
    kernel = fa2.FlashAttentionForwardAmpere(128, 128, 64, 128, causal)
    compiled = cute.compile(kernel, *args, 0.5, cutlass.cuda.CUstream(0), options="--target gpu")
    ptx = compiled.__ptx__
    if ptx is None:
        pytest.skip("libNVVM not available")
    assert "ld.local" not in ptx and "st.local" not in ptx
    for want in ("cp.async.cg.shared.global", "cp.async.wait_group", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                 "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ex2.approx"):
        assert want in ptx, want
