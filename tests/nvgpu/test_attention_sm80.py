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
import toolchain

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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

def _load_fa2(monkeypatch):
    for base in EXAMPLE_DIRS:
        path = os.path.join(base, "cute", "ampere", "kernel", "attention", "flash_attention_v2.py")
        if base and os.path.isfile(path):
            break
    else:
        pytest.skip("NVIDIA's flash_attention_v2.py is not present")
    # It imports cuda.bindings.driver for its CUstream annotation; OpenCuTe's CUstream stands in,
    # for this test only (a stand-in left in sys.modules would be the one later tests import).
    try:
        import cuda.bindings.driver  # noqa: F401
    except ImportError:
        drv = types.ModuleType("cuda.bindings.driver")
        drv.CUstream = cutlass.cuda.CUstream
        pkg, bindings = types.ModuleType("cuda"), types.ModuleType("cuda.bindings")
        bindings.driver, pkg.bindings = drv, bindings
        for name, module in (("cuda", pkg), ("cuda.bindings", bindings), ("cuda.bindings.driver", drv)):
            monkeypatch.setitem(sys.modules, name, module)
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
def test_nvidia_flash_attention_v2_on_emulator(monkeypatch, causal, seqlen_q, seqlen_k, heads):
    fa2 = _load_fa2(monkeypatch)
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
def test_nvidia_flash_attention_v2_ptx_main_loop_stays_in_registers(monkeypatch, causal):
    fa2 = _load_fa2(monkeypatch)
    # The example's default configuration (in f16): head_dim 128, 128x64 tiles, 4 warps.
    q = np.zeros((1, 256, 2, 128), np.float16)
    args = [_as_example_tensor(q, device=True) for _ in range(4)]
    kernel = fa2.FlashAttentionForwardAmpere(128, 128, 64, 128, causal)
    compiled = cute.compile(kernel, *args, 0.5, cutlass.cuda.CUstream(0), options="--target gpu")
    ptx = toolchain.ptx_of(compiled)
    assert "ld.local" not in ptx and "st.local" not in ptx
    for want in ("cp.async.cg.shared.global", "cp.async.wait_group", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                 "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ex2.approx"):
        assert want in ptx, want


# ---- a small FlashAttention-2 kernel written here, in the same style ----------------------------

BM, BN, HD, WARPS = 64, 32, 32, 4  # query rows per CTA, keys per step, head dim, warps


def _tile_layout(rows):
    # 32 f16 per row (64 bytes): a 3-bit-base swizzle over 2 row bits keeps ldmatrix conflict-free
    atom = cute.make_composed_layout(cute.make_swizzle(2, 3, 3), 0, cute.make_layout((8, HD), stride=(HD, 1)))
    return cute.tile_to_shape(atom, (rows, HD), (0, 1))


def _rows_by_cols(acc):
    """The accumulator ((v_col, v_row), MMA_M, MMA_N) of m16n8 tiles seen as (rows, cols) of this
    thread: rows (v_row, MMA_M), columns (v_col, MMA_N)."""
    compact = cute.make_layout(acc.layout.shape)
    view = cute.make_layout(((compact.shape[0][1], compact.shape[1]), (compact.shape[0][0], compact.shape[2])),
                            stride=((compact.stride[0][1], compact.stride[1]),
                                    (compact.stride[0][0], compact.stride[2])))
    return cute.make_tensor(acc.iterator, cute.composition(acc.layout, view))


@cute.jit
def _quad_reduce(val, op):
    # the four lanes that share an accumulator row
    val = op(val, cute.arch.shuffle_sync_bfly(val, offset=2))
    return op(val, cute.arch.shuffle_sync_bfly(val, offset=1))


@cute.kernel
def _attention_kernel(mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
                      scale_log2: cutlass.Float32, q_layout: cute.ComposedLayout, kv_layout: cute.ComposedLayout,
                      causal: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    m_block, head, _ = cute.arch.block_idx()
    gQ = cute.local_tile(mQ[None, head, None], (BM, HD), (m_block, 0))
    gK = cute.local_tile(mK[None, head, None], (BN, HD), (None, 0))
    gV = cute.local_tile(mV[None, head, None], (BN, HD), (None, 0))
    smem = cutlass.utils.SmemAllocator()
    sQ = smem.allocate_tensor(cutlass.Float16, q_layout, byte_alignment=128)
    sK = smem.allocate_tensor(cutlass.Float16, kv_layout, byte_alignment=128)
    sV = smem.allocate_tensor(cutlass.Float16, kv_layout, byte_alignment=128)
    sVt = cute.composition(sV, cute.make_layout((HD, BN), stride=(BN, 1)))

    g2s = cute.make_tiled_copy_tv(
        cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float16, num_bits_per_copy=128),
        cute.make_layout((WARPS * 32 // 4, 4), stride=(4, 1)), cute.make_layout((1, 8)))
    g2s_thr = g2s.get_slice(tidx)
    cute.copy(g2s, g2s_thr.partition_S(gQ), g2s_thr.partition_D(sQ))
    cute.arch.cp_async_commit_group()

    mma = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)), (WARPS, 1, 1),
                              permutation_mnk=(WARPS * 16, 16, 16))
    thr_mma = mma.get_slice(tidx)
    rQ = thr_mma.make_fragment_A(thr_mma.partition_A(sQ))
    rK = thr_mma.make_fragment_B(thr_mma.partition_B(sK))
    rVt = thr_mma.make_fragment_B(thr_mma.partition_B(sVt))
    acc_O = cute.make_rmem_tensor(thr_mma.partition_shape_C((BM, HD)), cutlass.Float32)
    acc_O.fill(0.0)
    s2r_Q = cute.make_tiled_copy_A(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16), mma)
    s2r_K = cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16), mma)
    s2r_V = cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(True, 4), cutlass.Float16), mma)
    tQ_s, tQ_r = s2r_Q.get_slice(tidx).partition_S(sQ), s2r_Q.get_slice(tidx).retile(rQ)
    tK_s, tK_r = s2r_K.get_slice(tidx).partition_S(sK), s2r_K.get_slice(tidx).retile(rK)
    tV_s, tV_r = s2r_V.get_slice(tidx).partition_S(sVt), s2r_V.get_slice(tidx).retile(rVt)

    rows = cute.size(_rows_by_cols(acc_O).shape[0])
    row_max = cute.make_rmem_tensor(rows, cutlass.Float32)
    row_sum = cute.make_rmem_tensor(rows, cutlass.Float32)
    row_max.fill(-cutlass.Float32.inf)
    row_sum.fill(0.0)
    coords = cute.make_identity_tensor((mQ.shape[0], mK.shape[0]))

    n_end = mK.shape[0] // BN
    if cutlass.const_expr(causal):
        n_end = min(cute.ceil_div((m_block + 1) * BM, BN), n_end)
    for nb in range(n_end):
        cute.arch.sync_threads()  # every warp is done with the previous K and V
        cute.copy(g2s, g2s_thr.partition_S(gK[None, None, nb]), g2s_thr.partition_D(sK))
        cute.copy(g2s, g2s_thr.partition_S(gV[None, None, nb]), g2s_thr.partition_D(sV))
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()

        acc_S = cute.make_rmem_tensor(thr_mma.partition_shape_C((BM, BN)), cutlass.Float32)
        acc_S.fill(0.0)
        for k in cutlass.range_constexpr(cute.size(tQ_s.shape[2])):
            cute.copy(s2r_Q, tQ_s[None, None, k], tQ_r[None, None, k])
            cute.copy(s2r_K, tK_s[None, None, k], tK_r[None, None, k])
            cute.gemm(mma, acc_S, rQ[None, None, k], rK[None, None, k], acc_S)

        # online softmax, one accumulator row at a time
        s_rc, o_rc = _rows_by_cols(acc_S), _rows_by_cols(acc_O)
        c_rc = _rows_by_cols(thr_mma.partition_C(cute.local_tile(coords, (BM, BN), (m_block, nb))))
        for r in cutlass.range_constexpr(rows):
            if cutlass.const_expr(causal):
                for c in cutlass.range_constexpr(cute.size(s_rc.shape[1])):
                    if c_rc[r, c][1] > c_rc[r, c][0]:
                        s_rc[r, c] = -cutlass.Float32.inf
            row = s_rc[r, None].load()
            new_max = _quad_reduce(row.reduce(cute.ReductionOp.MAX, -cutlass.Float32.inf, 0), cute.arch.fmax)
            new_max = cute.arch.fmax(new_max, row_max[r])
            p = cute.math.exp2(row * scale_log2 - new_max * scale_log2, fastmath=True)
            rescale = cute.math.exp2((row_max[r] - new_max) * scale_log2, fastmath=True)
            row_sum[r] = row_sum[r] * rescale + p.reduce(cute.ReductionOp.ADD, cutlass.Float32.zero, 0)
            o_rc[r, None] = o_rc[r, None].load() * rescale
            row_max[r] = new_max
            s_rc[r, None] = p

        # P (f16) as the A operand of the second product: pairs of n8 tiles form one k16 tile
        rP = cute.make_fragment_like(acc_S, cutlass.Float16)
        rP.store(acc_S.load().to(cutlass.Float16))
        split = cute.logical_divide(rP.layout, (None, None, 2))
        tP = cute.make_tensor(rP.iterator, cute.make_layout(
            ((split.shape[0], split.shape[2][0]), split.shape[1], split.shape[2][1]),
            stride=((split.stride[0], split.stride[2][0]), split.stride[1], split.stride[2][1])))
        for k in cutlass.range_constexpr(cute.size(tP.shape[2])):
            cute.copy(s2r_V, tV_s[None, None, k], tV_r[None, None, k])
            cute.gemm(mma, acc_O, tP[None, None, k], rVt[None, None, k], acc_O)

    o_rc = _rows_by_cols(acc_O)
    for r in cutlass.range_constexpr(rows):
        total = _quad_reduce(row_sum[r], lambda a, b: a + b)
        o_rc[r, None] = o_rc[r, None].load() * cute.arch.rcp_approx(total)
    rO = cute.make_fragment_like(acc_O, cutlass.Float16)
    rO.store(acc_O.load().to(cutlass.Float16))
    cute.basic_copy(rO, thr_mma.partition_C(cute.local_tile(mO[None, head, None], (BM, HD), (m_block, 0))))


@cute.jit
def _attention(mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor, scale: cutlass.Float32,
               causal: cutlass.Constexpr):
    grid = (mQ.shape[0] // BM, mQ.shape[1], 1)
    _attention_kernel(mQ, mK, mV, mO, scale * 1.4426950408889634, _tile_layout(BM), _tile_layout(BN),
                      causal).launch(grid=grid, block=(WARPS * 32, 1, 1))


@pytest.mark.parametrize("causal", [False, True])
def test_small_flash_attention_kernel_on_emulator(causal):
    seqlen, heads, scale = 128, 2, 0.3
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((seqlen, heads, HD)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    args = [from_dlpack(x, assumed_align=16) for x in (q, k, v, o)]
    cute.compile(_attention, *args, scale, causal, options="--target cpu")(*args, scale)
    ref = numpy_attention(q[None], k[None], v[None], scale, causal)[0]
    np.testing.assert_allclose(o.astype(np.float64), ref, atol=5e-3, rtol=1e-2)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_small_flash_attention_kernel_ptx(arch):
    host = np.zeros((128, 2, HD), np.float16)
    args = [from_dlpack(_DeviceArray(host), assumed_align=16) for _ in range(4)]
    compiled = cute.compile(_attention, *args, 0.3, True, options=f"--target gpu --gpu-arch {arch}")
    ptx = toolchain.ptx_of(compiled)
    assert "ld.local" not in ptx and "st.local" not in ptx  # fragments and softmax state stay in registers
    for want in ("cp.async.ca.shared.global", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                 "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ex2.approx", "shfl.sync.bfly"):
        assert want in ptx, want
