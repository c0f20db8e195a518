"""FlashAttention-4's Hopper forward with a `score_mod` on variable-length sequences, called as FA4's
tests/cute/test_score_mod_varlen.py calls it (`_flash_attn_fwd` with cu_seqlens_q and/or
cu_seqlens_k, `out` preallocated, `lse=None`, `return_lse=True`, `pack_gqa` for GQA 4:2), with its
score mods and their aux tensors from tests/cute/score_mod_definitions.py, compiled for sm_90a and
run on the PTX executor (CPU tensors), or on the GPU for the `gpu` twins, against torch in float32.

One or a few cases stand for each of the four test functions of that file:
- test_varlen_with_score_mod: score mods on local indices (b, h, q, kv; aux tensors by batch, head
  and query position), varlen q and k, q only, k only;
- test_varlen_with_global_idx_score_mod: score mods that index packed aux tensors with
  `seqlen_info.offset_q` / `offset_k` (global token indices), MHA and GQA 4:2;
- test_varlen_score_mod_kvcache and test_varlen_score_mod_with_paged_kvcache_global: with
  `page_size=None` a batched KV cache under packed queries; with `page_size=128` FA4 refuses on SM90
  (interface.py:439 asserts `page_table is None`, "paged KV not supported on SM 9.0"; its SM90 kernel
  takes `mPageTable` but loads K and V without it), and FA4's test xfails there
  (test_score_mod_varlen.py:699-700 and 858-859).

The aux biases are drawn with standard deviation 1 (FA4's tests scale them by 0.1, and its batch bias
is all zeros): every case also checks that its output is far from attention without the score mod,
so that a score mod read wrongly or not at all fails (by its LSE where it adds the same to a
whole row). FA4's tests compare with flex_attention; here the reference applies FA4's eager score mods
to the whole (head, query, key) grid of a sequence at once."""
import importlib
import os
import sys
import types

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("quack")
pytest.importorskip("cuda.bindings.driver")

import toolchain  # noqa: E402
from test_libraries import FA4_DIR, _OnCpu, _fa4_interface  # noqa: E402


def _score_mods():
    """FA4's tests/cute/score_mod_definitions.py: the score mods (cute.jit) and their torch twins."""
    interface = _fa4_interface()  # skips without FA4
    folder = os.path.join(FA4_DIR, "tests", "cute")
    if "score_mod_definitions" not in sys.modules:
        sys.path.insert(0, folder)
        try:
            importlib.import_module("score_mod_definitions")
        finally:
            sys.path.remove(folder)
    return interface, sys.modules["score_mod_definitions"]


TARGETS = ["ptx", pytest.param("gpu", marks=pytest.mark.gpu)]


def _sm90_forward(monkeypatch, target):
    """FA4's `_flash_attn_fwd` as on an H100: on the PTX executor compiled for sm_90a unless "gpu"."""
    interface, mods = _score_mods()
    if target != "gpu":
        toolchain.require_libnvvm()
        monkeypatch.setenv("CUTE_DSL_TARGET", target)
        monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
        monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **kw: types.SimpleNamespace(cuda_stream=0))
    monkeypatch.setattr(interface._flash_attn_fwd, "compile_cache", {})  # its key does not name the target

    def forward(q, k, v, **kwargs):
        out = torch.empty_like(q)  # as FA4's run_cute_flash
        if target == "gpu":
            _, lse = interface._flash_attn_fwd(q, k, v, out=out, lse=None, return_lse=True, **kwargs)
            torch.cuda.synchronize()
        else:
            with _OnCpu():
                _, lse = interface._flash_attn_fwd(q, k, v, out=out, lse=None, return_lse=True, _compute_capability=9,
                                                   **kwargs)
        return out.cpu(), lse.cpu()
    return forward, mods


# ---- inputs and the float32 reference -------------------------------------------------------------

def _cu_seqlens(lens):
    return torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32)


def _tokens(lens, varlen, heads, head_dim, dtype, gen):
    """Packed (total, heads, d) with varlen, else batched (b, len, heads, d) (all lengths equal)."""
    if varlen:
        return torch.randn(sum(lens), heads, head_dim, generator=gen).to(dtype)
    assert len(set(lens)) == 1, "a batched tensor needs equal lengths"
    return torch.randn(len(lens), lens[0], heads, head_dim, generator=gen).to(dtype)


def _sequence(x, cu_seqlens, b):
    """Batch b's rows of a packed (cu_seqlens) or batched (cu_seqlens None) tensor."""
    return x[b] if cu_seqlens is None else x[cu_seqlens[b]:cu_seqlens[b + 1]]


def _reference(q, k, v, cu_q, cu_k, eager_mod):
    """(softmax(S) V, logsumexp(S)) per sequence and query head in float32, S = eager_mod(Q K^T /
    sqrt(d), b, h, q_idx, kv_idx) (query head h reads KV head h // (heads / heads_kv)); the output
    in q's layout, the LSE in FA4's ((b, h, s_q), or (h, total_q) with cu_seqlens_q). The indices
    broadcast over the (head, query, key) score grid, as flex_attention's vmap presents them one by one."""
    batch = len(cu_q) - 1 if cu_q is not None else q.shape[0]
    out = torch.empty(q.shape, dtype=torch.float32)
    lse = torch.empty(q.shape[:-1], dtype=torch.float32)  # (.., s_q, h): transposed at the end
    group = q.shape[-2] // k.shape[-2]
    for b in range(batch):
        qs = _sequence(q, cu_q, b).float().transpose(0, 1)  # (heads, len_q, d)
        ks, vs = (_sequence(x, cu_k, b).float().transpose(0, 1).repeat_interleave(group, 0) for x in (k, v))
        scores = qs @ ks.transpose(1, 2) * q.shape[-1] ** -0.5
        heads, len_q, len_k = scores.shape
        h, q_idx, kv_idx = (torch.arange(n).view(shape) for n, shape in
                            ((heads, (-1, 1, 1)), (len_q, (1, -1, 1)), (len_k, (1, 1, -1))))
        scores = eager_mod(scores, b, h, q_idx, kv_idx).float()
        _sequence(out, cu_q, b)[:] = (torch.softmax(scores, -1) @ vs).transpose(0, 1)
        _sequence(lse, cu_q, b)[:] = torch.logsumexp(scores, -1).transpose(0, 1)
    return out, lse.transpose(-1, -2)


def _tol(ref):
    return 1e-2 * max(1.0, ref.abs().max().item())  # bf16 / fp16 output and P


def _lse_tol(ref):
    return 1e-2 + 1e-4 * ref.abs()  # float32 throughout


def _check(got, ref, without_mod):
    """FA4's (out, lse) near the reference's, and far from attention without the score mod: out or
    LSE off by more than five times the tolerance (FA4's errors here stay under a third of it). A
    score mod that adds the same to a whole row (a bias by batch, head or query) changes only the LSE."""
    (out, lse), (ref_out, ref_lse), (plain_out, plain_lse) = got, ref, without_mod
    assert torch.isfinite(out).all() and torch.isfinite(lse).all()
    err = (out.float() - ref_out).abs().max().item()
    assert err <= _tol(ref_out), f"max error {err}"
    lse_excess = ((lse - ref_lse).abs() - _lse_tol(ref_lse)).max().item()
    assert lse_excess <= 0, f"LSE off by {lse_excess} more than its tolerance"
    out_change = (out.float() - plain_out).abs().max().item() / _tol(ref_out)
    lse_change = ((lse - plain_lse).abs() / _lse_tol(ref_lse)).max().item()
    assert max(out_change, lse_change) > 5, "the score mod changed nothing"


def _identity(score, b, h, q_idx, kv_idx):
    return score


# ---- test_varlen_with_score_mod: score mods on local indices, GQA 4:2 ------------------------------

LOCAL_CASES = [  # (score mod, aux, varlen_q, varlen_k, head_dim, dtype, lengths of q, lengths of k):
    # every score mod of FA4's TEST_PAIRS_NO_GLOBAL but the identity (which every case checks against)
    ("rel_bias", None, True, True, 128, torch.bfloat16, [37, 190], [37, 190]),
    ("rel_bias_x2", None, False, True, 128, torch.float16, [50, 50], [120, 33]),
    ("times_two", None, True, True, 128, torch.bfloat16, [64, 128], [32, 64]),
    ("alibi", None, True, False, 128, torch.float16, [100, 23], [150, 150]),
    ("sliding_window", None, True, True, 64, torch.bfloat16, [300, 20], [300, 40]),  # |q - kv| <= 256
    ("causal", None, False, True, 128, torch.bfloat16, [64, 64], [200, 41]),
    ("causal_v2", None, True, True, 128, torch.bfloat16, [113, 203], [113, 203]),
    ("block_diagonal", None, True, True, 64, torch.bfloat16, [70, 130], [96, 150]),
    ("batch_bias", "batch", True, True, 128, torch.bfloat16, [130, 45], [70, 201]),
    ("dual_buffer", "dual_buffer", True, False, 128, torch.float16, [90, 17], [120, 120]),
]

EAGER = {"batch_bias": "batch_bias_factory", "dual_buffer": "dual_buffer_factory"}  # the others: f"{name}_eager"


def _local_aux(mods, name, aux, lens_q, varlen_q, heads, dtype, gen):
    """The aux tensors of FA4's test for `aux` and the eager score mod reading them."""
    eager = getattr(mods, EAGER.get(name, f"{name}_eager"))
    if aux is None:
        return None, eager
    if aux == "batch":
        bias = torch.randn(len(lens_q), generator=gen).to(dtype)
        return [bias], eager(bias)
    head_bias = torch.randn(heads, generator=gen).to(dtype)
    pos_bias = (torch.arange(max(lens_q)) * 0.01).to(dtype)  # FA4's: query positions up to the longest
    return [head_bias, pos_bias], eager(head_bias, pos_bias)


def _run_local(monkeypatch, target, name, aux, varlen_q, varlen_k, head_dim, dtype, lens_q, lens_k, kv_heads=2,
               qhead_per_kvhead=4, seed=0):
    forward, mods = _sm90_forward(monkeypatch, target)
    gen = torch.Generator().manual_seed(seed)
    heads = kv_heads * qhead_per_kvhead
    q = _tokens(lens_q, varlen_q, heads, head_dim, dtype, gen)
    k, v = (_tokens(lens_k, varlen_k, kv_heads, head_dim, dtype, gen) for _ in range(2))
    cu_q, cu_k = (_cu_seqlens(lens) if varlen else None for lens, varlen in ((lens_q, varlen_q), (lens_k, varlen_k)))
    aux_tensors, eager = _local_aux(mods, name, aux, lens_q, varlen_q, heads, dtype, gen)
    device = "cuda" if target == "gpu" else "cpu"
    to = lambda t: None if t is None else t.to(device)  # noqa: E731
    got = forward(to(q), to(k), to(v), cu_seqlens_q=to(cu_q), cu_seqlens_k=to(cu_k),
                  score_mod=getattr(mods, f"score_mod_{name}"),
                  aux_tensors=None if aux_tensors is None else [to(t) for t in aux_tensors],
                  pack_gqa=qhead_per_kvhead > 1)
    _check(got, _reference(q, k, v, cu_q, cu_k, eager), _reference(q, k, v, cu_q, cu_k, _identity))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name,aux,varlen_q,varlen_k,head_dim,dtype,lens_q,lens_k", LOCAL_CASES)
def test_fa4_sm90_varlen_with_score_mod(monkeypatch, target, name, aux, varlen_q, varlen_k, head_dim, dtype, lens_q,
                                        lens_k):
    """As FA4's test_varlen_with_score_mod: GQA 4:2 by packed GQA, b / h / q / kv indices local to
    the sequence (the key tile is 192 wide for head dim 128, 128 for 64: 201 keys take two)."""
    _run_local(monkeypatch, target, name, aux, varlen_q, varlen_k, head_dim, dtype, lens_q, lens_k)


# ---- test_varlen_score_mod_kvcache / ..._with_paged_kvcache_global: the KV cache ------------------

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name,aux", [("times_two", None), ("dual_buffer", "dual_buffer")])
def test_fa4_sm90_varlen_score_mod_with_kv_cache(monkeypatch, target, name, aux):
    """As FA4's test_varlen_score_mod_kvcache with page_size None: packed queries against a batched
    (b, 250, h_k, d) KV cache (two key tiles), GQA 4:2."""
    _run_local(monkeypatch, target, name, aux, True, False, 128, torch.bfloat16, [5, 77], [250, 250])


@pytest.mark.parametrize("global_mod", [False, True])
def test_fa4_sm90_refuses_a_paged_kv_cache(monkeypatch, global_mod):
    """FA4's page_size=128 cases: its SM90 path refuses a page table before compiling (FA4's own
    limit, interface.py:439; its test xfails them on SM90)."""
    forward, mods = _sm90_forward(monkeypatch, "ptx")
    gen = torch.Generator().manual_seed(0)
    page_size, batch, kv_heads, head_dim = 128, 2, 2, 128
    q = torch.randn(12, 8, head_dim, generator=gen).to(torch.bfloat16)
    k_pages, v_pages = (torch.randn(6, page_size, kv_heads, head_dim, generator=gen).to(torch.bfloat16)
                        for _ in range(2))
    page_table = torch.randperm(6, generator=gen, dtype=torch.int32).view(batch, 3)
    score_mod, aux = ((mods.score_mod_global_q_bias, [torch.randn(12).to(torch.bfloat16)]) if global_mod
                      else (mods.score_mod_rel_bias, None))
    with pytest.raises(AssertionError, match="paged KV not supported on SM 9.0"):
        forward(q, k_pages, v_pages, cu_seqlens_q=_cu_seqlens([5, 7]),
                seqused_k=torch.tensor([384, 256], dtype=torch.int32), page_table=page_table, score_mod=score_mod,
                aux_tensors=aux, pack_gqa=True)


# ---- test_varlen_with_global_idx_score_mod: aux tensors indexed by global token indices -----------

GLOBAL_CASES = [  # (score mod, its eager factory, aux, varlen_q, varlen_k, (kv heads, q heads per kv head),
    #                lengths of q, lengths of k): every score mod of FA4's TEST_PAIRS_WITH_GLOBAL
    ("global_kv_bias", "packed_kv_bias_factory", "kv", False, True, (2, 4), [48, 48], [200, 33]),
    ("global_q_bias", "packed_q_bias_factory", "q", True, False, (1, 1), [77, 150], [64, 64]),
    ("global_rel_plus_kv_bias", "packed_rel_plus_kv_bias_factory", "kv", True, True, (2, 4), [40, 100], [90, 60]),
    ("global_q_and_kv_bias", "packed_q_and_kv_bias_factory", "q_and_kv", True, True, (1, 1), [61, 150], [61, 150]),
    ("global_logical_rel_plus_kv_bias", "packed_logical_rel_plus_kv_bias_factory", "kv", True, True, (1, 1),
     [17, 33, 65], [17, 33, 65]),
    ("stress_complex_arithmetic", "stress_complex_arithmetic_factory", "q_concat", True, False, (2, 4), [17, 200],
     [180, 180]),
    ("stress_conditional_mask", "stress_conditional_mask_factory", "kv_with_cu", True, True, (2, 4), [80, 3],
     [190, 100]),
    ("stress_multi_buffer", "stress_multi_buffer_factory", "multi_buffer", True, True, (2, 4), [100, 50], [50, 180]),
    ("stress_global_offset", "stress_global_offset_factory", "kv", False, True, (1, 1), [32, 32], [8, 160]),
    ("stress_xor_pattern", "stress_xor_pattern_factory", "kv_with_cu", True, True, (1, 1), [113, 29], [203, 64]),
    ("debug_global_idx", "debug_global_idx_factory", "kv", True, True, (2, 4), [56, 64], [190, 128]),
]


def _global_aux(eager_factory, aux, batch, heads, total_q, total_k, cu_q, cu_k, dtype, gen):
    """The aux tensors of FA4's test for `aux` (standard deviation 1 here) and the eager score mod."""
    randn = lambda n: torch.randn(n, generator=gen).to(dtype)  # noqa: E731
    if aux == "kv":
        bias = randn(total_k)
        return [bias], eager_factory(bias, cu_k)
    if aux in ("q", "q_concat"):
        bias = randn(total_q)
        return [bias], eager_factory(bias, cu_q)
    if aux == "q_and_kv":
        q_bias, kv_bias = randn(total_q), randn(total_k)
        return [q_bias, kv_bias], eager_factory(q_bias, kv_bias, cu_q, cu_k)
    if aux == "kv_with_cu":
        bias = randn(total_k)
        return [bias], eager_factory(bias, cu_q, cu_k)
    assert aux == "multi_buffer"
    max_rel_pos = 512
    buffers = [randn(batch), (torch.randn(heads, generator=gen) * 0.1 + 1.0).to(dtype), randn(total_q), randn(total_k),
               randn(2 * max_rel_pos + 1)]
    return buffers, eager_factory(*buffers, cu_q, cu_k, max_rel_pos)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name,factory,aux,varlen_q,varlen_k,gqa,lens_q,lens_k", GLOBAL_CASES)
def test_fa4_sm90_varlen_with_global_idx_score_mod(monkeypatch, target, name, factory, aux, varlen_q, varlen_k, gqa,
                                                   lens_q, lens_k):
    """As FA4's test_varlen_with_global_idx_score_mod (and its paged-KV-cache twin with page_size
    None): `seqlen_info.offset_q` / `offset_k` index aux tensors over all batches' tokens."""
    _run_global(monkeypatch, target, name, factory, aux, varlen_q, varlen_k, gqa, lens_q, lens_k)


EDGE_LENGTHS = [  # FA4's SEQLEN_CONFIGS with single tokens, and queries longer than keys
    ([1], [1]),
    ([1, 1], [1, 1]),
    ([239, 1], [239, 1]),
    ([1, 256, 1], [1, 256, 1]),
    ([100, 100], [50, 50]),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("lens_q,lens_k", EDGE_LENGTHS)
def test_fa4_sm90_varlen_global_idx_score_mod_edge_lengths(monkeypatch, target, lens_q, lens_k):
    """Biases by global query and key index (they move every row's LSE, even over a single key),
    GQA 4:2: 239 queries span eight 128-row tiles of packed heads, 256 keys two key tiles."""
    _run_global(monkeypatch, target, "global_q_and_kv_bias", "packed_q_and_kv_bias_factory", "q_and_kv", True, True,
                (2, 4), lens_q, lens_k)


def _run_global(monkeypatch, target, name, factory, aux, varlen_q, varlen_k, gqa, lens_q, lens_k):
    forward, mods = _sm90_forward(monkeypatch, target)
    gen = torch.Generator().manual_seed(1)
    kv_heads, qhead_per_kvhead = gqa
    heads, dtype, head_dim = kv_heads * qhead_per_kvhead, torch.bfloat16, 128
    q = _tokens(lens_q, varlen_q, heads, head_dim, dtype, gen)
    k, v = (_tokens(lens_k, varlen_k, kv_heads, head_dim, dtype, gen) for _ in range(2))
    cu_q, cu_k = _cu_seqlens(lens_q), _cu_seqlens(lens_k)  # FA4's eager mods index with both
    aux_tensors, eager = _global_aux(getattr(mods, factory), aux, len(lens_q), heads, sum(lens_q), sum(lens_k), cu_q,
                                     cu_k, dtype, gen)
    device = "cuda" if target == "gpu" else "cpu"
    got = forward(q.to(device), k.to(device), v.to(device),
                  cu_seqlens_q=cu_q.to(device) if varlen_q else None,
                  cu_seqlens_k=cu_k.to(device) if varlen_k else None,
                  score_mod=getattr(mods, f"score_mod_{name}"), aux_tensors=[t.to(device) for t in aux_tensors],
                  pack_gqa=qhead_per_kvhead > 1)
    ref_cu_q, ref_cu_k = cu_q if varlen_q else None, cu_k if varlen_k else None
    _check(got, _reference(q, k, v, ref_cu_q, ref_cu_k, eager), _reference(q, k, v, ref_cu_q, ref_cu_k, _identity))
