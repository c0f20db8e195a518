"""Real CuTe DSL libraries, unchanged (issue 23): quack's kernels and FlashAttention-4's SM90
forward, checked against torch. Skipped unless quack (`pip install --no-deps -e <quack>`) and
torch are installed; FlashAttention-4 is found at $FLASH_ATTENTION_DIR (a flash-attention
checkout). On the CPU the kernels run on the emulator (torch CPU tensors); the `gpu` tests run them
on the GPU.

quack.gemm_sm100, which quack's GEMM front end imports at module level, is replaced by an empty
placeholder where it does not import (the SM90 tests do not need it). FA4's Blackwell modules
import as they are; test_fa4_sm100.py runs its SM100 forward on the PTX executor."""
import importlib
import os
import re
import sys
import types

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("quack")
pytest.importorskip("cuda.bindings.driver")

import numpy as np  # noqa: E402

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

FA4_DIR = os.environ.get("FLASH_ATTENTION_DIR", "/work/libs/flash-attention")


def _quack(name):
    return importlib.import_module(f"quack.{name}")


def _body(op):
    """The function behind a torch custom op (quack wraps its launchers in torch.library)."""
    return getattr(op, "_init_fn", op)


class _OnCpu:
    """quack asserts `is_cuda` on its inputs: on the CPU (emulator) answer as a GPU would while
    quack validates, and not when OpenCuTe checks where the memory is."""

    def __enter__(self):
        self.saved = torch.Tensor.is_cuda
        torch.Tensor.is_cuda = property(lambda self: True)

    def __exit__(self, *exc):
        torch.Tensor.is_cuda = self.saved


def _device(target):
    return "cuda" if target == "gpu" else "cpu"


TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def _close(got, ref, tol):
    err = (got.float().cpu() - ref.float().cpu()).abs().max().item()
    assert err <= tol, f"max error {err}"


# ---- quack: norms, softmax, cross-entropy, top-k -------------------------------------------------

def _run(target, fn):
    if target == "cpu":
        with _OnCpu():
            fn()
    else:
        fn()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype,N", [(torch.float32, 1000), (torch.bfloat16, 384)])
def test_quack_rmsnorm_layernorm(target, dtype, N):
    rn = _quack("rmsnorm")
    dev = _device(target)
    x, w = torch.randn(5, N, dtype=dtype, device=dev), torch.randn(N, device=dev)
    out, rstd, mean = torch.empty_like(x), torch.empty(5, device=dev), torch.empty(5, device=dev)
    tol = 1e-4 if dtype == torch.float32 else 5e-2
    _run(target, lambda: _body(rn._rmsnorm_fwd)(x, w, out, None, rstd, None, None, None, 1e-6, False))
    _close(out, rn.rmsnorm_ref(x, w, eps=1e-6), tol)
    _run(target, lambda: _body(rn._rmsnorm_fwd)(x, w, out, None, rstd, mean, None, None, 1e-6, True))
    _close(out, rn.layernorm_ref(x, w, eps=1e-6), tol * 10)


def test_quack_cluster_rmsnorm_on_the_ptx_executor(monkeypatch):
    """N = 40K in fp32: two CTAs of a cluster share each row; their partial sums reach each other by
    quack's st.async, whose bytes complete the peer's mbarrier."""
    import toolchain
    toolchain.require_libnvvm()
    monkeypatch.setenv("CUTE_DSL_TARGET", "ptx")
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    rn = _quack("rmsnorm")
    x, w = torch.randn(2, 40 * 1024), torch.randn(40 * 1024)
    out, rstd = torch.empty_like(x), torch.empty(2)
    _run("cpu", lambda: _body(rn._rmsnorm_fwd)(x, w, out, None, rstd, None, None, None, 1e-6, False))
    _close(out, rn.rmsnorm_ref(x, w, eps=1e-6), 1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_quack_rmsnorm_backward(target):
    rn = _quack("rmsnorm")
    dev = _device(target)
    M, N = 4, 256
    x, w, dout = torch.randn(M, N, device=dev), torch.randn(N, device=dev), torch.randn(M, N, device=dev)
    rstd = torch.rsqrt(x.pow(2).mean(-1) + 1e-6)
    dx, dw_partial = torch.empty_like(x), torch.empty(2, N, device=dev)
    _run(target, lambda: _body(rn._rmsnorm_bwd)(x, w, dout, rstd, dx, dw_partial, None, None, None, 2))
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    rn.rmsnorm_ref(xr, wr, eps=1e-6).backward(dout)
    _close(dx, xr.grad, 1e-4)
    _close(dw_partial.sum(0), wr.grad, 1e-3)


@pytest.mark.parametrize("target", TARGETS)
def test_quack_softmax_forward_backward(target):
    sm = _quack("softmax")
    dev = _device(target)
    x, dy = torch.randn(4, 256, device=dev), torch.randn(4, 256, device=dev)
    out, dx = torch.empty_like(x), torch.empty_like(x)
    _run(target, lambda: _body(sm._softmax_fwd)(x, out))
    y = torch.softmax(x, -1)
    _close(out, y, 1e-5)
    _run(target, lambda: _body(sm._softmax_backward)(dy, y, dx))
    _close(dx, y * (dy - (dy * y).sum(-1, keepdim=True)), 1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_quack_cross_entropy_forward_backward(target):
    ce = _quack("cross_entropy")
    dev = _device(target)
    M, N = 4, 256
    x, t = torch.randn(M, N, device=dev), torch.randint(0, N, (M,), device=dev)
    loss, lse = torch.empty(M, device=dev), torch.empty(M, device=dev)
    _run(target, lambda: _body(ce.cross_entropy_fwd_out)(x, t, None, loss, lse, None, -100))
    _close(loss, torch.nn.functional.cross_entropy(x, t, reduction="none"), 1e-4)
    _close(lse, torch.logsumexp(x, -1), 1e-4)
    dloss, dx = torch.randn(M, device=dev), torch.empty_like(x)
    _run(target, lambda: _body(ce._cross_entropy_backward)(x, t, dloss, lse, dx, -100))
    xr = x.clone().requires_grad_()
    torch.nn.functional.cross_entropy(xr, t, reduction="none").backward(dloss)
    _close(dx, xr.grad, 1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_quack_topk(target):
    tk = _quack("topk")
    dev = _device(target)
    x = torch.randn(4, 64, device=dev)
    values, indices = torch.empty(4, 8, device=dev), torch.empty(4, 8, dtype=torch.int32, device=dev)
    _run(target, lambda: _body(tk._topk_fwd)(x, 8, False, values, indices))
    ref = torch.topk(x, 8, dim=-1)
    _close(values, ref.values, 1e-3)  # quack keeps the index in the value's low bits
    _close(torch.gather(x, 1, indices.long()), ref.values, 0)


# ---- quack: the SM90 GEMM ---------------------------------------------------------------------

def _quack_gemm_module():
    try:
        _quack("gemm_sm100")
    except Exception:  # noqa: BLE001 - an SM100 name OpenCuTe lacks: the SM90 tests do not need the class
        sys.modules.setdefault("quack.gemm_sm100", types.SimpleNamespace(GemmSm100=type("GemmSm100", (), {})))
    return _quack("gemm")


@pytest.mark.gpu
@pytest.mark.parametrize("pingpong,persistent,add", [(False, True, False), (True, True, False),
                                                     (False, False, False), (False, True, True)])
def test_gpu_quack_sm90_gemm(pingpong, persistent, add):
    qg = _quack_gemm_module()
    L, M, N, K = 2, 256, 384, 512
    A = torch.randn(L, M, K, dtype=torch.bfloat16, device="cuda")
    B = torch.randn(L, N, K, dtype=torch.bfloat16, device="cuda")
    D = torch.randn(L, M, N, dtype=torch.bfloat16, device="cuda")
    D0 = D.float().clone()
    qg.gemm(A, B, D, None, None, tile_M=128, tile_N=128, cluster_M=1, cluster_N=1, pingpong=pingpong,
            persistent=persistent, add_to_output=add)
    ref = torch.einsum("lmk,lnk->lmn", A.float(), B.float()) + (D0 if add else 0)
    _close(D, ref, 1.0)


# ---- FlashAttention-4: the SM90 forward ----------------------------------------------------------

def _fa4_interface():
    if not os.path.isdir(os.path.join(FA4_DIR, "flash_attn", "cute")):
        pytest.skip("no flash-attention checkout at $FLASH_ATTENTION_DIR")
    if "flash_attn" not in sys.modules:
        # flash_attn/__init__.py imports FlashAttention-2's CUDA extension: load flash_attn.cute alone.
        pkg = types.ModuleType("flash_attn")
        pkg.__path__ = [os.path.join(FA4_DIR, "flash_attn")]
        sys.modules["flash_attn"] = pkg
    return importlib.import_module("flash_attn.cute.interface")


def _fa4_on_the_ptx_executor(monkeypatch):
    """FA4's interface with its kernels compiled for the PTX executor (CPU tensors) in this test."""
    from cutlass import _core
    if not _core.libnvvm_available():
        pytest.skip("libNVVM not found: the ptx target needs it")
    interface = _fa4_interface()
    monkeypatch.setenv("CUTE_DSL_TARGET", "ptx")
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: types.SimpleNamespace(cuda_stream=0))
    for launcher in (interface._flash_attn_fwd, interface._flash_attn_fwd_combine):
        monkeypatch.setattr(launcher, "compile_cache", {})  # their keys do not name the target
    return interface


def _attention_ref(q, k, v, causal):
    t = lambda x: x.transpose(1, 2).float()  # noqa: E731
    return torch.nn.functional.scaled_dot_product_attention(t(q), t(k), t(v), is_causal=causal).transpose(1, 2)


@pytest.mark.gpu
@pytest.mark.parametrize("causal,head_dim,seqlen", [(False, 128, 512), (True, 128, 300), (False, 64, 256)])
def test_gpu_fa4_sm90_forward(causal, head_dim, seqlen):
    interface = _fa4_interface()
    q, k, v = (torch.randn(2, seqlen, 4, head_dim, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    out, lse = interface._flash_attn_fwd(q, k, v, causal=causal, return_lse=True)
    _close(out, _attention_ref(q, k, v, causal), 2e-2)


def test_fa4_sm90_forward_compiles_for_sm90a(monkeypatch, tmp_path):
    """Without a GPU: the forward traces and compiles for sm_90a (the launch needs a GPU)."""
    if torch.cuda.is_available():
        pytest.skip("covered by test_gpu_fa4_sm90_forward")
    interface = _fa4_interface()
    monkeypatch.setenv("CUTE_DSL_TARGET", "gpu")
    monkeypatch.setenv("CUTE_DSL_KEEP_PTX", "1")
    monkeypatch.setenv("CUTE_DSL_DUMP_DIR", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: types.SimpleNamespace(cuda_stream=0))
    q, k, v = (torch.randn(1, 128, 1, 64, dtype=torch.bfloat16) for _ in range(3))
    with _OnCpu(), pytest.raises(ValueError, match="device_type"):  # compiled; the CPU tensors are refused
        interface._flash_attn_fwd(q, k, v, causal=True, _compute_capability=9)
    ptx = "".join(p.read_text() for p in tmp_path.glob("*.ptx"))
    assert ".target sm_90a" in ptx and "wgmma.mma_async.sync.aligned.m64n" in ptx
    assert "cp.async.bulk.tensor" in ptx


def _fa4_forward_ptx_against_sdpa(monkeypatch, shape, causal, seed):
    """FA4's SM90 forward of random bf16 q, k, v of `shape` (batch, seqlen, heads, head dim) run on
    the PTX executor and checked against SDPA; its PTX."""
    interface = _fa4_on_the_ptx_executor(monkeypatch)
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*shape, dtype=torch.bfloat16, generator=gen) for _ in range(3))
    with _OnCpu():
        out, _ = interface._flash_attn_fwd(q, k, v, causal=causal, _compute_capability=9, return_lse=True)
    _close(out, _attention_ref(q, k, v, causal), 2e-2)
    (compiled,) = interface._flash_attn_fwd.compile_cache.values()
    return compiled.__ptx__


@pytest.mark.parametrize("causal", [False, True])
def test_fa4_sm90_forward_on_the_ptx_executor(monkeypatch, causal):
    """Without a GPU: the forward's PTX for head dim 128 (a 192-wide key tile without causal
    masking, 128 with it; 640 keys, so that the main loop runs) executed on the CPU, against SDPA.
    Its P*V wgmmas read no A register written after their wgmma.fence: ptxas would otherwise
    fence each of them on its own, serialising the GEMM (wgmma_fence_rule)."""
    from wgmma_fence_rule import a_registers_written_after_the_fence
    ptx = _fa4_forward_ptx_against_sdpa(monkeypatch, (1, 640, 1, 128), causal, seed=0)
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ptx
    assert a_registers_written_after_the_fence(ptx) == []


def test_fa4_sm90_causal_forward_lpt_tiles_on_the_ptx_executor(monkeypatch):
    """FA4's causal forward orders its tiles longest first (SingleTileLPTScheduler): each CTA takes
    its query block, head and batch apart with FastDivmodDivisors prepared in the host program
    (multiply-high divisions). 3 batches x 5 heads x 3 query blocks, head dim 64, so that the
    divisors are neither 1 nor powers of two; every tile must land once, against SDPA."""
    ptx = _fa4_forward_ptx_against_sdpa(monkeypatch, (3, 384, 5, 64), True, seed=1)
    assert not re.search(r"\b(div|rem)\.[su](32|64)\b", ptx), "the scheduler's divisions are multiplies"


def test_fa4_combine_on_the_ptx_executor(monkeypatch):
    """FA4's split-KV combine kernel splits each CTA's rows into (batch, seqlen, head) with
    FastDivmodDivisors made in the host program: 3 splits of 5 batches x 113 queries x 6 heads,
    head dim 64, the later splits of the first batch empty (LSE -inf), against torch's logsumexp
    weighting of the partial outputs."""
    interface = _fa4_on_the_ptx_executor(monkeypatch)
    gen = torch.Generator().manual_seed(2)
    splits, batch, seqlen, heads, d = 3, 5, 113, 6, 64
    out_partial = torch.randn(splits, batch, seqlen, heads, d, generator=gen)
    lse_partial = torch.randn(splits, batch, heads, seqlen, generator=gen).transpose(-1, -2)
    lse_partial[1:, :1] = -float("inf")
    out = torch.empty(batch, seqlen, heads, d, dtype=torch.bfloat16)
    lse = torch.empty(batch, heads, seqlen).transpose(-1, -2)  # seqlen-major, as FA4 allocates it
    with _OnCpu():
        interface._flash_attn_fwd_combine(out_partial, lse_partial, out, lse)
    lse_ref = torch.logsumexp(lse_partial, dim=0)
    out_ref = (torch.exp(lse_partial - lse_ref).unsqueeze(-1) * out_partial).sum(0)
    torch.testing.assert_close(lse, lse_ref, atol=1e-5, rtol=1e-5)
    rounding = (out_ref.to(torch.bfloat16).float() - out_ref).abs().max().item()
    _close(out.float(), out_ref, 2 * rounding)  # FA4's own criterion: twice bf16's rounding of the reference


def _quack_gemm_ptx_for_sm90a(monkeypatch, tmp_path, A, B, D, launcher="gemm", **config):
    """Without a GPU: quack's SM90 GEMM (`launcher`: a function of quack.gemm or quack.gemm_act,
    called with A, B, D, C=None, then the rest of `config`'s arguments) traced and compiled for
    sm_90a; its PTX (the launch refuses the CPU tensors)."""
    _quack_gemm_module()
    qg = _quack("gemm_act" if launcher == "gemm_act" else "gemm")
    import cuda.bindings.driver as cuda_driver
    import cutlass.torch as cutlass_torch
    monkeypatch.setattr(qg, "get_device_capacity", lambda device=None: (9, 0))
    monkeypatch.setattr(qg, "get_max_active_clusters", lambda n: 132 // n)
    monkeypatch.setattr(cutlass_torch, "current_stream", lambda: cuda_driver.CUstream(0))
    validate = qg.GemmWrapperBase.validate_and_prepare_tensors

    def validate_on_cpu(*args, **kwargs):
        with _OnCpu():
            return validate(*args, **kwargs)

    monkeypatch.setattr(qg.GemmWrapperBase, "validate_and_prepare_tensors", staticmethod(validate_on_cpu))
    monkeypatch.setenv("CUTE_DSL_TARGET", "gpu")
    monkeypatch.setenv("CUTE_DSL_KEEP_PTX", "1")
    monkeypatch.setenv("CUTE_DSL_DUMP_DIR", str(tmp_path))
    with pytest.raises(cutlass.DSLRuntimeError, match="host memory"):  # compiled; the CPU tensors are refused
        getattr(qg, launcher)(A, B, D, None, **({"tile_count_semaphore": None} | config))
    return "".join(p.read_text() for p in tmp_path.glob("*.ptx"))


def test_quack_sm90_gemm_compiles_for_sm90a(monkeypatch, tmp_path):
    """Without a GPU: quack's SM90 GEMM traces and compiles for sm_90a."""
    if torch.cuda.is_available():
        pytest.skip("covered by test_gpu_quack_sm90_gemm")
    A, B = torch.randn(1, 128, 64, dtype=torch.bfloat16), torch.randn(1, 128, 64, dtype=torch.bfloat16)
    D = torch.empty(1, 128, 128, dtype=torch.bfloat16)
    ptx = _quack_gemm_ptx_for_sm90a(monkeypatch, tmp_path, A, B, D, tile_M=128, tile_N=128, cluster_M=1,
                                    cluster_N=1, add_to_output=True)
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ptx
    assert "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group" in ptx


# quack's default configuration (tile 128 x 192, cluster 2 x 1) with an N-major B, and its mirror
# (an M-major A, tile_M 192, cluster 1 x 2): the multicast operand's 192-row tile is three rows of
# 64-element swizzle atoms, which two CTAs cannot split; each loads half of K in three instructions.
MULTICAST_MN_MAJOR = [
    pytest.param("B", dict(tile_M=128, tile_N=192, cluster_M=2, cluster_N=1), id="n_major_b"),
    pytest.param("A", dict(tile_M=192, tile_N=128, cluster_M=1, cluster_N=2), id="m_major_a"),
]


def _mn_major_operands(major, L, M, N, K, device):
    if major == "A":
        return (torch.randn(L, K, M, dtype=torch.bfloat16, device=device).transpose(1, 2),
                torch.randn(L, N, K, dtype=torch.bfloat16, device=device))
    return (torch.randn(L, M, K, dtype=torch.bfloat16, device=device),
            torch.randn(L, K, N, dtype=torch.bfloat16, device=device).transpose(1, 2))


@pytest.mark.parametrize("major,config", MULTICAST_MN_MAJOR)
def test_quack_sm90_gemm_multicasts_an_mn_major_operand_in_three_boxes(monkeypatch, tmp_path, major, config):
    if torch.cuda.is_available():
        pytest.skip("covered by test_gpu_quack_sm90_gemm_multicast_mn_major")
    A, B = _mn_major_operands(major, 1, 384, 384, 128, "cpu")
    D = torch.empty(1, 384, 384, dtype=torch.bfloat16)
    ptx = _quack_gemm_ptx_for_sm90a(monkeypatch, tmp_path, A, B, D, pingpong=False, **config)
    multicast_loads = re.findall(r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global\.mbarrier::"
                                 r"complete_tx::bytes\.multicast::cluster", ptx)
    assert len(multicast_loads) == 3


@pytest.mark.gpu
@pytest.mark.parametrize("major,config", MULTICAST_MN_MAJOR)
def test_gpu_quack_sm90_gemm_multicast_mn_major(major, config):
    qg = _quack_gemm_module()
    L, M, N, K = 2, 384, 384, 512
    A, B = _mn_major_operands(major, L, M, N, K, "cuda")
    D = torch.empty(L, M, N, dtype=torch.bfloat16, device="cuda")
    qg.gemm(A, B, D, None, None, pingpong=False, **config)
    _close(D, torch.einsum("lmk,lnk->lmn", A.float(), B.float()), 1.0)


# ---- FlashAttention-4: packed GQA (query heads of a KV head in the sequence mode) ------------------

def test_fa4_sm90_forward_packed_gqa_compiles_for_sm90a(monkeypatch, tmp_path):
    """Without a GPU: with 4 query heads per KV head packed into the sequence mode, ((4, seqlen), d),
    the query's TMA has one tensor-map dimension per leaf: d, h, s, d's second half and the rest."""
    if torch.cuda.is_available():
        pytest.skip("covered by test_gpu_fa4_sm90_forward_packed_gqa")
    interface = _fa4_interface()
    monkeypatch.setenv("CUTE_DSL_TARGET", "gpu")
    monkeypatch.setenv("CUTE_DSL_KEEP_PTX", "1")
    monkeypatch.setenv("CUTE_DSL_DUMP_DIR", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: types.SimpleNamespace(cuda_stream=0))
    q = torch.randn(1, 128, 4, 128, dtype=torch.bfloat16)
    k, v = (torch.randn(1, 128, 1, 128, dtype=torch.bfloat16) for _ in range(2))
    with _OnCpu(), pytest.raises(ValueError, match="device_type"):  # compiled; the CPU tensors are refused
        interface._flash_attn_fwd(q, k, v, causal=True, pack_gqa=True, _compute_capability=9)
    ptx = "".join(p.read_text() for p in tmp_path.glob("*.ptx"))
    assert "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("causal,head_dim,qhead_per_kvhead", [(True, 128, 4), (False, 64, 2), (True, 64, 8)])
def test_gpu_fa4_sm90_forward_packed_gqa(causal, head_dim, qhead_per_kvhead):
    interface = _fa4_interface()
    q = torch.randn(2, 300, 2 * qhead_per_kvhead, head_dim, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(2, 300, 2, head_dim, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    out, _ = interface._flash_attn_fwd(q, k, v, causal=causal, pack_gqa=True, return_lse=True)
    kk, vv = (x.repeat_interleave(qhead_per_kvhead, dim=2) for x in (k, v))
    _close(out, _attention_ref(q, kk, vv, causal), 2e-2)


# ---- FlashAttention-4: variable-length sequences (cu_seqlens), as tests/cute/test_flash_attn_varlen.py
#      runs them on SM90 (forward only). Its SingleTileVarlenScheduler ends a CTA's tile loop with a
#      Python flag, `_is_first_block`, which a dynamic region inside get_current_work() once reset:
#      every kernel looped forever (the whole FA4 file hung on the H100) -----------------------------

def _varlen_inputs(lens, heads, heads_kv, head_dim, device, seed=0):
    gen = torch.Generator().manual_seed(seed)
    total = sum(lens)
    q = torch.randn(total, heads, head_dim, generator=gen).to(torch.bfloat16)
    k, v = (torch.randn(total, heads_kv, head_dim, generator=gen).to(torch.bfloat16) for _ in range(2))
    cu_seqlens = torch.tensor([0] + list(np.cumsum(lens)), dtype=torch.int32)
    return [t.to(device) for t in (q, k, v, cu_seqlens)]


def _varlen_ref(q, k, v, cu_seqlens, causal):
    """Each sequence on its own: softmax(Q K^T / sqrt(d)) V, the KV heads shared by their query heads."""
    group = q.shape[1] // k.shape[1]
    out = torch.empty(q.shape, dtype=torch.float32)
    for start, end in zip(cu_seqlens[:-1].tolist(), cu_seqlens[1:].tolist()):
        qs, ks, vs = (x[start:end].cpu().float().transpose(0, 1) for x in (q, k, v))
        ks, vs = (x.repeat_interleave(group, dim=0) for x in (ks, vs))
        out[start:end] = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=causal).transpose(0, 1)
    return out


VARLEN_CASES = [  # (causal, head_dim, heads, heads_kv, sequence lengths): mha, and packed gqa
    (False, 64, 1, 1, [8, 40, 1]),
    (True, 128, 4, 2, [33, 130, 5]),
]


@pytest.mark.parametrize("causal,head_dim,heads,heads_kv,lens", VARLEN_CASES)
def test_fa4_sm90_varlen_forward_on_the_ptx_executor(monkeypatch, causal, head_dim, heads, heads_kv, lens):
    interface = _fa4_on_the_ptx_executor(monkeypatch)
    q, k, v, cu_seqlens = _varlen_inputs(lens, heads, heads_kv, head_dim, "cpu")
    with _OnCpu():
        out, _ = interface._flash_attn_fwd(q, k, v, cu_seqlens_q=cu_seqlens, cu_seqlens_k=cu_seqlens.clone(),
                                           causal=causal, _compute_capability=9, return_lse=True)
    _close(out, _varlen_ref(q, k, v, cu_seqlens, causal), 2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("causal,head_dim", [(False, 64), (True, 64), (False, 128), (True, 128)])
def test_gpu_fa4_sm90_varlen_forward(causal, head_dim):
    interface = _fa4_interface()
    lens = [1, 2048, 77, 300, 128, 8, 1000]
    q, k, v, cu_seqlens = _varlen_inputs(lens, 6, 2, head_dim, "cuda")
    out, _ = interface._flash_attn_fwd(q, k, v, cu_seqlens_q=cu_seqlens, cu_seqlens_k=cu_seqlens.clone(),
                                       causal=causal, return_lse=True)
    torch.cuda.synchronize()
    _close(out, _varlen_ref(q, k, v, cu_seqlens, causal), 2e-2)


# ---- quack's GEMM + activation (linear_act) with a bias: runtime tensors inside its epilogue
# argument dataclass, and an N-major B whose N is no multiple of the 64-element swizzle atom --------

def test_quack_gemm_act_with_bias_compiles_for_sm90a(monkeypatch, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("covered by test_gpu_quack_gemm_act_with_bias")
    A, B = torch.randn(1, 256, 128, dtype=torch.bfloat16), torch.randn(1, 256, 128, dtype=torch.bfloat16)
    D, PostAct = (torch.empty(1, 256, 256, dtype=torch.bfloat16) for _ in range(2))
    ptx = _quack_gemm_ptx_for_sm90a(monkeypatch, tmp_path, A, B, D, launcher="gemm_act", PostAct=PostAct,
                                    activation="relu", tile_M=128, tile_N=128, cluster_M=1, cluster_N=1,
                                    rowvec_bias=torch.randn(1, 256))
    # D and the post-activation output, each stored by TMA
    assert ptx.count("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group") >= 2


@pytest.mark.gpu
@pytest.mark.parametrize("store_preact", [False, True])
def test_gpu_quack_gemm_act_with_bias(store_preact):
    ga = (_quack_gemm_module(), _quack("gemm_act"))[1]
    L, M, N, K = 1, 320, 1504, 736
    A = torch.randn(L, M, K, dtype=torch.bfloat16, device="cuda")
    B = torch.randn(L, N, K, dtype=torch.bfloat16, device="cuda") / K ** 0.5
    bias = torch.randn(L, N, dtype=torch.float32, device="cuda")
    D = torch.empty(L, M, N, dtype=torch.bfloat16, device="cuda") if store_preact else None
    PostAct = torch.empty(L, M, N, dtype=torch.bfloat16, device="cuda")
    ga.gemm_act(A, B, D, None, PostAct, None, "relu", 128, 192, 2, 1, pingpong=False, rowvec_bias=bias)
    ref = torch.einsum("lmk,lnk->lmn", A.float(), B.float()) + bias[:, None, :]
    _close(PostAct, torch.relu(ref), 0.1)
    if store_preact:
        _close(D, ref, 0.1)


def test_quack_gemm_add_n_major_b_with_ragged_n_compiles_for_sm90a(monkeypatch, tmp_path):
    """quack's gemm_add_inplace of test_linear with n = 1504 (23.5 swizzle atoms; here 200): B's
    tile of 192 N-contiguous rows cannot split N into 64-element runs that TMA would clip at the
    extent, so N stays one tensor-map dimension and each copy is three instructions (as CuTe's)."""
    if torch.cuda.is_available():
        pytest.skip("covered by test_gpu_quack_gemm_add_n_major_b_with_ragged_n")
    A, B = _mn_major_operands("B", 1, 256, 200, 128, "cpu")
    D = torch.randn(1, 256, 200, dtype=torch.bfloat16)
    ptx = _quack_gemm_ptx_for_sm90a(monkeypatch, tmp_path, A, B, D, pingpong=False, add_to_output=True,
                                    tile_M=128, tile_N=192, cluster_M=1, cluster_N=1)
    loads = re.findall(r"cp\.async\.bulk\.tensor\.(\d)d\.shared::cluster\.global\.mbarrier", ptx)
    # A: (k, m, l), one box; B: (n, k, n's three 64-row runs (extent 1), l), three boxes
    assert sorted(loads) == ["3", "4", "4", "4"]


@pytest.mark.gpu
@pytest.mark.parametrize("m,k", [(960, 736), (1920, 1024)])
def test_gpu_quack_gemm_add_n_major_b_with_ragged_n(m, k):
    qg = _quack_gemm_module()
    A, B = _mn_major_operands("B", 1, m, 1504, k, "cuda")
    D = torch.randn(1, m, 1504, dtype=torch.bfloat16, device="cuda")
    D0 = D.float().clone()
    qg.gemm(A, B, D, None, None, tile_M=128, tile_N=192, cluster_M=2, cluster_N=1, pingpong=False,
            add_to_output=True)
    _close(D, D0 + torch.einsum("lmk,lnk->lmn", A.float(), B.float()), 1.0)


# ---- quack's variable-length GEMMs (its test_linear_varlen_m / _k): groups of rows (cu_seqlens_m)
# or of K (cu_seqlens_k) in one launch, tensor maps rewritten per group in a workspace, and gather_A
# (A's rows or columns read through A_idx by cp.async) ---------------------------------------------

def _varlen_groups(device, lengths=(200, 64, 300)):
    seqlens = torch.tensor(lengths, dtype=torch.int32)
    cu = torch.cat([torch.zeros(1, dtype=torch.int32), seqlens.cumsum(0).to(torch.int32)]).to(device)
    return cu, int(seqlens.sum())


def _gather_rows(total, device, gather_A):
    """A_idx picking `total` rows of twice as many, or None."""
    return torch.randperm(2 * total, device=device, dtype=torch.int32)[:total] if gather_A else None


def _tensormap_workspace_aligned(monkeypatch):
    """quack allocates its tensor-map workspace with torch.empty and asks for 128-byte alignment,
    which CUDA allocations have and CPU ones need not."""
    gwu = _quack("gemm_wrapper_utils")

    class AlignedEmpty:
        def __getattr__(self, name):
            return getattr(torch, name)

        def empty(self, shape, dtype, device=None):
            count, size = int(torch.Size(shape).numel()), torch.empty((), dtype=dtype).element_size()
            raw = torch.empty(count + 128 // size, dtype=dtype)
            skip = (-raw.data_ptr() % 128) // size
            return raw[skip:skip + count].view(shape)

    monkeypatch.setattr(gwu, "torch", AlignedEmpty())


@pytest.mark.parametrize("gather_A", [False, True])
def test_quack_sm90_varlen_m_gemm_compiles_for_sm90a(monkeypatch, tmp_path, gather_A):
    """quack's default configuration (tile 128 x 192, cluster 2 x 1, pingpong) over 3 groups of
    rows; with gather_A the producer warps read A's rows through A_idx (tiler_mn[0].shape)."""
    if torch.cuda.is_available():
        pytest.skip("covered by test_gpu_quack_sm90_varlen_m_gemm")
    _tensormap_workspace_aligned(monkeypatch)
    cu, total = _varlen_groups("cpu")
    A_idx = _gather_rows(total, "cpu", gather_A)
    A = torch.randn(2 * total if gather_A else total, 256, dtype=torch.bfloat16)
    B = torch.randn(3, 256, 256, dtype=torch.bfloat16)
    D = torch.empty(total, 256, dtype=torch.bfloat16)
    ptx = _quack_gemm_ptx_for_sm90a(monkeypatch, tmp_path, A, B, D, tile_M=128, tile_N=192, cluster_M=2,
                                    cluster_N=1, pingpong=True, cu_seqlens_m=cu, A_idx=A_idx)
    assert "tensormap.replace.tile.global_dim" in ptx  # D's tensor map, resized for each group
    assert ("cp.async.cg.shared.global" in ptx) == gather_A


def test_quack_sm90_varlen_k_gemm_compiles_for_sm90a(monkeypatch, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("covered by test_gpu_quack_sm90_varlen_k_gemm")
    _tensormap_workspace_aligned(monkeypatch)
    cu, total = _varlen_groups("cpu")
    A = torch.randn(total, 256, dtype=torch.bfloat16).T  # (m, total_k), m-major
    B = torch.randn(total, 256, dtype=torch.bfloat16).T  # (n, total_k), n-major
    D = torch.empty(3, 256, 256, dtype=torch.bfloat16)
    ptx = _quack_gemm_ptx_for_sm90a(monkeypatch, tmp_path, A, B, D, tile_M=128, tile_N=192, cluster_M=2,
                                    cluster_N=1, pingpong=True, cu_seqlens_k=cu)
    assert "tensormap.replace.tile.global_dim" in ptx  # A's and B's tensor maps, resized for each group


@pytest.mark.gpu
@pytest.mark.parametrize("gather_A", [False, True])
@pytest.mark.parametrize("pingpong,tile_M", [(True, 128), (False, 256)])
def test_gpu_quack_sm90_varlen_m_gemm(gather_A, pingpong, tile_M):
    qg = _quack_gemm_module()
    cu, total = _varlen_groups("cuda", (700, 64, 1029))
    A_idx = _gather_rows(total, "cuda", gather_A)
    K, N = 736, 1504
    A = torch.randn(2 * total if gather_A else total, K, dtype=torch.bfloat16, device="cuda")
    B = torch.randn(3, N, K, dtype=torch.bfloat16, device="cuda") / K ** 0.5
    D = torch.empty(total, N, dtype=torch.bfloat16, device="cuda")
    qg.gemm(A, B, D, None, None, tile_M, 192, 2, 1, pingpong=pingpong, cu_seqlens_m=cu, A_idx=A_idx)
    rows = A[A_idx.long()] if gather_A else A
    ref = torch.cat([rows[cu[g]:cu[g + 1]].float() @ B[g].float().T for g in range(3)])
    _close(D, ref, 0.1)


@pytest.mark.gpu
@pytest.mark.parametrize("gather_A", [False, True])
def test_gpu_quack_sm90_varlen_k_gemm(gather_A):
    qg = _quack_gemm_module()
    cu, total = _varlen_groups("cuda", (200, 64, 329))
    A_idx = _gather_rows(total, "cuda", gather_A)
    M, N = 1064, 1024
    A = torch.randn(2 * total if gather_A else total, M, dtype=torch.bfloat16, device="cuda").T
    B = torch.randn(total, N, dtype=torch.bfloat16, device="cuda").T / 16
    D = torch.empty(3, M, N, dtype=torch.bfloat16, device="cuda")
    qg.gemm(A, B, D, None, None, 128, 192, 2, 1, pingpong=True, cu_seqlens_k=cu, A_idx=A_idx)
    cols = A[:, A_idx.long()] if gather_A else A
    ref = torch.stack([cols[:, cu[g]:cu[g + 1]].float() @ B[:, cu[g]:cu[g + 1]].float().T for g in range(3)])
    _close(D, ref, 0.1)


# quack's gather_A producers (copy_utils.gather_m_get_copy_fn / gather_k_get_copy_fn) on the
# emulator: one warp loads a tile of A's rows (varlen_m) or columns (varlen_k) picked by A_idx into
# shared memory with predicated cp.async (the zero-fill form), as quack's GEMM producer warps do.

def _gather_tile_kernel(gather_k, tile_mk, thr_layout, val_layout):
    from cutlass import Float16, Int32
    from cutlass.cute.nvgpu import cpasync
    copy_utils = _quack("copy_utils")
    tile_m, tile_k = tile_mk
    smem_stride = (1, tile_m, tile_m * tile_k) if gather_k else (tile_k, 1, tile_m * tile_k)

    @cute.kernel
    def kernel(mA: cute.Tensor, mIdx: cute.Tensor, mOut: cute.Tensor, limit: Int32, k_tile: Int32):
        tidx = cute.arch.thread_idx()[0]
        sA = cutlass.utils.SmemAllocator().allocate_tensor(
            Float16, cute.make_layout((tile_m, tile_k, 1), stride=smem_stride), byte_alignment=128)
        for i in cutlass.range(tidx, tile_m * tile_k, 32):  # what predicated-off copies must overwrite
            sA[i % tile_m, i // tile_m, 0] = Float16(9.0)
        cute.arch.sync_threads()
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), Float16,
                                   num_bits_per_copy=128)
        thr_copy = cute.make_tiled_copy_tv(atom, thr_layout, val_layout).get_slice(tidx)
        if cutlass.const_expr(gather_k):
            copy_fn, prefetch = copy_utils.gather_k_get_copy_fn(
                thr_copy, mA, sA, cute.flat_divide(mIdx, (tile_k,)), limit_m=tile_m, limit_k=limit)
            copy_fn(k_tile, 0, prefetch(k_tile, pred=True), pred=True)
        else:
            copy_fn = copy_utils.gather_m_get_copy_fn(thr_copy, mA, sA, mIdx, limit_m=limit, limit_k=mA.shape[1])
            copy_fn(k_tile, 0)
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        for i in cutlass.range(tidx, tile_m * tile_k, 32):
            mOut[i % tile_m, i // tile_m] = sA[i % tile_m, i // tile_m, 0]

    @cute.jit
    def launch(mA: cute.Tensor, idx: cute.Pointer, num_idx: cutlass.Constexpr, mOut: cute.Tensor, limit: Int32,
               k_tile: Int32):
        kernel(mA, cute.make_tensor(idx, cute.make_layout(num_idx)), mOut, limit, k_tile).launch(
            grid=(1, 1, 1), block=(32, 1, 1))

    return launch


def _gathered_tile(gather_k, A, idx, limit, k_tile, tile_mk, thr_layout, val_layout):
    """Runs the gather on the emulator; A is (rows, K) for gather_m, (K, M) (A m-major) for gather_k.
    The indices come as a gmem pointer: quack tells gmem indices from smem ones by memspace."""
    from cutlass.cute.runtime import from_dlpack, make_ptr
    out = np.full(tile_mk, 5, np.float16)
    ptr = make_ptr(cutlass.Int32, idx.ctypes.data, cute.AddressSpace.gmem, assumed_align=4)
    mA = from_dlpack(A.T if gather_k else A, assumed_align=16)
    launch = _gather_tile_kernel(gather_k, tile_mk, thr_layout, val_layout)
    cute.compile(launch, mA, ptr, len(idx), from_dlpack(out), limit, k_tile, options="--target cpu")(
        mA, ptr, from_dlpack(out), limit, k_tile)
    return out


def test_quack_gather_m_loads_the_rows_a_idx_names():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((80, 128)).astype(np.float16)
    idx = rng.permutation(80)[:32].astype(np.int32)
    # 4 x 8 threads, 8 halves each: a 4 x 64 tiler over a 32 x 64 tile (tiler_mn[0].shape == 4)
    out = _gathered_tile(False, A, idx, 27, 1, (32, 64), cute.make_layout((4, 8), stride=(8, 1)),
                         cute.make_layout((1, 8)))
    # rows past limit_m (27) read row 0: quack loads whole tiles when tile_M divides by the tiler
    rows = np.where(np.arange(32) < 27, idx, 0)
    np.testing.assert_array_equal(out, A[rows, 64:])


def test_quack_gather_k_loads_the_columns_a_idx_names():
    rng = np.random.default_rng(1)
    total_k = 50
    A_km = rng.standard_normal((2 * total_k, 64)).astype(np.float16)  # A (64, 100), m-major, as (k, m)
    idx = np.concatenate([rng.permutation(2 * total_k)[:total_k], np.full(14, -7)]).astype(np.int32)
    # 8 x 4 threads, 8 halves each down M: a 64 x 4 tiler over a 64 x 32 tile
    out = _gathered_tile(True, A_km, idx, total_k, 1, (64, 32), cute.make_layout((8, 4), stride=(1, 8)),
                         cute.make_layout((8, 1)))
    want = np.zeros((64, 32), np.float16)  # columns past limit_k (50) are zero-filled
    want[:, :total_k - 32] = A_km[idx[32:total_k]].T
    np.testing.assert_array_equal(out, want)


# ---- quack: the SM100 GEMM (tcgen05, tensor memory) on the PTX executor ---------------------------

def _quack_sm100_gemm_on_the_ptx_executor(monkeypatch, active_clusters, capability=(10, 0), arch="sm_100a"):
    """quack's GEMM front end as on a Blackwell GPU (it then takes GemmDefaultSm100; with
    capability (9, 0) and sm_90a as on an H100, GemmSm90), running its persistent kernel on
    `active_clusters` clusters of the PTX executor: the kernel has inline PTX, which the PTX
    executor runs (the IR emulator does not)."""
    import toolchain
    toolchain.require_libnvvm()
    qg = _quack_gemm_module()
    if getattr(_quack("gemm_sm100"), "__file__", None) is None:
        pytest.skip("quack.gemm_sm100 did not import")
    import cuda.bindings.driver as cuda_driver
    import cutlass.torch as cutlass_torch
    monkeypatch.setattr(qg, "get_device_capacity", lambda device=None: capability)
    monkeypatch.setattr(qg, "get_max_active_clusters", lambda n: active_clusters)
    # quack keys its compiled kernels by configuration, not by target: a kernel compiled for the
    # GPU by another test of this process must not be run here, nor this one there.
    monkeypatch.setattr(qg.gemm, "compile_cache", {})
    monkeypatch.setattr(cutlass_torch, "current_stream", lambda: cuda_driver.CUstream(0))
    validate = qg.GemmWrapperBase.validate_and_prepare_tensors

    def validate_on_cpu(*args, **kwargs):
        with _OnCpu():
            return validate(*args, **kwargs)

    monkeypatch.setattr(qg.GemmWrapperBase, "validate_and_prepare_tensors", staticmethod(validate_on_cpu))
    monkeypatch.setenv("CUTE_DSL_TARGET", "ptx")
    monkeypatch.setenv("CUTE_DSL_ARCH", arch)
    return qg


# Tile M 256 with a 2 x 1 cluster: quack's 2-CTA instructions (tcgen05.mma.cta_group::2 over the
# CTA pair; the peer's TMA bytes and the MMA's multicast commit reach the pair's leader through
# shared::cluster addresses). One active cluster: each runs several tiles (the persistent loop).
@pytest.mark.parametrize("mnk,tile,cluster,active", [
    pytest.param((256, 256, 128), (128, 128), (1, 1), 4, id="128x128"),
    pytest.param((512, 384, 256), (128, 192), (1, 1), 4, id="128x192"),
    pytest.param((384, 256, 512), (128, 256), (1, 1), 4, id="128x256"),
    pytest.param((512, 256, 128), (256, 128), (2, 1), 4, id="2cta-256x128"),
    pytest.param((512, 384, 256), (256, 192), (2, 1), 1, id="2cta-256x192-one-cluster"),
    pytest.param((256, 256, 256), (128, 128), (2, 1), 4, id="cluster2x1-128x128"),  # B multicast, 1-CTA MMA
])
def test_quack_sm100_gemm_on_the_ptx_executor(monkeypatch, mnk, tile, cluster, active):
    qg = _quack_sm100_gemm_on_the_ptx_executor(monkeypatch, active)
    M, N, K = mnk
    g = torch.Generator().manual_seed(M + N + K)
    A = torch.randint(-2, 3, (1, M, K), generator=g).to(torch.bfloat16)
    B = torch.randint(-2, 3, (1, N, K), generator=g).to(torch.bfloat16)
    D = torch.zeros(1, M, N, dtype=torch.bfloat16)
    qg.gemm(A, B, D, None, None, tile_M=tile[0], tile_N=tile[1], cluster_M=cluster[0], cluster_N=cluster[1],
            pingpong=False, persistent=True)
    ref = torch.einsum("lmk,lnk->lmn", A.float(), B.float())  # small integers: exact in bf16
    assert torch.equal(D.float(), ref)


# The SM90 GEMM's wgmma operands are descriptors quack advances through the smem MMA fragments
# (counted in 16-byte units, as CuTe's); the PTX executor decodes them from the registers as the
# GPU does.
@pytest.mark.parametrize("tile,cluster,pingpong,persistent", [
    pytest.param((128, 128), (1, 1), False, True, id="128x128"),
    pytest.param((128, 192), (2, 1), True, True, id="pingpong-128x192-cluster2x1"),
    pytest.param((128, 256), (1, 1), False, False, id="128x256-not-persistent"),
])
def test_quack_sm90_gemm_on_the_ptx_executor(monkeypatch, tile, cluster, pingpong, persistent):
    qg = _quack_sm100_gemm_on_the_ptx_executor(monkeypatch, 4, capability=(9, 0), arch="sm_90a")
    M, N, K = 256, 384, 256
    g = torch.Generator().manual_seed(tile[1] + cluster[0])
    A = torch.randint(-2, 3, (1, M, K), generator=g).to(torch.bfloat16)
    B = torch.randint(-2, 3, (1, N, K), generator=g).to(torch.bfloat16)
    D = torch.zeros(1, M, N, dtype=torch.bfloat16)
    qg.gemm(A, B, D, None, None, tile_M=tile[0], tile_N=tile[1], cluster_M=cluster[0], cluster_N=cluster[1],
            pingpong=pingpong, persistent=persistent)
    ref = torch.einsum("lmk,lnk->lmn", A.float(), B.float())  # small integers: exact in bf16
    assert torch.equal(D.float(), ref)


def test_quack_sm100_2cta_gemm_links_for_sm100a(monkeypatch, tmp_path):
    """Without a GPU: quack's 2-CTA SM100 GEMM (tile 256 x 128, cluster 2 x 1) compiled for the GPU
    as sm_100a, its PTX linked to a cubin (the launch then refuses the CPU tensors)."""
    import toolchain
    toolchain.require_cubin()
    qg = _quack_sm100_gemm_on_the_ptx_executor(monkeypatch, 4)
    monkeypatch.setenv("CUTE_DSL_TARGET", "gpu")
    monkeypatch.setenv("CUTE_DSL_KEEP_PTX", "1")
    monkeypatch.setenv("CUTE_DSL_KEEP_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DUMP_DIR", str(tmp_path))
    A, B = torch.zeros(1, 512, 128, dtype=torch.bfloat16), torch.zeros(1, 256, 128, dtype=torch.bfloat16)
    D = torch.empty(1, 512, 256, dtype=torch.bfloat16)
    with pytest.raises(cutlass.DSLRuntimeError, match="host memory"):
        qg.gemm(A, B, D, None, None, tile_M=256, tile_N=128, cluster_M=2, cluster_N=1, persistent=True)
    ptx = "".join(p.read_text() for p in tmp_path.glob("*.ptx"))
    assert "tcgen05.mma.cta_group::2.kind::f16" in ptx
    assert "cp.async.bulk.tensor.3d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert [p for p in tmp_path.glob("*.cubin") if p.stat().st_size > 0]


# quack's varlen GEMMs on SM100: varlen_m (groups of rows of A and D, one B each; a group of 64
# rows ends inside a tile) and varlen_k (groups of columns of A and B, one D each), 1- and 2-CTA.
@pytest.mark.parametrize("tile,cluster", [pytest.param((128, 128), (1, 1), id="1cta"),
                                          pytest.param((256, 128), (2, 1), id="2cta")])
@pytest.mark.parametrize("varlen", ["m", "k"])
def test_quack_sm100_varlen_gemm_on_the_ptx_executor(monkeypatch, varlen, tile, cluster):
    qg = _quack_sm100_gemm_on_the_ptx_executor(monkeypatch, 2)
    _tensormap_workspace_aligned(monkeypatch)
    g = torch.Generator().manual_seed(7)
    N = 256
    if varlen == "m":
        cu = torch.tensor([0, 200, 264, 520], dtype=torch.int32)
        K = 128
        A = torch.randint(-2, 3, (520, K), generator=g).to(torch.bfloat16)
        B = torch.randint(-2, 3, (3, N, K), generator=g).to(torch.bfloat16)
        D = torch.zeros(520, N, dtype=torch.bfloat16)
        qg.gemm(A, B, D, None, None, tile[0], tile[1], cluster[0], cluster[1], persistent=True, cu_seqlens_m=cu)
        ref = torch.cat([A[cu[i]:cu[i + 1]].float() @ B[i].float().T for i in range(3)])
    else:
        cu = torch.tensor([0, 64, 192, 320], dtype=torch.int32)
        M = 256
        A = torch.randint(-2, 3, (320, M), generator=g).to(torch.bfloat16).T  # (M, total_k), m-major
        B = torch.randint(-2, 3, (320, N), generator=g).to(torch.bfloat16).T  # (N, total_k), n-major
        D = torch.zeros(3, M, N, dtype=torch.bfloat16)
        qg.gemm(A, B, D, None, None, tile[0], tile[1], cluster[0], cluster[1], persistent=True, cu_seqlens_k=cu)
        ref = torch.stack([A[:, cu[i]:cu[i + 1]].float() @ B[:, cu[i]:cu[i + 1]].float().T for i in range(3)])
    assert torch.equal(D.float(), ref)
