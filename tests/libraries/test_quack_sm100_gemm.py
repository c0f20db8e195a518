"""quack's SM100 GEMM variants on the PTX executor against torch (issue 26): gather_A at 1 and 2
CTAs, the epilogues quack's tests exercise (C with alpha / beta, row and column biases, add to
output, an activation and its gradient, the symmetric GEMM), the dynamic persistent scheduler
(tile_count_semaphore) in clusters, swap_ab's transposed operands, batch permutation and tile
widths that are no power of two. Small integer operands keep every sum exact in bf16. Skipped as
test_libraries.py is (quack, torch, libNVVM)."""
import importlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("quack")

import cutlass  # noqa: E402

from test_libraries import (_close, _quack, _quack_sm100_gemm_on_the_ptx_executor,  # noqa: E402
                            _tensormap_workspace_aligned)

ONE_CTA, TWO_CTA = ((128, 128), (1, 1)), ((256, 128), (2, 1))
CONFIGS = [pytest.param(*ONE_CTA, id="1cta"), pytest.param(*TWO_CTA, id="2cta")]


def _launcher(monkeypatch, name, active_clusters=2):
    """quack.<name> (gemm, gemm_act, gemm_dact, gemm_symmetric) as on a Blackwell GPU, its kernels
    on `active_clusters` clusters of the PTX executor."""
    qg = _quack_sm100_gemm_on_the_ptx_executor(monkeypatch, active_clusters)
    mod = importlib.import_module(f"quack.{name}")
    if mod is not qg:
        monkeypatch.setattr(mod, "get_device_capacity", lambda device=None: (10, 0))
        monkeypatch.setattr(mod, "get_max_active_clusters", lambda n: active_clusters)
        # gemm_act's cache serves gemm_symmetric too
        for cached in {getattr(mod, name), _quack("gemm_act").gemm_act}:
            if hasattr(cached, "compile_cache"):
                monkeypatch.setattr(cached, "compile_cache", {})
    return getattr(mod, name)


def _ints(g, *shape, lo=-2, hi=3):
    return torch.randint(lo, hi, shape, generator=g).to(torch.bfloat16)


def _mm(A, B):
    return torch.einsum("lmk,lnk->lmn", A.float(), B.float())


# ---- gather_A: A's rows (varlen_m) or columns (varlen_k) read through A_idx by cp.async producer
# warps; at 2 CTAs the odd CTA forwards its producers' completion to the even CTA's barrier ----------

@pytest.mark.parametrize("tile,cluster", CONFIGS)
@pytest.mark.parametrize("varlen", ["m", "k"])
def test_quack_sm100_gather_a(monkeypatch, varlen, tile, cluster):
    gemm = _launcher(monkeypatch, "gemm")
    _tensormap_workspace_aligned(monkeypatch)
    g = torch.Generator().manual_seed(7)
    N = 256
    if varlen == "m":
        cu = torch.tensor([0, 200, 264, 520], dtype=torch.int32)
        A = _ints(g, 1040, 128)
        idx = torch.randperm(1040, generator=g)[:520].to(torch.int32)
        B = _ints(g, 3, N, 128)
        D = torch.zeros(520, N, dtype=torch.bfloat16)
        gemm(A, B, D, None, None, *tile, *cluster, persistent=True, cu_seqlens_m=cu, A_idx=idx)
        rows = A[idx.long()]
        ref = torch.cat([rows[cu[i]:cu[i + 1]].float() @ B[i].float().T for i in range(3)])
    else:
        cu = torch.tensor([0, 64, 192, 320], dtype=torch.int32)
        A = _ints(g, 640, 256).T  # (M, 640), m-major
        idx = torch.randperm(640, generator=g)[:320].to(torch.int32)
        B = _ints(g, 320, N).T  # (N, total_k), n-major
        D = torch.zeros(3, 256, N, dtype=torch.bfloat16)
        gemm(A, B, D, None, None, *tile, *cluster, persistent=True, cu_seqlens_k=cu, A_idx=idx)
        cols = A[:, idx.long()]
        ref = torch.stack([cols[:, cu[i]:cu[i + 1]].float() @ B[:, cu[i]:cu[i + 1]].float().T for i in range(3)])
    assert torch.equal(D.float(), ref)


# ---- GemmDefaultSm100's epilogue: C, alpha and beta (floats or a tensor), biases, add to output ------

# quack's default SM100 configuration (gemm_interface.default_config): tile 256 x 256, cluster 2 x 1.
@pytest.mark.parametrize("tile,cluster", CONFIGS + [pytest.param((256, 256), (2, 1), id="default-256x256")])
def test_quack_sm100_gemm_with_c_alpha_beta(monkeypatch, tile, cluster):
    gemm = _launcher(monkeypatch, "gemm")
    g = torch.Generator().manual_seed(1)
    A, B, C = _ints(g, 1, 256, 128), _ints(g, 1, 512, 128), _ints(g, 1, 256, 512)
    D = torch.zeros(1, 256, 512, dtype=torch.bfloat16)
    gemm(A, B, D, C, None, *tile, *cluster, alpha=0.5, beta=2.0)
    assert torch.equal(D.float(), 0.5 * _mm(A, B) + 2.0 * C.float())


@pytest.mark.parametrize("tile,cluster", CONFIGS)
def test_quack_sm100_gemm_with_alpha_tensor_and_biases(monkeypatch, tile, cluster):
    gemm = _launcher(monkeypatch, "gemm")
    g = torch.Generator().manual_seed(2)
    A, B = _ints(g, 1, 256, 128), _ints(g, 1, 256, 128)
    row_bias = torch.randint(-3, 4, (1, 256), generator=g).float()
    col_bias = torch.randint(-3, 4, (1, 256), generator=g).float()
    D = torch.zeros(1, 256, 256, dtype=torch.bfloat16)
    gemm(A, B, D, None, None, *tile, *cluster, alpha=torch.tensor([2.0]), rowvec_bias=row_bias, colvec_bias=col_bias)
    assert torch.equal(D.float(), 2.0 * _mm(A, B) + row_bias[:, None, :] + col_bias[:, :, None])


def test_quack_sm100_gemm_adds_to_its_output(monkeypatch):
    gemm = _launcher(monkeypatch, "gemm")
    g = torch.Generator().manual_seed(3)
    A, B, D = _ints(g, 1, 256, 128), _ints(g, 1, 256, 128), _ints(g, 1, 256, 256)
    D0 = D.float().clone()
    gemm(A, B, D, None, None, *TWO_CTA[0], *TWO_CTA[1], add_to_output=True)
    assert torch.equal(D.float(), D0 + _mm(A, B))


# ---- the dynamic persistent scheduler: one warp of the cluster takes tiles from a global counter
# and hands them to every CTA of the cluster by st.async (its bytes complete the peers' barriers) ----

@pytest.mark.parametrize("tile,cluster", CONFIGS + [pytest.param((128, 128), (2, 1), id="cluster2x1"),
                                                    pytest.param((128, 128), (1, 2), id="cluster1x2")])
def test_quack_sm100_gemm_dynamic_scheduler(monkeypatch, tile, cluster):
    gemm = _launcher(monkeypatch, "gemm", active_clusters=1)
    g = torch.Generator().manual_seed(4)
    A, B = _ints(g, 2, 512, 128), _ints(g, 2, 256, 128)
    D = torch.zeros(2, 512, 256, dtype=torch.bfloat16)
    gemm(A, B, D, None, torch.zeros(1, dtype=torch.int32), *tile, *cluster)
    assert torch.equal(D.float(), _mm(A, B))


def test_quack_sm90_gemm_dynamic_scheduler_in_a_cluster(monkeypatch):
    qg = _quack_sm100_gemm_on_the_ptx_executor(monkeypatch, 1, capability=(9, 0), arch="sm_90a")
    g = torch.Generator().manual_seed(4)
    A, B = _ints(g, 2, 512, 128), _ints(g, 2, 256, 128)
    D = torch.zeros(2, 512, 256, dtype=torch.bfloat16)
    qg.gemm(A, B, D, None, torch.zeros(1, dtype=torch.int32), 128, 128, 2, 1, pingpong=False)
    assert torch.equal(D.float(), _mm(A, B))


# ---- swap_ab as quack's gemm_tuned does it (B and A exchanged, D transposed): m-major A, n-major B,
# m-major D; batch permutation; tile widths 160 and 224 --------------------------------------------

@pytest.mark.parametrize("tile,cluster", CONFIGS)
def test_quack_sm100_gemm_swap_ab(monkeypatch, tile, cluster):
    gemm = _launcher(monkeypatch, "gemm")
    g = torch.Generator().manual_seed(5)
    A = _ints(g, 1, 128, 256).mT  # (1, 256, 128), m-major
    B = _ints(g, 1, 128, 256).mT  # (1, 256, 128), n-major
    out = torch.zeros(1, 256, 256, dtype=torch.bfloat16)
    gemm(B, A, out.mT, None, None, *tile, *cluster)
    assert torch.equal(out.float(), _mm(A, B))


@pytest.mark.parametrize("tile,cluster", [((128, 160), (1, 2)), ((256, 224), (2, 1)), ((128, 224), (1, 1))])
def test_quack_sm100_gemm_batch_permutation_and_tile_widths(monkeypatch, tile, cluster):
    gemm = _launcher(monkeypatch, "gemm", active_clusters=1)
    g = torch.Generator().manual_seed(11)
    A, B = _ints(g, 3, 256, 128), _ints(g, 3, 448, 128)
    D = torch.zeros(3, 256, 448, dtype=torch.bfloat16)
    gemm(A, B, D, None, None, *tile, *cluster, batch_idx_permute=torch.tensor([2, 0, 1], dtype=torch.int32))
    assert torch.equal(D.float(), _mm(A, B))


# ---- gemm_act (bias, activation, pre-activation kept), gemm_dact (activation gradient), over
# groups of rows (with gather_A) too; the symmetric GEMM -------------------------------------------

@pytest.mark.parametrize("tile,cluster", CONFIGS)
@pytest.mark.parametrize("activation", ["relu", "gelu_tanh_approx"])
def test_quack_sm100_gemm_act(monkeypatch, activation, tile, cluster):
    gemm_act = _launcher(monkeypatch, "gemm_act")
    g = torch.Generator().manual_seed(6)
    A, B = _ints(g, 1, 256, 128), _ints(g, 1, 256, 128)
    bias = torch.randint(-3, 4, (1, 256), generator=g).float()
    D, PostAct = (torch.zeros(1, 256, 256, dtype=torch.bfloat16) for _ in range(2))
    gemm_act(A, B, D, None, PostAct, None, activation, *tile, *cluster, rowvec_bias=bias)
    ref = _mm(A, B) + bias[:, None, :]
    assert torch.equal(D.float(), ref)
    post = torch.relu(ref) if activation == "relu" else torch.nn.functional.gelu(ref, approximate="tanh")
    _close(PostAct, post.to(torch.bfloat16), 0.07)  # quack's tanh is an approximation


@pytest.mark.parametrize("tile,cluster", CONFIGS)
def test_quack_sm100_gemm_act_varlen_m_gather_a(monkeypatch, tile, cluster):
    gemm_act = _launcher(monkeypatch, "gemm_act")
    _tensormap_workspace_aligned(monkeypatch)
    g = torch.Generator().manual_seed(9)
    cu = torch.tensor([0, 200, 264, 520], dtype=torch.int32)
    A, B = _ints(g, 1040, 128), _ints(g, 3, 256, 128)
    idx = torch.randperm(1040, generator=g)[:520].to(torch.int32)
    D, PostAct = (torch.zeros(520, 256, dtype=torch.bfloat16) for _ in range(2))
    gemm_act(A, B, D, None, PostAct, None, "relu", *tile, *cluster, cu_seqlens_m=cu, A_idx=idx)
    rows = A[idx.long()]
    ref = torch.cat([rows[cu[i]:cu[i + 1]].float() @ B[i].float().T for i in range(3)])
    assert torch.equal(D.float(), ref)
    assert torch.equal(PostAct.float(), torch.relu(ref))


@pytest.mark.parametrize("tile,cluster", CONFIGS)
@pytest.mark.parametrize("varlen_m", [False, True])
def test_quack_sm100_gemm_dact(monkeypatch, varlen_m, tile, cluster):
    gemm_dact = _launcher(monkeypatch, "gemm_dact")
    _tensormap_workspace_aligned(monkeypatch)
    g = torch.Generator().manual_seed(10)
    lead = (520,) if varlen_m else (1, 256)
    A, PreAct = _ints(g, *lead, 128), _ints(g, *lead, 256)
    B = _ints(g, 3 if varlen_m else 1, 256, 128)
    Out, PostAct = (torch.zeros(*lead, 256, dtype=torch.bfloat16) for _ in range(2))
    cu = torch.tensor([0, 200, 264, 520], dtype=torch.int32) if varlen_m else None
    gemm_dact(A, B, Out, PreAct, PostAct, None, "relu", *tile, *cluster, cu_seqlens_m=cu)
    dout = (torch.cat([A[cu[i]:cu[i + 1]].float() @ B[i].float().T for i in range(3)]) if varlen_m
            else _mm(A, B))
    assert torch.equal(Out.float(), dout * (PreAct.float() > 0))
    assert torch.equal(PostAct.float(), torch.relu(PreAct.float()))


# quack's TriangularTileScheduler wants a square cluster tile: 128 x 256 a CTA in a 2 x 1 cluster
# (quack's own configuration), or a 2-CTA 256 x 256 tile.
@pytest.mark.parametrize("tile,cluster", [pytest.param((128, 128), (1, 1), id="1cta"),
                                          pytest.param((128, 256), (2, 1), id="cluster2x1"),
                                          pytest.param((256, 256), (2, 1), id="2cta")])
def test_quack_sm100_gemm_symmetric(monkeypatch, tile, cluster):
    gemm_symmetric = _launcher(monkeypatch, "gemm_symmetric")
    g = torch.Generator().manual_seed(8)
    A = _ints(g, 1, 128, 256, lo=-1, hi=2).mT  # (1, 256, 128), m-major
    C = _ints(g, 1, 256, 256, lo=-4, hi=5)
    C = C + C.mT
    D = torch.zeros(1, 256, 256, dtype=torch.bfloat16)
    gemm_symmetric(A, A, D, C, None, *tile, *cluster, beta=0.5)
    assert torch.equal(D.float(), _mm(A, A) + 0.5 * C.float())


# ---- the kernels enabled here, compiled for the GPU: their PTX links to sm_100a cubins ------------

@pytest.mark.parametrize("variant", ["gather_a_2cta", "dynamic_scheduler_2cta", "gemm_act_c_2cta"])
def test_quack_sm100_gemm_variants_link_for_sm100a(monkeypatch, tmp_path, variant):
    import toolchain
    toolchain.require_cubin()
    name = "gemm_act" if variant == "gemm_act_c_2cta" else "gemm"
    launcher = _launcher(monkeypatch, name)
    _tensormap_workspace_aligned(monkeypatch)
    monkeypatch.setenv("CUTE_DSL_TARGET", "gpu")
    monkeypatch.setenv("CUTE_DSL_KEEP_PTX", "1")
    monkeypatch.setenv("CUTE_DSL_KEEP_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DUMP_DIR", str(tmp_path))
    A, B = torch.zeros(1, 512, 128, dtype=torch.bfloat16), torch.zeros(1, 256, 128, dtype=torch.bfloat16)
    D = torch.empty(1, 512, 256, dtype=torch.bfloat16)
    with pytest.raises(cutlass.DSLRuntimeError, match="host memory"):  # compiled; the CPU tensors are refused
        if variant == "gather_a_2cta":
            cu = torch.tensor([0, 200, 512], dtype=torch.int32)
            launcher(torch.zeros(1024, 128, dtype=torch.bfloat16), torch.zeros(2, 256, 128, dtype=torch.bfloat16),
                     torch.empty(512, 256, dtype=torch.bfloat16), None, None, *TWO_CTA[0], *TWO_CTA[1],
                     cu_seqlens_m=cu, A_idx=torch.arange(512, dtype=torch.int32))
        elif variant == "dynamic_scheduler_2cta":
            launcher(A, B, D, None, torch.zeros(1, dtype=torch.int32), *TWO_CTA[0], *TWO_CTA[1])
        else:
            launcher(A, B, D, torch.zeros_like(D), torch.empty_like(D), None, "relu", *TWO_CTA[0], *TWO_CTA[1])
    ptx = "".join(p.read_text() for p in tmp_path.glob("*.ptx"))
    want = {"gather_a_2cta": "cp.async.cg.shared.global", "dynamic_scheduler_2cta": "st.async.shared::cluster",
            "gemm_act_c_2cta": "tcgen05.mma.cta_group::2"}[variant]
    assert want in ptx
    assert [p for p in tmp_path.glob("*.cubin") if p.stat().st_size > 0]
