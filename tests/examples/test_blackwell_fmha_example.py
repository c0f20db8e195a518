"""NVIDIA's Blackwell FMHA examples (cute/blackwell/kernel/attention/fmha/fmha.py and fmha_bwd.py with
helpers/fmha_helpers.py, BSD-3), loaded unchanged at run time when the examples are present. Their
kernel classes are driven as the scripts' run() drives them (tensors stored (b, s, h_k, h_r, d), the
mask chosen the same way), with numpy arrays on the CPU emulator for sm_100a. The forward kernel (16
warps in five roles: TMA loads, tcgen05 MMAs, two softmax warpgroups, correction, epilogue) is
checked against a float64 numpy softmax(Q K^T / sqrt(d)) V; the backward kernels (sum(O dO), the
dK/dV/dQ kernel with its TMA reduce-adds of dQ, the dQ conversion) against numpy's gradients. Both
also link to sm_100a cubins."""
import math
import os
import sys
import types

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

import nvidia_examples
from test_ampere_gemm_examples import _cuda_bindings_stand_in, _default_stream

FMHA = "cute/blackwell/kernel/attention/fmha/fmha.py"
OPTIONS = "--target cpu --gpu-arch sm_100a"


def load_fmha(monkeypatch):
    """The example module (its `from helpers import fmha_helpers` resolves under the examples'
    root; torch, imported at module level for run(), may be absent)."""
    if nvidia_examples.ROOT is None or not os.path.isfile(nvidia_examples.path(FMHA)):
        pytest.skip("NVIDIA's examples are not present (set OPENCUTE_NVIDIA_EXAMPLES)")
    _cuda_bindings_stand_in(monkeypatch)
    try:
        import torch  # noqa: F401
    except ImportError:
        stand_in = types.ModuleType("torch")
        stand_in.Tensor = type("Tensor", (), {})  # fmha_bwd.py's reference annotates with it
        monkeypatch.setitem(sys.modules, "torch", stand_in)
    monkeypatch.syspath_prepend(nvidia_examples.ROOT)
    # The class reads the architecture when it is made (BaseDSL.get_arch_enum()), as the bwx: row
    # sets it.
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    import importlib.util
    spec = importlib.util.spec_from_file_location("bw_fmha_example", nvidia_examples.path(FMHA))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _aligned(shape, dtype, align=128):
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _storage(shape, rng=None):
    """float16 storage (b, s, h_k, h_r, d), small integers (exact in float16) or zeros, and its
    cute tensor with a dynamic layout (run()'s cute_tensor_like)."""
    x = _aligned(shape, np.float16)
    x[...] = rng.integers(-2, 3, size=shape) if rng is not None else 0
    return x, from_dlpack(x, assumed_align=32).mark_layout_dynamic(leading_dim=4)


def _attention(q, k, v, causal):
    """softmax(Q K^T / sqrt(d)) V in float64 over (b, s, h_k, h_r, d) storages, K/V heads shared by
    the h_r query heads of their group; the mask is top-left aligned (query i sees keys <= i)."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = np.einsum("bqgrd,bkgd->bgrqk", q, k[:, :, :, 0]) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.arange(k.shape[1])[None, :] > np.arange(q.shape[1])[:, None], -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bgrqk,bkgd->bqgrd", p, v[:, :, :, 0])


def fmha_case(fm, q_shape, s_k, h_k, causal, persistent, rng=None):
    """(kernel, arguments, q, k, v, o storages) as run() sets them up for fp16 in and out."""
    b, s_q, h_q, d = q_shape
    h_r = h_q // h_k
    (q, tq), (k, tk), (v, tv) = (_storage(shape, rng) for shape in
                                 ((b, s_q, h_k, h_r, d), (b, s_k, h_k, 1, d), (b, s_k, h_k, 1, d)))
    o, to = _storage((b, s_q, h_k, h_r, d))
    mask, window_right = fm.fmha_utils.MaskEnum.WINDOW_MASK, None
    if causal:
        window_right = cutlass.Int32(0)
    elif s_k % 128:
        mask = fm.fmha_utils.MaskEnum.RESIDUAL_MASK
    kernel = fm.BlackwellFusedMultiHeadAttentionForward(cutlass.Float32, cutlass.Float32, (128, 128), d, persistent,
                                                         mask, False, False, use_tma_store=True)
    assert kernel.can_implement(q_shape, (b, s_k, h_k, d), cutlass.Float16, cutlass.Float16, cutlass.Float16,
                                cutlass.Float32, cutlass.Float32)
    scale = 1.0 / math.sqrt(d)
    args = [tq, tk, tv, to, (b, s_q, s_q, s_k, h_q, h_k, d, d), None, None, None, None, scale * math.log2(math.e),
            scale, 1.0, None, None, window_right, None, None, _default_stream(), False]
    return kernel, args, (q, k, v, o)


# (q shape (b, s_q, h, d), s_k, h_k, causal, persistent): the script's default sequence length with
# fewer heads; grouped-query attention over two batches whose s_k needs the residual mask (and a
# partial last Q tile); a causal persistent run (CTAs loop over the tiles of the emulated B200).
CASES = [((1, 256, 2, 128), 256, 2, False, False), ((2, 200, 4, 64), 300, 2, False, False),
         ((1, 384, 2, 32), 384, 2, True, True)]


@pytest.mark.parametrize("q_shape,s_k,h_k,causal,persistent", CASES)
def test_blackwell_fmha_forward_on_the_emulator(monkeypatch, q_shape, s_k, h_k, causal, persistent):
    fm = load_fmha(monkeypatch)
    kernel, args, (q, k, v, o) = fmha_case(fm, q_shape, s_k, h_k, causal, persistent, np.random.default_rng(3))
    cute.compile(kernel, *args, options=OPTIONS)(*args)
    want = _attention(q, k, v, causal)
    # fp16 P and O: each probability and output rounded once to half precision.
    np.testing.assert_allclose(o.astype(np.float64), want, atol=4e-3, rtol=4e-3)


# ---- the backward pass (fmha_bwd.py) ---------------------------------------------------------------

FMHA_BWD = "cute/blackwell/kernel/attention/fmha/fmha_bwd.py"


def load_fmha_bwd(monkeypatch):
    load_fmha(monkeypatch)  # the same setup: helpers on the path, torch, the architecture
    import importlib.util
    spec = importlib.util.spec_from_file_location("bw_fmha_bwd_example", nvidia_examples.path(FMHA_BWD))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bwd_operand(shape, dtype, rng=None):
    """run()'s create_and_permute_tensor: storage (b, s, h_k, h_r, d) read as (s, d, h_r, h_k, b),
    d contiguous, the extents dynamic (s, d divisible by 64)."""
    from test_fmha_example import _TorchLike
    x = _aligned(shape, dtype)
    x[...] = rng.integers(-2, 2, size=shape) if rng is not None else 0
    t = from_dlpack(_TorchLike(x.transpose(1, 4, 3, 2, 0)), assumed_align=16)
    return x, t.mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(mode=1, stride_order=(4, 0, 3, 2, 1),
                                                                              divisibility=64)


def _attention_backward(q, k, v, o, do, lse, causal):
    """dQ, dK, dV (float64, storage layouts) as fmha_bwd_reference computes them from the given O and
    LSE: P = exp(S - LSE), dV = P^T dO, dS = P (dO V^T - rowsum(O dO)) / sqrt(d), dK = dS^T Q,
    dQ = dS K; P and dS rounded to float16 before their products, as the kernel's MMAs read them."""
    q, k, v, o, do = (x.astype(np.float64) for x in (q, k, v, o, do))
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = np.einsum("bqgrd,bkgd->bgrqk", q, k[:, :, :, 0]) * scale
    if causal:
        s = np.where(np.arange(k.shape[1])[None, :] > np.arange(q.shape[1])[:, None], -np.inf, s)
    p = np.exp(s - lse.astype(np.float64)[..., None])  # lse: (b, h_k, h_r, s_q)
    p16 = p.astype(np.float16).astype(np.float64)
    dv = np.einsum("bgrqk,bqgrd->bkgd", p16, do)[:, :, :, None]
    dp = np.einsum("bqgrd,bkgd->bgrqk", do, v[:, :, :, 0])
    ds = (p * (dp - np.einsum("bqgrd,bqgrd->bgrq", o, do)[..., None]) * scale).astype(np.float16).astype(np.float64)
    dk = np.einsum("bgrqk,bqgrd->bkgd", ds, q)[:, :, :, None]
    dq = np.einsum("bgrqk,bkgd->bqgrd", ds, k[:, :, :, 0])
    return dq, dk, dv


def fmha_bwd_case(fm, b, s_q, s_k, h_q, h_k, d, causal, rng=None):
    """(kernel, arguments, storages q, k, v, o, do, lse, dq, dk, dv) as run() sets them up (fp16)."""
    h_r = h_q // h_k
    (q, tq), (o, to), (do, tdo) = (_bwd_operand((b, s_q, h_k, h_r, d), np.float16, rng) for _ in range(3))
    (k, tk), (v, tv) = (_bwd_operand((b, s_k, h_k, 1, d), np.float16, rng) for _ in range(2))
    (dq, tdq), (dk, tdk), (dv, tdv) = (_bwd_operand(s, np.float16) for s in
                                       ((b, s_q, h_k, h_r, d), (b, s_k, h_k, 1, d), (b, s_k, h_k, 1, d)))
    lse = _aligned((b, h_k, h_r, s_q), np.float32)
    lse[...] = 10 + (rng.random(lse.shape) if rng is not None else 0)
    tlse = from_dlpack(lse.transpose(3, 2, 1, 0), assumed_align=16).mark_layout_dynamic(leading_dim=0)
    mask, window_right = fm.fmha_utils.MaskEnum.WINDOW_MASK_BWD, None
    if causal:
        window_right = cutlass.Int32(0)
    elif s_q % 128:
        mask = fm.fmha_utils.MaskEnum.RESIDUAL_MASK_BWD
    cls = fm.BlackwellFusedMultiHeadAttentionBackward
    kernel = cls(cutlass.Float16, cutlass.Float32, (128, 128, d), False, mask)
    workspace = _aligned((cls._get_workspace_size(s_q, s_k, d, h_q, b, cutlass.Float32),), np.uint8)
    twork = from_dlpack(workspace, assumed_align=16).mark_layout_dynamic()
    args = [(s_q, s_k, d, ((h_r, h_k), b)), tq, tk, tv, to, tdq, tdk, tdv, tdo, tlse, None, None, 1.0 / math.sqrt(d),
            None, window_right, twork, _default_stream()]
    return kernel, args, (q, k, v, o, do, lse, dq, dk, dv)


# (b, s_q, s_k, h_q, h_k, d, causal): the script's head dimension at a shorter sequence; grouped
# heads over two batches with more keys than queries; s_q needing the residual mask; causal GQA.
BWD_CASES = [(1, 256, 256, 2, 2, 128, False), (2, 256, 384, 4, 2, 64, False), (1, 200, 256, 2, 2, 64, False),
             (1, 256, 256, 2, 1, 128, True)]


@pytest.mark.parametrize("b,s_q,s_k,h_q,h_k,d,causal", BWD_CASES)
def test_blackwell_fmha_backward_on_the_emulator(monkeypatch, b, s_q, s_k, h_q, h_k, d, causal):
    fm = load_fmha_bwd(monkeypatch)
    kernel, args, (q, k, v, o, do, lse, dq, dk, dv) = fmha_bwd_case(fm, b, s_q, s_k, h_q, h_k, d, causal,
                                                                     np.random.default_rng(9))
    cute.compile(kernel, *args, options=OPTIONS)(*args)
    for got, want in zip((dq, dk, dv), _attention_backward(q, k, v, o, do, lse, causal)):
        # Each result is rounded once to float16 (dQ through a float32 workspace).
        assert np.abs(got.astype(np.float64) - want).max() <= 2e-3 * max(1.0, np.abs(want).max())
        assert np.abs(want).max() > 0.1


# ---- sm_100a cubins ---------------------------------------------------------------------------------

@pytest.fixture
def cubin_link(monkeypatch):
    """Compiles for the emulator while linking each kernel to an sm_100a cubin (a toolchain that
    rejects it is an error), the file cache off so that the toolchain runs each time."""
    import toolchain
    toolchain.require_cubin()
    monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")
    return toolchain


def _check_cubin(compiled, toolchain, *instructions):
    ptx = toolchain.ptx_of(compiled)
    assert ".target sm_100a" in ptx
    cubin = compiled.__cubin__
    assert cubin is not None and bytes(cubin[:4]) == b"\x7fELF", "nvJitLink produced no sm_100a cubin"
    for insn in instructions:
        assert insn in ptx, insn


@pytest.mark.parametrize("causal,persistent", [(False, False), (True, True)], ids=["default", "causal persistent"])
def test_fmha_forward_kernel_links_an_sm100a_cubin(monkeypatch, cubin_link, causal, persistent):
    fm = load_fmha(monkeypatch)
    # The bwx:fmha row's shape (b, s, h, d) = (1, 256, 8, 128).
    kernel, args, _ = fmha_case(fm, (1, 256, 8, 128), 256, 8, causal, persistent)
    _check_cubin(cute.compile(kernel, *args, options=OPTIONS), cubin_link, "tcgen05.mma.cta_group::1.kind::f16",
                 "tcgen05.ld.sync.aligned.32x32b", "tcgen05.st.sync.aligned", "fma.rz.ftz.f32", "cp.async.bulk.tensor")


@pytest.mark.parametrize("causal", [False, True], ids=["default", "causal"])
def test_fmha_backward_kernels_link_sm100a_cubins(monkeypatch, cubin_link, causal):
    fm = load_fmha_bwd(monkeypatch)
    # The bwx:fmha_bwd row's head dimension and heads (d = 128, 8 heads) at s = 256.
    kernel, args, _ = fmha_bwd_case(fm, 1, 256, 256, 8, 8, 128, causal)
    _check_cubin(cute.compile(kernel, *args, options=OPTIONS), cubin_link, "tcgen05.mma.cta_group::1.kind::f16",
                 "cp.reduce.async.bulk.tensor.5d.global.shared::cta.add.tile", "tcgen05.ld.sync.aligned.32x32b")
