"""FlashAttention-4's Blackwell forward and backward (`FlashAttentionForwardSm100`,
`FlashAttentionBackwardSm100`, flash_attn/cute of a flash-attention checkout at
$FLASH_ATTENTION_DIR), chosen by FA4's own front end as on a Blackwell GPU (compute capability
10) and compiled for sm_100a, run on the PTX executor (their hand-built tcgen05.mma descriptors are
inline PTX, which the IR emulator does not run), against attention and its gradients computed with
torch in float32. Skipped without FA4, quack (which FA4 imports), torch or libNVVM."""
import types

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("quack")
pytest.importorskip("cuda.bindings.driver")

import cutlass.cute as cute  # noqa: E402
import toolchain  # noqa: E402
from test_libraries import _OnCpu, _close, _fa4_interface  # noqa: E402


def _attention_and_lse(q, k, v, causal, window=(None, None), sink=None):
    """Softmax(Q K^T / sqrt(d)) V and the rows' log-sum-exp, in float32; causal masks align the
    last query with the last key (FA4's convention), as does a local window of (left, right)
    keys about a query's diagonal (None: unbounded); a learnable sink adds one logit per head to
    each row's softmax, with no value; with fewer K / V heads than Q heads (GQA) each K / V head
    serves consecutive Q heads."""
    sq, sk = q.shape[1], k.shape[1]
    k, v = (x.repeat_interleave(q.shape[2] // k.shape[2], dim=2) for x in (k, v))
    scores = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) * q.shape[-1] ** -0.5
    diagonal, keys = torch.arange(sq)[:, None] + (sk - sq), torch.arange(sk)[None, :]
    left, right = window
    if causal:
        right = 0
    if right is not None:
        scores = scores.masked_fill(keys > diagonal + right, float("-inf"))
    if left is not None:
        scores = scores.masked_fill(keys < diagonal - left, float("-inf"))
    if sink is not None:
        sink_logits = sink.float()[None, :, None, None].expand(*scores.shape[:3], 1)
        lse = torch.logsumexp(torch.cat([scores, sink_logits], -1), -1)
    else:
        lse = torch.logsumexp(scores, -1)
    out = torch.einsum("bhqk,bkhd->bqhd", torch.exp(scores - lse[..., None]), v.float())
    return out, lse


def _on_the_ptx_executor(monkeypatch, target="ptx"):
    """FA4's interface, set to compile for sm_100a and run on the PTX executor (or `target`)."""
    toolchain.require_libnvvm()
    interface = _fa4_interface()
    monkeypatch.setenv("CUTE_DSL_TARGET", target)
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **kw: types.SimpleNamespace(cuda_stream=0))
    monkeypatch.setattr(interface, "_get_device_capability", lambda *a, **kw: 10)  # the backward asks it
    # The compile caches' keys do not name the target.
    monkeypatch.setattr(interface._flash_attn_fwd, "compile_cache", {})
    monkeypatch.setattr(interface._flash_attn_fwd_combine, "compile_cache", {})
    for name in ("compile_cache_pre", "compile_cache", "compile_cache_post"):
        monkeypatch.setattr(interface._flash_attn_bwd, name, {})
    return interface


def _fa4_sm100_forward(monkeypatch, q, k, v, causal):
    """FA4's forward on the PTX executor; its output, LSE and compiled kernel."""
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, causal=causal, _compute_capability=10, return_lse=True)
    (compiled,) = interface._flash_attn_fwd.compile_cache.values()
    return out, lse, compiled


@pytest.mark.parametrize("causal,seqlen_q,seqlen_k,heads,kv_heads", [
    (False, 128, 128, 2, 2), (False, 256, 384, 2, 2), (True, 128, 128, 2, 2), (True, 300, 300, 2, 2),
    (True, 256, 256, 4, 2)])
def test_fa4_sm100_forward_on_the_ptx_executor(monkeypatch, causal, seqlen_q, seqlen_k, heads, kv_heads):
    """Head dim 128, two batches. 128 queries make one Q stage, more make two (FA4's q_stage); 384
    keys take three 128-key blocks; 300 leaves ragged last blocks; without causal masking FA4's
    persistent tile scheduler runs. With two Q heads per K / V head FA4 packs the heads into the
    rows of a tile (pack_gqa): its output TMA tiles a ((heads, seqlen), d) mode."""
    gen = torch.Generator().manual_seed(seqlen_q + seqlen_k + causal + heads)
    q = torch.randn(2, seqlen_q, heads, 128, dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(2, seqlen_k, kv_heads, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    out, lse, compiled = _fa4_sm100_forward(monkeypatch, q, k, v, causal)
    ref_out, ref_lse = _attention_and_lse(q, k, v, causal)
    _close(out, ref_out, 2e-2)
    _close(lse, ref_lse, 5e-3)  # FA4 exponentiates with ex2.approx
    assert ".target sm_100a" in compiled.__ptx__
    assert "tcgen05.mma.cta_group::1.kind::f16" in compiled.__ptx__


def _per_sequence(q, k, v, causal, starts_q, starts_k, lens_q, lens_k):
    """_attention_and_lse of each sequence of a batch given by its rows' starts and lengths in
    (total, heads, d) tensors: outputs in q's rows, LSEs in (heads, total)."""
    out, lse = torch.zeros(q.shape[0], q.shape[1], v.shape[-1]), torch.zeros(q.shape[1], q.shape[0])
    for sq, sk, nq, nk in zip(starts_q, starts_k, lens_q, lens_k):
        o, l = _attention_and_lse(q[None, sq:sq + nq], k[None, sk:sk + nk], v[None, sk:sk + nk], causal)
        out[sq:sq + nq], lse[:, sq:sq + nq] = o[0], l[0]
    return out, lse


@pytest.mark.parametrize("causal,heads,num_splits", [(False, 2, 1), (True, 4, 1), (True, 4, 3)])
def test_fa4_sm100_varlen_forward_on_the_ptx_executor(monkeypatch, causal, heads, num_splits):
    """Sequences of 100 and 160 queries against 130 and 200 keys (600 and 400 for three KV
    splits, which FA4's combine kernel merges) packed along one (total, heads, d) dimension by
    cu_seqlens_q / cu_seqlens_k; with four Q heads on two K / V heads FA4 packs the heads into a
    tile's rows."""
    lens_q, lens_k = (100, 160), ((130, 200) if num_splits == 1 else (600, 400))
    cu_q, cu_k = (torch.tensor([0, n[0], n[0] + n[1]], dtype=torch.int32) for n in (lens_q, lens_k))
    gen = torch.Generator().manual_seed(heads + causal + num_splits)
    q = torch.randn(sum(lens_q), heads, 128, dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(sum(lens_k), 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(
            q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k),
            causal=causal, num_splits=num_splits, _compute_capability=10, return_lse=True)
    ref_out, ref_lse = _per_sequence(q, k, v, causal, cu_q[:-1], cu_k[:-1], lens_q, lens_k)
    _close(out, ref_out, 2e-2)
    _close(lse, ref_lse, 5e-3)


@pytest.mark.parametrize("causal", [False, True])
def test_fa4_sm100_seqused_forward_on_the_ptx_executor(monkeypatch, causal):
    """Two batches of 192 queries and 256 keys of which seqused_q / seqused_k say how many are
    used (150 / 180 and 64 / 250): the rows past a batch's queries are left alone."""
    gen = torch.Generator().manual_seed(int(causal))
    q = torch.randn(2, 192, 2, 128, dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(2, 256, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    used_q, used_k = torch.tensor([150, 64], dtype=torch.int32), torch.tensor([180, 250], dtype=torch.int32)
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, seqused_q=used_q, seqused_k=used_k, causal=causal,
                                             _compute_capability=10, return_lse=True)
    for b, (nq, nk) in enumerate(zip(used_q.tolist(), used_k.tolist())):
        ref_out, ref_lse = _attention_and_lse(q[b:b + 1, :nq], k[b:b + 1, :nk], v[b:b + 1, :nk], causal)
        _close(out[b, :nq], ref_out[0], 2e-2)
        _close(lse[b, :, :nq], ref_lse[0], 5e-3)


@pytest.mark.parametrize("causal,seqlen_q,seqlen_k,num_splits", [(False, 128, 384, 2), (True, 512, 512, 4)])
def test_fa4_sm100_split_kv_forward_on_the_ptx_executor(monkeypatch, causal, seqlen_q, seqlen_k, num_splits):
    """The keys split among CTAs (num_splits): each writes a float32 partial output and LSE,
    FA4's combine kernel (FlashAttentionForwardCombine) merges them. With causal masking, four
    splits of four key blocks and two 256-query tiles, the first tile's last two splits have no
    keys: their LSEs are -inf."""
    gen = torch.Generator().manual_seed(seqlen_q + num_splits)
    q = torch.randn(1, seqlen_q, 2, 128, dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(1, seqlen_k, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, causal=causal, num_splits=num_splits,
                                             _compute_capability=10, return_lse=True)
    ref_out, ref_lse = _attention_and_lse(q, k, v, causal)
    _close(out, ref_out, 2e-2)
    _close(lse, ref_lse, 5e-3)
    assert len(interface._flash_attn_fwd_combine.compile_cache) == 1


@pytest.mark.parametrize("causal,seqlen", [(False, 256), (True, 300)])
def test_fa4_sm100_backward_on_the_ptx_executor(monkeypatch, causal, seqlen):
    """FA4's SM100 backward (its preprocess, the tcgen05 kernel, whose dQ accumulates into global
    memory by TMA reduce-adds from the CTAs of every key block, and the postprocess) after its
    forward, against torch autograd in float32: head dim 128, two batches of two heads."""
    gen = torch.Generator().manual_seed(seqlen + causal)
    q, k, v, dout = (torch.randn(2, seqlen, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(4))
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, causal=causal, _compute_capability=10, return_lse=True)
        dq, dk, dv = interface._flash_attn_bwd(q, k, v, out, dout, lse, causal=causal)
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    ref_out, _ = _attention_and_lse(qf, kf, vf, causal)
    ref_out.backward(dout.float())
    for got, ref in ((dq, qf.grad), (dk, kf.grad), (dv, vf.grad)):
        _close(got, ref, 1e-2 * max(1.0, ref.abs().max().item()))  # bf16 gradients of values up to ~4
    (compiled,) = interface._flash_attn_bwd.compile_cache.values()
    assert "tcgen05.mma.cta_group::1.kind::f16" in compiled.__ptx__


@pytest.mark.parametrize("causal,heads", [(False, 2), (True, 4)])
def test_fa4_sm100_varlen_backward_on_the_ptx_executor(monkeypatch, causal, heads):
    """The backward of sequences of 100 and 160 queries against 130 and 200 keys packed by
    cu_seqlens_q / cu_seqlens_k (its preprocess, postprocess and dQ accumulator in the packed
    layout), after the varlen forward, against torch autograd per sequence; four Q heads share
    two K / V heads in the causal case (dK / dV sum over the heads of a group)."""
    lens_q, lens_k = (100, 160), (130, 200)
    cu_q, cu_k = (torch.tensor([0, n[0], n[0] + n[1]], dtype=torch.int32) for n in (lens_q, lens_k))
    gen = torch.Generator().manual_seed(heads + causal)
    q, dout = (torch.randn(sum(lens_q), heads, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    k, v = (torch.randn(sum(lens_k), 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    varlen = dict(cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k))
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, causal=causal, _compute_capability=10, return_lse=True, **varlen)
        dq, dk, dv = interface._flash_attn_bwd(q, k, v, out, dout, lse, causal=causal, **varlen)
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    for sq, sk, nq, nk in zip(cu_q.tolist(), cu_k.tolist(), lens_q, lens_k):
        ref_out, _ = _attention_and_lse(qf[None, sq:sq + nq], kf[None, sk:sk + nk], vf[None, sk:sk + nk], causal)
        ref_out.backward(dout[None, sq:sq + nq].float())
    for got, ref in ((dq, qf.grad), (dk, kf.grad), (dv, vf.grad)):
        _close(got, ref, 1e-2 * max(1.0, ref.abs().max().item()))


def test_fa4_sm100_seqused_backward_on_the_ptx_executor(monkeypatch):
    """The backward of two batches of 192 queries and 256 keys of which seqused_q / seqused_k
    use 150 / 180 and 64 / 250, after the forward with the same, against torch autograd on the
    used rows (causal)."""
    gen = torch.Generator().manual_seed(3)
    q, dout = (torch.randn(2, 192, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    k, v = (torch.randn(2, 256, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    used_q, used_k = torch.tensor([150, 64], dtype=torch.int32), torch.tensor([180, 250], dtype=torch.int32)
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, seqused_q=used_q, seqused_k=used_k, causal=True,
                                             _compute_capability=10, return_lse=True)
        dq, dk, dv = interface._flash_attn_bwd(q, k, v, out, dout, lse, causal=True, seqused_q=used_q,
                                               seqused_k=used_k)
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    used = list(zip(used_q.tolist(), used_k.tolist()))
    for b, (nq, nk) in enumerate(used):
        ref_out, _ = _attention_and_lse(qf[b:b + 1, :nq], kf[b:b + 1, :nk], vf[b:b + 1, :nk], True)
        ref_out.backward(dout[b:b + 1, :nq].float())
    for b, (nq, nk) in enumerate(used):
        for got, ref in ((dq[b, :nq], qf.grad[b, :nq]), (dk[b, :nk], kf.grad[b, :nk]), (dv[b, :nk], vf.grad[b, :nk])):
            _close(got, ref, 1e-2 * max(1.0, ref.abs().max().item()))


class _TorchAllocatingOnTheCpu:
    """FA4's interface module's `torch`, whose zeros(..., device="cuda") (the deterministic
    backward's semaphores) allocate in host memory."""

    def __getattr__(self, name):
        return getattr(torch, name)

    def zeros(self, *shape, device=None, **kwargs):
        return torch.zeros(*shape, **kwargs)


@pytest.mark.parametrize("causal,window,sink,heads,num_splits", [
    (False, (100, 20), False, 2, 1), (False, (64, 0), True, 2, 1), (True, (None, None), True, 4, 1),
    (True, (None, None), True, 2, 3)])
def test_fa4_sm100_local_and_sink_forward_on_the_ptx_executor(monkeypatch, causal, window, sink, heads, num_splits):
    """A sliding window of (left, right) keys about each query's diagonal (FA4's is_local:
    key blocks outside every row's window are skipped, the rest masked), and learnable sinks
    (one bfloat16 logit per Q head in each row's softmax): alone, under a window, with packed
    GQA heads (each row reads its own head's sink) and with three KV splits (only the first
    split adds the sink). 256 queries, 384 keys (128 queries with splits)."""
    seqlen_q = 256 if num_splits == 1 else 128
    gen = torch.Generator().manual_seed(heads + num_splits + sink)
    q = torch.randn(1, seqlen_q, heads, 128, dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(1, 384, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    sinks = torch.randn(heads, generator=gen).to(torch.bfloat16) if sink else None
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, causal=causal, window_size_left=window[0],
                                             window_size_right=window[1], learnable_sink=sinks,
                                             num_splits=num_splits, _compute_capability=10, return_lse=True)
    ref_out, ref_lse = _attention_and_lse(q, k, v, causal, window, sinks)
    _close(out, ref_out, 2e-2)
    _close(lse, ref_lse, 5e-3)


@pytest.mark.parametrize("page_size", [128, 64])
def test_fa4_sm100_paged_kv_forward_on_the_ptx_executor(monkeypatch, page_size):
    """K / V in pages of a shared pool, each batch's pages named in shuffled order by a page
    table: pages of 128 keys (one key block) load by TMA, smaller ones by FA4's non-TMA paged
    path (cp.async gathers). Two batches of 128 queries and 256 keys."""
    gen = torch.Generator().manual_seed(page_size)
    pages_per_batch = 256 // page_size
    q = torch.randn(2, 128, 2, 128, dtype=torch.bfloat16, generator=gen)
    k_pages, v_pages = (torch.randn(2 * pages_per_batch + 1, page_size, 2, 128, dtype=torch.bfloat16, generator=gen)
                        for _ in range(2))
    page_table = torch.randperm(2 * pages_per_batch + 1, generator=gen)[:2 * pages_per_batch]
    page_table = page_table.to(torch.int32).view(2, pages_per_batch).contiguous()
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k_pages, v_pages, page_table=page_table, _compute_capability=10,
                                             return_lse=True)
    k, v = (x[page_table.long()].reshape(2, 256, 2, 128) for x in (k_pages, v_pages))
    ref_out, ref_lse = _attention_and_lse(q, k, v, False)
    _close(out, ref_out, 2e-2)
    _close(lse, ref_lse, 5e-3)


@cute.jit
def _doubled_scores(scores, batch, head, q_idx, kv_idx, seqlen_info, aux_tensors):
    """A score_mod (FA4's signature): every score times two."""
    return scores * cute.full_like(scores, 2)


@cute.jit
def _same_128_block(batch, head, q_idx, kv_idx, seqlen_info, aux_tensors):
    """A mask_mod (FA4's signature): a query sees the keys of its own 128-row block."""
    return (q_idx // cute.full_like(q_idx, 128)) == (kv_idx // cute.full_like(kv_idx, 128))


@pytest.mark.parametrize("mod", ["score_mod", "mask_mod"])
def test_fa4_sm100_score_and_mask_mods_on_the_ptx_executor(monkeypatch, mod):
    """User functions traced into the forward's softmax: a score_mod applied to each tile of
    scores (on index tensors of its rows and columns), and a mask_mod deciding which scores
    survive (block-diagonal here, 128-row blocks of 256 queries and keys)."""
    gen = torch.Generator().manual_seed(len(mod))
    q, k, v = (torch.randn(1, 256, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(3))
    interface = _on_the_ptx_executor(monkeypatch)
    user_fn = _doubled_scores if mod == "score_mod" else _same_128_block
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, _compute_capability=10, return_lse=True, **{mod: user_fn})
    scores = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) * 128 ** -0.5
    if mod == "score_mod":
        scores = scores * 2
    else:
        rows, keys = torch.arange(256)[:, None], torch.arange(256)[None, :]
        scores = scores.masked_fill(rows // 128 != keys // 128, float("-inf"))
    _close(out, torch.einsum("bhqk,bkhd->bqhd", torch.softmax(scores, -1), v.float()), 2e-2)
    _close(lse, torch.logsumexp(scores, -1), 5e-3)


def _force_backward_cluster_size(monkeypatch, interface, cluster_size):
    """FA4's front end builds FlashAttentionBackwardSm100 with cluster_size=1: override it."""
    backward_class = interface.FlashAttentionBackwardSm100
    monkeypatch.setattr(interface, "FlashAttentionBackwardSm100",
                        lambda *a, **kw: backward_class(*a, **{**kw, "cluster_size": cluster_size}))


@cute.jit
def _doubled_score_gradients(grad, scores, batch, head, q_idx, kv_idx, seqlen_info, aux_tensors):
    """_doubled_scores' backward (FA4's score_mod_bwd signature): d(2s)/ds = 2."""
    return grad * cute.full_like(grad, 2)


@pytest.mark.parametrize("mod", ["score_mod", "mask_mod"])
def test_fa4_sm100_backward_with_score_and_mask_mods_on_the_ptx_executor(monkeypatch, mod):
    """The backward with the forward's user functions: a score_mod with its score_mod_bwd
    (scores doubled) and a mask_mod (block-diagonal, 128-row blocks), against torch autograd
    through the same modification. 256 queries and keys, two heads."""
    gen = torch.Generator().manual_seed(4)
    q, k, v, dout = (torch.randn(1, 256, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(4))
    fwd_mods = {"score_mod": _doubled_scores} if mod == "score_mod" else {"mask_mod": _same_128_block}
    bwd_mods = {**fwd_mods, "score_mod_bwd": _doubled_score_gradients} if mod == "score_mod" else fwd_mods
    interface = _on_the_ptx_executor(monkeypatch)
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, _compute_capability=10, return_lse=True, **fwd_mods)
        dq, dk, dv = interface._flash_attn_bwd(q, k, v, out, dout, lse, **bwd_mods)
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    scores = torch.einsum("bqhd,bkhd->bhqk", qf, kf) * 128 ** -0.5
    if mod == "score_mod":
        scores = scores * 2
    else:
        rows, keys = torch.arange(256)[:, None], torch.arange(256)[None, :]
        scores = scores.masked_fill(rows // 128 != keys // 128, float("-inf"))
    torch.einsum("bhqk,bkhd->bqhd", torch.softmax(scores, -1), vf).backward(dout.float())
    for got, ref in ((dq, qf.grad), (dk, kf.grad), (dv, vf.grad)):
        _close(got, ref, 1e-2 * max(1.0, ref.abs().max().item()))


@cute.jit
def _keys_up_to_the_query(batch, head, q_idx, kv_idx, seqlen_info, aux_tensors):
    """A mask_mod (FA4's signature): a query sees the keys at or before its own index."""
    return q_idx >= kv_idx


def test_fa4_sm100_block_sparse_forward_on_the_ptx_executor(monkeypatch):
    """Block sparsity: for its one 128-query block, each head lists key block 2 as full (no
    mask) and key block 0 as masked by a mask_mod; key block 1 is skipped. 384 keys, two heads."""
    interface = _on_the_ptx_executor(monkeypatch)
    from flash_attn.cute.block_sparsity import BlockSparseTensorsTorch
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(1, 128, 2, 128, dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(1, 384, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    one_block = torch.ones(1, 2, 1, dtype=torch.int32)
    blocks = lambda first: torch.full((1, 2, 1, 3), first, dtype=torch.int32)  # noqa: E731 - one listed, 3 slots
    sparse = BlockSparseTensorsTorch(mask_block_cnt=one_block, mask_block_idx=blocks(0), full_block_cnt=one_block,
                                     full_block_idx=blocks(2), block_size=(128, 128))
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, mask_mod=_keys_up_to_the_query, block_sparse_tensors=sparse,
                                             _compute_capability=10, return_lse=True)
    scores = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) * 128 ** -0.5
    rows, keys = torch.arange(128)[:, None], torch.arange(384)[None, :]
    scores = scores.masked_fill(~(((keys < 128) & (keys <= rows)) | (keys >= 256)), float("-inf"))
    _close(out, torch.einsum("bhqk,bkhd->bqhd", torch.softmax(scores, -1), v.float()), 2e-2)
    _close(lse, torch.logsumexp(scores, -1), 5e-3)


@pytest.mark.parametrize("causal,seqlen,cluster_size,deterministic,window", [
    (False, 256, 2, False, (None, None)), (True, 384, 2, False, (None, None)), (True, 384, 1, True, (None, None)),
    (False, 256, 1, False, (100, 20))])
def test_fa4_sm100_backward_variants_on_the_ptx_executor(monkeypatch, causal, seqlen, cluster_size, deterministic,
                                                         window):
    """The SM100 backward's other configurations, against torch autograd: clusters of two CTAs
    along the key blocks (FlashAttentionBackwardSm100's cluster_size=2, which FA4's front end
    does not pick yet: here forced), whose Q and dO tiles one TMA multicasts to both CTAs; the
    deterministic backward, whose CTAs add their dQ / dK / dV in a fixed order, ordered by
    semaphores in global memory; a sliding window of (100, 20) keys. One batch of two heads,
    head dim 128."""
    gen = torch.Generator().manual_seed(seqlen + causal + cluster_size)
    q, k, v, dout = (torch.randn(1, seqlen, 2, 128, dtype=torch.bfloat16, generator=gen) for _ in range(4))
    interface = _on_the_ptx_executor(monkeypatch)
    _force_backward_cluster_size(monkeypatch, interface, cluster_size)
    monkeypatch.setattr(interface, "torch", _TorchAllocatingOnTheCpu())
    with _OnCpu():
        out, lse = interface._flash_attn_fwd(q, k, v, causal=causal, window_size_left=window[0],
                                             window_size_right=window[1], _compute_capability=10, return_lse=True)
        dq, dk, dv = interface._flash_attn_bwd(q, k, v, out, dout, lse, causal=causal, window_size_left=window[0],
                                               window_size_right=window[1], deterministic=deterministic)
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    ref_out, _ = _attention_and_lse(qf, kf, vf, causal, window)
    ref_out.backward(dout.float())
    for got, ref in ((dq, qf.grad), (dk, kf.grad), (dv, vf.grad)):
        _close(got, ref, 1e-2 * max(1.0, ref.abs().max().item()))
    (compiled,) = interface._flash_attn_bwd.compile_cache.values()
    assert ("multicast::cluster" in compiled.__ptx__) == (cluster_size == 2)


def test_fa4_sm100_kernels_link_to_sm100a_cubins(monkeypatch):
    """The forward's (plain, and varlen with KV splits), the split combine's and the backward's
    (in one-CTA and two-CTA clusters) kernels, lowered and linked by nvJitLink for sm_100a
    (OPENCUTE_EMULATOR_LINK_CUBIN makes a rejected link an error). Compiled for the IR emulator,
    which then refuses to run their inline PTX: each call stops after its kernel compiled."""
    toolchain.require_cubin()
    interface = _on_the_ptx_executor(monkeypatch, target="cpu")
    monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")
    q, k, v, out = (torch.zeros(1, 128, 1, 128, dtype=torch.bfloat16) for _ in range(4))
    lse = torch.zeros(1, 1, 128)
    with _OnCpu(), pytest.raises(RuntimeError, match="uses inline PTX"):
        interface._flash_attn_fwd(q, k, v, _compute_capability=10, return_lse=True)
    with _OnCpu(), pytest.raises(RuntimeError, match="uses inline PTX"):
        interface._flash_attn_bwd(q, k, v, out, out, lse)
    # The varlen forward with KV splits, and the combine kernel that merges the splits.
    cu_seqlens = torch.tensor([0, 128], dtype=torch.int32)
    with _OnCpu(), pytest.raises(RuntimeError, match="uses inline PTX"):
        interface._flash_attn_fwd(q[0], k[0], v[0], cu_seqlens_q=cu_seqlens, cu_seqlens_k=cu_seqlens,
                                  num_splits=2, _compute_capability=10, return_lse=True)
    out_partial, lse_partial = torch.zeros(2, 1, 128, 1, 128), torch.zeros(2, 1, 1, 128).transpose(-1, -2)
    with _OnCpu(), pytest.raises(RuntimeError, match="uses inline PTX"):
        interface._flash_attn_fwd_combine(out_partial, lse_partial, out, lse.transpose(-1, -2))
    kernels = [*interface._flash_attn_fwd.compile_cache.values(), *interface._flash_attn_bwd.compile_cache.values(),
               *interface._flash_attn_fwd_combine.compile_cache.values()]
    # The backward in clusters of two CTAs (its compile key does not name the cluster size).
    interface._flash_attn_bwd.compile_cache.clear()
    _force_backward_cluster_size(monkeypatch, interface, 2)
    with _OnCpu(), pytest.raises(RuntimeError, match="uses inline PTX"):
        interface._flash_attn_bwd(q, k, v, out, out, lse)
    kernels += interface._flash_attn_bwd.compile_cache.values()
    assert len(kernels) == 5
    for compiled in kernels:
        assert compiled.__cubin__[:4] == b"\x7fELF"
