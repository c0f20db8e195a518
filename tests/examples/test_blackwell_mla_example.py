"""NVIDIA's Blackwell MLA decode examples (cute/blackwell/kernel/attention/mla/mla_decode_fp16.py and
mla_decode_fp8.py with mla_helpers.py, BSD-3), loaded unchanged at run time when the examples are
present: their own run() (paged latent/rope KV cache, split-KV with a reduction kernel, 2-CTA
tcgen05 MMAs, a persistent tile scheduler) on the CPU emulator for sm_100a, checked by the
example's own torch reference (run() raises unless "Results verified successfully"). run() makes
CUDA tensors; here host tensors stand in for them (the kernels run on the emulator either way), so
the tests need torch. One run also links every kernel to an sm_100a cubin."""
import os
import sys
import types

import pytest

import nvidia_examples
import toolchain
from test_ampere_gemm_examples import _cuda_bindings_stand_in

MLA = "cute/blackwell/kernel/attention/mla"


@pytest.fixture
def host_torch(monkeypatch):
    """torch with host tensors standing in for CUDA ones (`.cuda()`, device="cuda", streams)."""
    torch = pytest.importorskip("torch")
    if nvidia_examples.ROOT is None or not os.path.isdir(nvidia_examples.path(MLA)):
        pytest.skip("NVIDIA's examples are not present (set OPENCUTE_NVIDIA_EXAMPLES)")
    _cuda_bindings_stand_in(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    stream = types.SimpleNamespace(cuda_stream=0)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: stream)
    monkeypatch.setattr(torch.cuda, "default_stream", lambda *a: stream)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    for name in ("empty", "zeros", "ones", "tensor", "empty_strided"):
        make = getattr(torch, name)

        def on_host(*a, _make=make, **k):
            if str(k.get("device", "")).startswith("cuda"):
                k["device"] = "cpu"
            return _make(*a, **k)
        monkeypatch.setattr(torch, name, on_host)
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    monkeypatch.syspath_prepend(nvidia_examples.path(MLA))  # `import mla_helpers`
    monkeypatch.syspath_prepend(nvidia_examples.ROOT)
    return torch


def load(name):
    import importlib.util
    spec = importlib.util.spec_from_file_location("bw_" + name, nvidia_examples.path(MLA, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_args(module, **changes):
    """run()'s arguments at the script's defaults (batch 1, one query, 128 keys in one page of
    128, 128 heads, latent 512, rope 64), with `changes`."""
    import cutlass
    args = dict(batch_size=1, seq_len_q=1, seq_len_k=128, num_heads=128, latent_dim=512, rope_dim=64,
                in_dtype=cutlass.Float16, out_dtype=cutlass.Float16, acc_dtype=cutlass.Float32,
                lse_dtype=cutlass.Float32, mma_qk_tiler_mn=(128, 128), mma_pv_tiler_mn=(128, 256), split_kv=-1,
                is_persistent=False, is_var_seq=False, is_var_split_kv=False, page_size=128, softmax_scale=0.0416,
                output_scale=1.0, skip_correction_threshold=0.0, tolerance=1e-2, warmup_iterations=0, iterations=1,
                skip_ref_check=False, use_cold_l2=False)
    args.update(changes)
    return args


# The script's default row; two batches over five pages, persistent (split-KV partial results
# reduced by the second kernel); three batches of different lengths with their own split-KV counts,
# pages of 64; two queries per batch.
CASES = [{}, dict(batch_size=2, seq_len_k=640, is_persistent=True),
         dict(batch_size=3, seq_len_k=1024, is_var_seq=True, is_var_split_kv=True, page_size=64),
         dict(seq_len_q=2, seq_len_k=384)]


@pytest.mark.parametrize("changes", CASES, ids=["default", "persistent split", "variable lengths", "two queries"])
def test_mla_decode_fp16_on_the_emulator(host_torch, capsys, changes):
    module = load("mla_decode_fp16")
    module.run(**run_args(module, **changes))
    assert "Results verified successfully!" in capsys.readouterr().out


def test_mla_decode_fp8_on_the_emulator(host_torch, capsys):
    import cutlass
    module = load("mla_decode_fp8")
    # The fp8 script's defaults: e4m3 inputs and output.
    module.run(**run_args(module, in_dtype=cutlass.Float8E4M3FN, out_dtype=cutlass.Float8E4M3FN))
    assert "Results verified successfully!" in capsys.readouterr().out


def test_mla_decode_kernels_link_sm100a_cubins(host_torch, capsys, monkeypatch):
    # A toolchain that rejects a kernel is an error with OPENCUTE_EMULATOR_LINK_CUBIN=1.
    toolchain.require_cubin()
    monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")
    module = load("mla_decode_fp16")
    module.run(**run_args(module, batch_size=2, seq_len_k=640, is_persistent=True))
    assert "Results verified successfully!" in capsys.readouterr().out
