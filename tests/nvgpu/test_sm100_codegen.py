"""Code generation for the Blackwell architectures (sm_100a, sm_100f, sm_103a) and sm_120a through
libNVVM and nvJitLink, on a machine without such a GPU: representative kernels (a tensor-op GEMM
with mma.sync, a TMA pipeline on mbarriers, warp shuffles through shared memory) compile
to PTX for the arch, link to a cubin with OPENCUTE_EMULATOR_LINK_CUBIN=1 (which makes a toolchain
that rejects them an error, not a best-effort PTX), and run on the emulator against numpy.

Skipped only when the toolchain is absent (`toolchain_missing`: libNVVM or nvJitLink cannot be
loaded), never when it rejects a kernel."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32

import test_mma_sm80 as mma80
import test_sm90_tma as tma90

ARCHES = ["sm_100a", "sm_100f", "sm_103a", "sm_120a"]
LINK = "OPENCUTE_EMULATOR_LINK_CUBIN"


@cute.kernel
def warp_sum_kernel(x: cute.Tensor, out: cute.Tensor):
    # Each warp sums its 32 values with shuffles; warp sums meet in shared memory; thread 0
    # writes the block's total.
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    partial = cute.arch.alloc_smem(Float32, 4, alignment=16)
    v = x[bidx * 128 + tidx]
    for k in cutlass.range_constexpr(5):
        v = v + cute.arch.shuffle_sync_bfly(v, offset=1 << k)
    if tidx % 32 == 0:
        partial[tidx // 32] = v
    cute.arch.sync_threads()
    if tidx == 0:
        total = partial[0] + partial[1] + partial[2] + partial[3]
        out[bidx] = total


@cute.jit
def warp_sum(x: cute.Tensor, out: cute.Tensor):
    warp_sum_kernel(x, out).launch(grid=(cute.size(out), 1, 1), block=(128, 1, 1))


def toolchain_missing(arch="sm_100a"):
    """Why this machine cannot link a cubin (libNVVM or nvJitLink cannot be loaded), or None."""
    x = np.zeros(256, np.float32)
    out = np.zeros(2, np.float32)
    try:
        compiled = cute.compile(warp_sum, x, out, options=f"--target cpu --gpu-arch {arch}")
    except cutlass.DSLRuntimeError as e:
        if "could not be loaded" in str(e):
            return str(e).splitlines()[0]
        raise
    return None if compiled.__cubin__ is not None else "no cubin was produced"


@pytest.fixture
def link_cubins(monkeypatch):
    monkeypatch.setenv(LINK, "1")
    why = toolchain_missing()
    if why is not None:
        pytest.skip(f"libNVVM / nvJitLink absent: {why}")


def _check_code(compiled, arch):
    assert f".target {arch}" in compiled.__ptx__
    cubin = compiled.__cubin__
    assert cubin is not None and bytes(cubin[:4]) == b"\x7fELF", "nvJitLink produced no cubin"


@pytest.mark.parametrize("arch", ARCHES)
def test_warp_shuffle_smem_kernel(arch, link_cubins):
    x = np.random.default_rng(0).integers(-4, 4, 256).astype(np.float32)
    out = np.zeros(2, np.float32)
    compiled = cute.compile(warp_sum, x, out, options=f"--target cpu --gpu-arch {arch}")
    _check_code(compiled, arch)
    compiled(x, out)
    np.testing.assert_array_equal(out, x.reshape(2, 128).sum(axis=1))


@pytest.mark.parametrize("arch", ARCHES)
def test_mma_sync_gemm(arch, link_cubins):
    M, N, K = 64, 64, 32
    rng = np.random.default_rng(1)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((N, K)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    compiled = cute.compile(mma80.tensorop_gemm, A, B, C, options=f"--target cpu --gpu-arch {arch}")
    _check_code(compiled, arch)
    assert "mma.sync.aligned.m16n8k16" in compiled.__ptx__
    compiled(A, B, C)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B.astype(np.float64).T, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("arch", ARCHES)
def test_tma_mbarrier_pipeline(arch, link_cubins):
    k_tiles = 3
    a = np.random.default_rng(2).integers(-8, 8, size=(16, 32 * k_tiles)).astype(np.float32)
    out = np.zeros((16, 8), np.float32)
    compiled = cute.compile(tma90.pipelined_host, a, out, Int32(k_tiles), options=f"--target cpu --gpu-arch {arch}")
    _check_code(compiled, arch)
    assert "cp.async.bulk.tensor" in compiled.__ptx__
    compiled(a, out, Int32(k_tiles))
    np.testing.assert_array_equal(out, (a.reshape(16, k_tiles, 8, 4) * 2).sum(axis=(1, 3)))


def test_without_the_switch_emulator_compiles_stop_at_ptx(monkeypatch):
    monkeypatch.delenv(LINK, raising=False)
    x = np.zeros(256, np.float32)
    out = np.zeros(2, np.float32)
    compiled = cute.compile(warp_sum, x, out, options="--target cpu --gpu-arch sm_100a")
    assert compiled.__cubin__ is None


# ---- NVIDIA's Blackwell examples (the `bw:` rows of ../shared/tools/run_nvidia_examples.sh) ----
# Each runs as a script on the emulator for sm_100a (its own reference check decides), with every
# kernel it compiles also linked to an sm_100a cubin and dumped; the test then checks that a cubin
# was produced for each compiled program. The examples allocate with torch on the GPU (staged
# through host memory around each emulated launch), so they need torch and a CUDA device: the lead
# runs them on the GPU machine (`pytest -m gpu tests/nvgpu/test_sm100_codegen.py`).
GEMM_ARGS = ["--mnkl", "256,256,512,1"]
BW_ROWS = [(f"{k}{' 2cta' if two else ''}", f"cute/blackwell/kernel/dense_gemm/{k}.py",
            GEMM_ARGS + (["--use_2cta_instrs", "--cluster_shape_mn", "2,1"] if two else []))
           for k in ("dense_gemm", "dense_gemm_persistent", "dense_gemm_persistent_dynamic",
                     "dense_gemm_persistent_prefetch", "dense_gemm_software_pipeline",
                     "dense_gemm_alpha_beta_persistent") for two in (False, True)]
BW_ROWS += [("grouped_gemm", "cute/blackwell/kernel/grouped_gemm/grouped_gemm.py", []),
            ("rmsnorm", "cute/blackwell/kernel/rmsnorm/rmsnorm.py", ["--M", "256", "--N", "4096"])]
BW_ROWS += [(f"fp16_gemm_{t}", f"cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_{t}.py", ["--mnk", "512,512,256"])
            for t in ("0", "1", "2", "3", "3_1", "4", "5", "6")]
BW_ROWS += [(f"tma_v{t}", f"cute/blackwell/tutorial/tutorial_tma/tma_v{t}.py", []) for t in range(3)]


@pytest.mark.gpu
@pytest.mark.parametrize("name,relative,args", BW_ROWS, ids=[r[0] for r in BW_ROWS])
def test_nvidia_blackwell_example_links_sm100a_cubins(name, relative, args, tmp_path):
    import os
    import subprocess
    import sys

    import nvidia_examples
    if nvidia_examples.ROOT is None:
        pytest.skip("NVIDIA's examples are not present (set OPENCUTE_NVIDIA_EXAMPLES)")
    pytest.importorskip("torch")
    why = toolchain_missing()
    if why is not None:
        pytest.skip(f"libNVVM / nvJitLink absent: {why}")
    dump = tmp_path / "dump"
    env = dict(os.environ, CUTE_DSL_ARCH="sm_100a", CUTE_DSL_TARGET="cpu", CUTE_DSL_KEEP_CUBIN="1",
               CUTE_DSL_KEEP_PTX="1", CUTE_DSL_DUMP_DIR=str(dump), **{LINK: "1"})
    out = subprocess.run([sys.executable, nvidia_examples.path(relative), *args], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    assert "FAILED" not in out.stdout
    ptx = sorted(p.name for p in dump.rglob("*.ptx"))
    cubins = sorted(p for p in dump.rglob("*.cubin"))
    assert ptx, "the example compiled no kernel"
    assert len(cubins) == len(ptx), (ptx, [c.name for c in cubins])
    for c in cubins:
        assert c.read_bytes()[:4] == b"\x7fELF", c
    for p in dump.rglob("*.ptx"):
        assert ".target sm_100a" in p.read_text(), p
