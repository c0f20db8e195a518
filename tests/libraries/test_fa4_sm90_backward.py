"""FlashAttention-4's Hopper backward (its preprocess, `FlashAttentionBackwardSm90` and the dQ
postprocess; flash_attn/cute of a flash-attention checkout at $FLASH_ATTENTION_DIR), chosen by FA4's
front end as on an H100 (compute capability 9) and compiled for sm_90a, run on the PTX executor
against torch in float32. Skipped without FA4, quack (which FA4 imports), torch or libNVVM.

With `seqused_q` / `seqused_k` FA4's own `test_flash_attn_varlen_output` fails on SM90 at the pinned
commit (912c6c45), the same on NVIDIA's package: FA4's SM90 backward kernel takes the two tensors
and drops them (flash_bwd_sm90.py builds its `SeqlenInfoQK` with `mSeqUsedQ=None,
mSeqUsedK=None`), so it runs every batch over all padded rows and keys:
- a used query row's dQ gains terms from the keys past `seqused_k` (P = exp(S - LSE) there is not
  zero: the forward's LSE covers only the used keys);
- a used key's dK / dV gain terms from the query rows past `seqused_q` whose LSE the preprocess
  never writes (it writes +inf only up to `seqused_q` rounded up to the 80- or 64-row tile):
  `lse_log2` is `torch.empty`, so these gradients are whatever that memory held.
Upstream disabled the check on SM90 the next day (#2242) and plumbed seqused through the SM90
backward in March 2026 (#2315). The tests below pin what 912c6c45 computes, with FA4's float32
scratch pre-filled, against a torch model of it."""
import contextlib
import math
import os
import sys
import types

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("quack")
pytest.importorskip("cuda.bindings.driver")

import toolchain  # noqa: E402
from test_libraries import _OnCpu, _close, _fa4_interface  # noqa: E402

_TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "tools")
sys.path.insert(0, _TOOLS)
try:  # the plugin that fills FA4's scratch in its own suite fills it here too
    from pytest_fill_fa4_scratch import _TorchWithFilledScratch  # noqa: E402
finally:
    sys.path.remove(_TOOLS)


def _sm90_interface(monkeypatch, scratch_fill=None, target="ptx"):
    """FA4's interface as on an H100, compiling for sm_90a and running on `target` (the PTX
    executor unless "gpu")."""
    interface = _fa4_interface()
    if target != "gpu":
        toolchain.require_libnvvm()
        monkeypatch.setenv("CUTE_DSL_TARGET", target)
        monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
        monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **kw: types.SimpleNamespace(cuda_stream=0))
        monkeypatch.setattr(interface, "_get_device_capability", lambda *a, **kw: 9)  # the backward asks it
    # The compile caches' keys do not name the target.
    monkeypatch.setattr(interface._flash_attn_fwd, "compile_cache", {})
    for name in ("compile_cache_pre", "compile_cache", "compile_cache_post"):
        monkeypatch.setattr(interface._flash_attn_bwd, name, {})
    if scratch_fill is not None:
        monkeypatch.setattr(interface, "torch", _TorchWithFilledScratch(scratch_fill))
    return interface


def _inputs(batch, seqlen_q, seqlen_k, seed, head_dim=128, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    q, dout = (torch.randn(batch, seqlen_q, 1, head_dim, generator=gen).to(torch.bfloat16) for _ in range(2))
    k, v = (torch.randn(batch, seqlen_k, 1, head_dim, generator=gen).to(torch.bfloat16) for _ in range(2))
    return [t.to(device) for t in (q, k, v, dout)]


def _run_fa4(interface, q, k, v, dout, causal, used_q=None, used_k=None, on_cpu=True):
    """FA4's forward then its backward; (out, lse, dq, dk, dv)."""
    seqused = {} if used_q is None else dict(seqused_q=used_q, seqused_k=used_k)
    fwd = {} if not on_cpu else dict(_compute_capability=9)
    with _OnCpu() if on_cpu else contextlib.nullcontext():
        out, lse = interface._flash_attn_fwd(q, k, v, causal=causal, return_lse=True, **fwd, **seqused)
        dq, dk, dv = interface._flash_attn_bwd(q, k, v, out, dout, lse, causal=causal, **seqused)
    return out, lse, dq, dk, dv


def _true_gradients(q, k, v, dout, causal):
    """dQ, dK, dV of softmax(Q K^T / sqrt(d)) V for one sequence ((seqlen, d) tensors), by torch
    autograd in float32; causal masks align the last query with the last key."""
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    scores = (qf @ kf.T) * q.shape[-1] ** -0.5
    if causal:
        nq, nk = scores.shape
        scores = scores.masked_fill(torch.arange(nk)[None] > torch.arange(nq)[:, None] + nk - nq, float("-inf"))
    (torch.softmax(scores, -1) @ vf).backward(dout.float())
    return qf.grad, kf.grad, vf.grad


def _fa4_912c6c45_sm90_backward(q, k, v, out, dout, lse, used_q, causal, scratch_fill):
    """What FA4's SM90 backward computes at 912c6c45 for one batch of seqused ((seqlen, d)
    tensors padded to the batch's full lengths; `lse` its forward's natural-log LSEs): its
    preprocess writes LSE * log2(e) for the `used_q` rows, +inf for the rest of their last
    80-row tile (64 with causal masking), dPsum = rowsum(dO * O) for the used rows and 0 after; its
    kernel then runs over every padded row and key (no seqused), the rows past that tile reading
    `scratch_fill` as their LSE."""
    tile_m = 64 if causal else 80
    seqlen_q, seqlen_k = q.shape[0], k.shape[0]
    Q, K, V, dO, O = (x.float() for x in (q, k, v, dout, out))
    lse_log2 = torch.full((seqlen_q,), float(scratch_fill))
    lse_log2[:used_q] = lse[:used_q].float() * math.log2(math.e)
    lse_log2[used_q:-(-used_q // tile_m) * tile_m] = float("inf")
    dpsum = torch.zeros(seqlen_q)
    dpsum[:used_q] = (dO[:used_q] * O[:used_q]).sum(-1)
    scale = q.shape[-1] ** -0.5
    P = torch.exp2((Q @ K.T) * scale * math.log2(math.e) - lse_log2[:, None])
    if causal:
        P = P.masked_fill(torch.arange(seqlen_k)[None] > torch.arange(seqlen_q)[:, None] + seqlen_k - seqlen_q, 0.0)
    dS = P * (dO @ V.T - dpsum[:, None])
    return scale * dS @ K, scale * dS.T @ Q, P.T @ dO


def _tol(ref):
    return 1e-2 * max(1.0, ref.abs().max().item() if ref.numel() else 0.0)  # bf16 gradients


def _near(got, ref):
    """`got` (rows of FA4's bf16 output; none for an empty sequence) within _tol of `ref`."""
    if got.numel():
        _close(got, ref, _tol(ref))


def _far(got, ref):
    """`got` off `ref` by more than ten times _tol: the defect, not rounding."""
    assert (got.float().cpu() - ref).abs().max().item() > 10 * _tol(ref)


# ---- without seqused: the backward against torch autograd -----------------------------------

@pytest.mark.parametrize("causal,seqlen_q,seqlen_k", [(False, 200, 250), (True, 200, 200)])
def test_fa4_sm90_backward_on_the_ptx_executor(monkeypatch, causal, seqlen_q, seqlen_k):
    """Head dim 128, two batches: 80-row query tiles without causal masking (dQ by swapped-AB
    wgmmas), 64 with it; ragged last tiles of rows and keys."""
    q, k, v, dout = _inputs(2, seqlen_q, seqlen_k, seed=seqlen_k + causal)
    interface = _sm90_interface(monkeypatch)
    _, _, dq, dk, dv = _run_fa4(interface, q, k, v, dout, causal)
    for b in range(2):
        for got, ref in zip((dq[b, :, 0], dk[b, :, 0], dv[b, :, 0]),
                            _true_gradients(q[b, :, 0], k[b, :, 0], v[b, :, 0], dout[b, :, 0], causal)):
            _near(got, ref)
    (compiled,) = interface._flash_attn_bwd.compile_cache.values()
    assert "wgmma.mma_async.sync.aligned" in compiled.__ptx__


# ---- with seqused: what FA4 912c6c45 computes ------------------------------------------------

SEQUSED_CASES = [  # (causal, head_dim, seqlen_q, seqlen_k, used_q, used_k)
    (False, 128, 200, 250, (150, 64, 0), (180, 250, 120)),  # the last batch has no queries
    (True, 128, 200, 200, (150, 0, 100), (150, 0, 100)),  # FA4's test: key lengths = query lengths
    (True, 64, 200, 200, (150, 0, 100), (150, 0, 100)),  # LSE / dPsum shuffled among threads
]


def _check_against_the_912c6c45_model(q, k, v, dout, out, lse, dq, dk, dv, causal, used_q, used_k, fill):
    for b, (nq, nk) in enumerate(zip(used_q, used_k)):
        model_dq, model_dk, model_dv = _fa4_912c6c45_sm90_backward(
            q[b, :, 0], k[b, :, 0], v[b, :, 0], out[b, :, 0], dout[b, :, 0], lse[b, 0], nq, causal, fill)
        for got, ref in ((dq[b, :nq, 0], model_dq[:nq]), (dk[b, :nk, 0], model_dk[:nk]), (dv[b, :nk, 0], model_dv[:nk])):
            _near(got, ref)


@pytest.mark.parametrize("causal,head_dim,seqlen_q,seqlen_k,used_q,used_k", SEQUSED_CASES)
def test_fa4_sm90_seqused_backward_on_the_ptx_executor(monkeypatch, causal, head_dim, seqlen_q, seqlen_k, used_q,
                                                       used_k):
    """With FA4's scratch pre-filled with +inf (P = 0 on every unused row): dK / dV of the used keys
    are the true gradients (zero for a batch without queries), and so is dQ where a batch uses all
    its keys; where it uses fewer, dQ takes in the unused keys as 912c6c45's kernel does."""
    q, k, v, dout = _inputs(len(used_q), seqlen_q, seqlen_k, seed=seqlen_k + causal, head_dim=head_dim)
    uq, uk = (torch.tensor(n, dtype=torch.int32) for n in (used_q, used_k))
    interface = _sm90_interface(monkeypatch, scratch_fill=float("inf"))
    out, lse, dq, dk, dv = _run_fa4(interface, q, k, v, dout, causal, uq, uk)
    for b, (nq, nk) in enumerate(zip(used_q, used_k)):
        true_dq, true_dk, true_dv = _true_gradients(q[b, :nq, 0], k[b, :nk, 0], v[b, :nk, 0], dout[b, :nq, 0], causal)
        _near(dk[b, :nk, 0], true_dk)
        _near(dv[b, :nk, 0], true_dv)
        if nk == seqlen_k or causal:  # under causal masking the used rows never see an unused key
            _near(dq[b, :nq, 0], true_dq)
        elif nq:
            _far(dq[b, :nq, 0], true_dq)
    _check_against_the_912c6c45_model(q, k, v, dout, out, lse, dq, dk, dv, causal, used_q, used_k, float("inf"))


@pytest.mark.parametrize("causal,head_dim,seqlen_q,seqlen_k,used_q,used_k", SEQUSED_CASES)
def test_fa4_sm90_seqused_backward_reads_the_uninitialised_lse(monkeypatch, causal, head_dim, seqlen_q, seqlen_k,
                                                                used_q, used_k):
    """With FA4's scratch pre-filled with 0 instead, the unused rows' P = exp(S) is not zero:
    dK / dV of the used keys are far from the true gradients, by exactly 912c6c45's terms (FA4's
    `test_flash_attn_varlen_output` fails its dK check on the H200 by whatever the allocator left)."""
    q, k, v, dout = _inputs(len(used_q), seqlen_q, seqlen_k, seed=seqlen_k + causal, head_dim=head_dim)
    uq, uk = (torch.tensor(n, dtype=torch.int32) for n in (used_q, used_k))
    interface = _sm90_interface(monkeypatch, scratch_fill=0.0)
    out, lse, dq, dk, dv = _run_fa4(interface, q, k, v, dout, causal, uq, uk)
    _check_against_the_912c6c45_model(q, k, v, dout, out, lse, dq, dk, dv, causal, used_q, used_k, 0.0)
    b = 0  # 150 of 200 queries: rows 160 (non-causal) / 192 (causal) on read an LSE of 0
    true_dk = _true_gradients(q[b, :150, 0], k[b, :used_k[b], 0], v[b, :used_k[b], 0], dout[b, :150, 0], causal)[1]
    _far(dk[b, :used_k[b], 0], true_dk)


@pytest.mark.gpu
@pytest.mark.parametrize("causal,head_dim,seqlen_q,seqlen_k,used_q,used_k", SEQUSED_CASES)
@pytest.mark.parametrize("fill", [float("inf"), 0.0])
def test_gpu_fa4_sm90_seqused_backward_is_912c6c45s(monkeypatch, causal, head_dim, seqlen_q, seqlen_k, used_q, used_k,
                                                    fill):
    """On an H100: FA4's SM90 backward with seqused computes the same as 912c6c45's model, for both
    contents of its uninitialised scratch (FA4's defect, not OpenCuTe's)."""
    q, k, v, dout = _inputs(len(used_q), seqlen_q, seqlen_k, seed=seqlen_k + causal, head_dim=head_dim,
                            device="cuda")
    uq, uk = (torch.tensor(n, dtype=torch.int32, device="cuda") for n in (used_q, used_k))
    interface = _sm90_interface(monkeypatch, scratch_fill=fill, target="gpu")
    out, lse, dq, dk, dv = _run_fa4(interface, q, k, v, dout, causal, uq, uk, on_cpu=False)
    torch.cuda.synchronize()
    q, k, v, dout, out, lse, dq, dk, dv = (t.cpu() for t in (q, k, v, dout, out, lse, dq, dk, dv))
    _check_against_the_912c6c45_model(q, k, v, dout, out, lse, dq, dk, dv, causal, used_q, used_k, fill)
