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

import toolchain  # noqa: E402
from test_libraries import _OnCpu, _close, _fa4_interface  # noqa: E402


@pytest.fixture(autouse=True)
def _keep_cute_compile():
    """FA4's package replaces cute.compile with its own function when imported: put OpenCuTe's back."""
    import cutlass.cute as cute
    saved = cute.compile
    yield
    cute.compile = saved


def _attention_and_lse(q, k, v, causal):
    """Softmax(Q K^T / sqrt(d)) V and the rows' log-sum-exp, in float32; causal masks align the
    last query with the last key (FA4's convention); with fewer K / V heads than Q heads (GQA) each
    K / V head serves consecutive Q heads."""
    sq, sk = q.shape[1], k.shape[1]
    k, v = (x.repeat_interleave(q.shape[2] // k.shape[2], dim=2) for x in (k, v))
    scores = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) * q.shape[-1] ** -0.5
    if causal:
        rows = torch.arange(sq)[:, None] + (sk - sq)
        scores = scores.masked_fill(torch.arange(sk)[None, :] > rows, float("-inf"))
    out = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(scores, -1), v.float())
    return out, torch.logsumexp(scores, -1)


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


def test_fa4_sm100_kernels_link_to_sm100a_cubins(monkeypatch):
    """The forward's and the backward's kernels, lowered and linked by nvJitLink for sm_100a
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
    kernels = [*interface._flash_attn_fwd.compile_cache.values(), *interface._flash_attn_bwd.compile_cache.values()]
    assert len(kernels) == 2
    for compiled in kernels:
        assert compiled.__cubin__[:4] == b"\x7fELF"
