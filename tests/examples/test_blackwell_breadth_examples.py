"""NVIDIA's Blackwell breadth examples (the bwx: rows of ../shared/tools/run_nvidia_examples.sh): the
EFC custom-epilogue dense GEMMs (cute/blackwell/efc), the MoE grouped GEMM (torch_grouped_mm.py,
which builds a TMA descriptor per expert in a kernel), the mixed-input (Int8 K/V) FMHA decode and prefill
(head dims 256 and 512), the Mamba2 SSD and the GeForce Blackwell dense GEMM
(sm_120a: mma.sync, ldmatrix, stmatrix, TMA). Each script runs unchanged at a small size with its
kernels on the CPU emulator (helpers/example_on_cpu_torch.py serves torch's CUDA calls from the
host) and checks itself against its torch reference ("PASS"); the same runs with
OPENCUTE_EMULATOR_LINK_CUBIN=1 link every kernel to a cubin for the arch with nvJitLink. The EFC
GEMM class is also driven here with an epilogue of our own and checked against numpy. Skipped
where torch or NVIDIA's examples are absent."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute

import nvidia_examples
import toolchain

torch = pytest.importorskip("torch")
if nvidia_examples.ROOT is None:
    pytest.skip("NVIDIA's examples are not present (set OPENCUTE_NVIDIA_EXAMPLES)", allow_module_level=True)

RUNNER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers",
                      "example_on_cpu_torch.py")
EFC = "cute/blackwell/efc"
MIXED_FMHA = "cute/blackwell/kernel/attention/mixed_input_fmha"
# Int8 K/V with BFloat16 scales, 8 query heads a K/V head (N = 8 at M = 128, A in tensor memory).
MIXED_DECODE_SMALL = ["--seqlen", "128", "--heads_q", "8", "--heads_k", "1", "--headdim", "128", "--block_scaledim", "128"]
MOE_SMALL = ["--hidden", "256", "--intermediate", "256", "--experts", "8", "--tokens", "64", "--top_k_select", "2"]

# (row, arch, script, arguments, extra environment)
ROWS = [
    ("efc custom_epilogue_dense_gemm", "sm_100a", f"{EFC}/custom_epilogue_dense_gemm.py",
     ["--mnkl", "256,256,128,1", "--alpha", "2.0", "--beta", "1.0"], {}),
    ("efc custom_epilogue_dense_gemm 2cta fp16 m-major", "sm_100a", f"{EFC}/custom_epilogue_dense_gemm.py",
     ["--mnkl", "256,128,64,2", "--ab_dtype", "Float16", "--c_dtype", "Float16", "--d_dtype", "Float16",
      "--x_dtype", "Float16", "--y_dtype", "Float16", "--use_2cta_instrs", "--mma_tiler_mn", "256,128",
      "--cluster_shape_mn", "2,1", "--a_major", "m", "--b_major", "n", "--cd_major", "m"], {}),
    ("efc activation_custom_epilogue_dense_gemm", "sm_100a", f"{EFC}/activation_custom_epilogue_dense_gemm.py",
     ["--mnkl", "256,256,128,1"], {}),
    ("efc synthetic_custom_epilogue_dense_gemm", "sm_100a", f"{EFC}/synthetic_custom_epilogue_dense_gemm.py",
     ["--mnkl", "256,256,128,1"], {}),
    ("moe torch_grouped_mm", "sm_100a", "cute/blackwell/kernel/moe/torch_grouped_mm.py", MOE_SMALL,
     {"OPENCUTE_EXAMPLE_GMEM_TENSORS": "1"}),
    ("moe torch_grouped_mm 2cta 2x1", "sm_100a", "cute/blackwell/kernel/moe/torch_grouped_mm.py",
     MOE_SMALL + ["--use_2cta_instrs", "--cluster_shape_mnk", "2,1,1", "--mma_tiler_mnk", "256,128,64"],
     {"OPENCUTE_EXAMPLE_GMEM_TENSORS": "1"}),
    ("moe torch_scaled_grouped_mm mxfp8", "sm_100a", "cute/blackwell/kernel/moe/torch_scaled_grouped_mm.py",
     ["--hidden", "256", "--intermediate", "256", "--experts", "4", "--tokens", "64", "--top_k_select", "2"],
     {"OPENCUTE_EXAMPLE_GMEM_TENSORS": "1", "OPENCUTE_EXAMPLE_TORCH_VERSION": "2.9.0"}),
    ("geforce dense_gemm", "sm_120a", "cute/blackwell_geforce/kernel/dense_gemm/dense_gemm.py",
     ["--mnkl", "256,256,128,1"], {}),
    ("geforce dense_gemm 128x256 m-major", "sm_120a", "cute/blackwell_geforce/kernel/dense_gemm/dense_gemm.py",
     ["--mnkl", "128,256,128,2", "--tile_shape_mnk", "128,256,64", "--a_major", "m", "--b_major", "n",
      "--c_major", "m"], {}),
    ("mixed_input_fmha_decode", "sm_100a", f"{MIXED_FMHA}/mixed_input_fmha_decode.py", MIXED_DECODE_SMALL, {}),
    ("mixed_input_fmha_decode gqa16 fp16 split2", "sm_100a", f"{MIXED_FMHA}/mixed_input_fmha_decode.py",
     ["--seqlen", "128", "--heads_q", "16", "--heads_k", "1", "--headdim", "128", "--block_scaledim", "32",
      "--q_dtype", "Float16", "--o_dtype", "Float16", "--kv_splits", "2"], {}),
    ("mixed_input_fmha_decode fp8 kv 4 scales", "sm_100a", f"{MIXED_FMHA}/mixed_input_fmha_decode.py",
     ["--seqlen", "128", "--heads_q", "8", "--heads_k", "1", "--headdim", "128", "--block_scaledim", "32",
      "--kv_dtype", "Float8E4M3FN"], {}),
    ("mixed_input_fmha_prefill_d256", "sm_100a", f"{MIXED_FMHA}/mixed_input_fmha_prefill_d256.py",
     ["--q_shape", "1,1,128,256", "--k_shape", "1,1,128,256"], {}),
    # Head dim 512 swaps S and O through tensor memory from the second K/V tile on (a thread's share
    # of tensor memory as the copy operand); with one K/V tile the kernel's own pipelines deadlock
    # (the swap is released before its producer first acquires it), so two tiles at least.
    ("mixed_input_fmha_prefill_d512", "sm_100a", f"{MIXED_FMHA}/mixed_input_fmha_prefill_d512.py",
     ["--q_shape", "1,1,128,512", "--k_shape", "1,1,256,512"], {}),
    # Persistent: the scripts' scheduler counts 128-row query tiles without rounding them to CTA
    # pairs (compute_grid without is_2cta), so an odd count puts a cluster's two CTAs on different
    # heads or leaves one idle; an even count (256 rows) is what the kernels can run.
    ("mixed_input_fmha_prefill_d256 persistent", "sm_100a", f"{MIXED_FMHA}/mixed_input_fmha_prefill_d256.py",
     ["--q_shape", "1,1,256,256", "--k_shape", "1,1,128,256", "--is_persistent"], {}),
    ("mixed_input_fmha_prefill_d512 persistent causal", "sm_100a", f"{MIXED_FMHA}/mixed_input_fmha_prefill_d512.py",
     ["--q_shape", "1,1,256,512", "--k_shape", "1,1,384,512", "--is_persistent", "--is_causal"], {}),
    ("mamba2_ssd", "sm_100a", "cute/blackwell/kernel/attention/mamba2_ssd/mamba2_ssd.py",
     ["--gbehcdln", "2,2,2,2,2,64,128,128"], {}),
]


def _run(arch, script, args, extra, link_cubin=False):
    env = dict(os.environ, CUTE_DSL_ARCH=arch, CUTE_DSL_TARGET="cpu", **extra)
    if link_cubin:
        env.update(OPENCUTE_EMULATOR_LINK_CUBIN="1", CUTE_DSL_DISABLE_FILE_CACHING="True")
    # The MoE script imports its helpers as blackwell.kernel.moe (from the examples' cute folder).
    env["PYTHONPATH"] = os.pathsep.join([nvidia_examples.path("cute"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, RUNNER, nvidia_examples.path(script), *args], env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("row,arch,script,args,extra", ROWS, ids=[r[0] for r in ROWS])
def test_example_passes_its_own_check_on_the_emulator(row, arch, script, args, extra):
    done = _run(arch, script, args, extra)
    assert done.returncode == 0 and "PASS" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


LINKED = [r for r in ROWS if r[0] in ("efc custom_epilogue_dense_gemm", "moe torch_grouped_mm", "mixed_input_fmha_decode",
                                       "mixed_input_fmha_prefill_d256", "mixed_input_fmha_prefill_d512", "mamba2_ssd",
                                       "geforce dense_gemm")]


@pytest.mark.parametrize("row,arch,script,args,extra", LINKED, ids=[r[0] for r in LINKED])
def test_example_kernels_link_cubins_for_their_arch(row, arch, script, args, extra):
    toolchain.require_cubin()
    done = _run(arch, script, args, extra, link_cubin=True)
    assert done.returncode == 0 and "PASS" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


def test_efc_gemm_with_our_epilogue_matches_numpy(monkeypatch):
    import importlib.util
    import types

    if "cuda.bindings.driver" not in sys.modules:
        try:
            import cuda.bindings.driver  # noqa: F401
        except ImportError:
            cuda, bindings, driver = (types.ModuleType(n) for n in ("cuda", "cuda.bindings", "cuda.bindings.driver"))
            driver.CUstream = type("CUstream", (int,), {})
            cuda.bindings, bindings.driver = bindings, driver
            for name, module in (("cuda", cuda), ("cuda.bindings", bindings), ("cuda.bindings.driver", driver)):
                monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.syspath_prepend(nvidia_examples.path(EFC))
    spec = importlib.util.spec_from_file_location("efc_custom", nvidia_examples.path(EFC, "custom_epilogue_dense_gemm.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def epilogue(efc_config, C, D, alpha, beta, X, x_factor, Y):  # (the EFC insists on the first name)
        Y.store(efc_config.accum())
        D.store(efc_config.relu(efc_config.accum() * alpha + C.load() * beta) + X.load() * x_factor)

    m, n, k, l = 256, 128, 64, 2
    gemm = module.DenseGemmAlphaBeta(cutlass.Float32, cutlass.Float32, False, (128, 128), (1, 1), epilogue)
    (a, b, a_ref, b_ref, c, c_ref, _, d, _, d_out, x, x_ref, _, y, _, y_out) = gemm.create_arguments(
        l, m, n, k, "k", "k", "n", cutlass.Float16, cutlass.Float32, cutlass.Float32, cutlass.Float32, cutlass.Float32)
    alpha, beta, x_factor = 2.0, -1.0, 0.5
    stream = sys.modules["cuda.bindings.driver"].CUstream(0)  # the default stream, as the script passes it
    compiled = gemm.compile(a, b, 2, stream, c, d, alpha, beta, x, x_factor, y,
                            options="--target cpu --gpu-arch sm_100a")
    compiled(a, b, stream, c, d, alpha, beta, x, x_factor, y)
    # (m, k, l) x (n, k, l): the accumulator in float64 from the float16 operands.
    acc = np.einsum("mkl,nkl->mnl", a_ref.to(torch.float16).double().numpy(), b_ref.to(torch.float16).double().numpy())
    np.testing.assert_allclose(y_out.numpy(), acc, rtol=1e-5, atol=1e-3)
    want = np.maximum(acc * alpha + c_ref.double().numpy() * beta, 0) + x_ref.double().numpy() * x_factor
    np.testing.assert_allclose(d_out.numpy(), want, rtol=1e-5, atol=1e-3)
    assert np.abs(want).max() > 1  # the operands are not all zero
