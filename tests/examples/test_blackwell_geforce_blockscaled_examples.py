"""NVIDIA's GeForce Blackwell block-scaled GEMMs (cute/blackwell_geforce/kernel/blockscaled_gemm/:
dense_blockscaled_gemm_persistent_cooperative.py and _pingpong.py, BSD-3) on the CPU emulator for
sm_120a: warp-level block-scaled mma.sync (MmaMXF4NVF4Op / MmaMXF4Op, and MmaMXF8F6F4Op for mixed
FP4 x FP8), ldmatrix of packed Float4E2M1FN (or unpacked: .b4x16_p64), the scale factors through
TMA and registers. Their kernel classes are driven as the
scripts' run_bs() does, at small sizes, against numpy (A and B on the e2m1 grid, dequantised with
their factors); the scripts themselves run unchanged with torch's CUDA calls served from the host
(helpers/example_on_cpu_torch.py) and check themselves ("PASS"), once with their kernels linked to
sm_120a cubins. Skipped where NVIDIA's examples are absent."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_stream

import nvidia_examples
import toolchain
from test_ampere_gemm_examples import _default_stream, load_example
from test_blackwell_blockscaled_examples import Problem
from test_sm100_example_cubins import torch_for_import

OPTIONS = "--target cpu --gpu-arch sm_120a"
FOLDER = "cute/blackwell_geforce/kernel/blockscaled_gemm/"
SCRIPTS = ["dense_blockscaled_gemm_persistent_cooperative", "dense_blockscaled_gemm_persistent_pingpong"]
RUNNER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "example_on_cpu_torch.py")

if nvidia_examples.ROOT is None:
    pytest.skip("NVIDIA's examples are not present (set OPENCUTE_NVIDIA_EXAMPLES)", allow_module_level=True)


@pytest.fixture(autouse=True)
def _torch_names(monkeypatch):
    torch_for_import(monkeypatch)  # the examples import torch for their run(), unused here


CASES = [  # (mnkl, tile, sf type, factor vector size)
    ((256, 128, 256, 1), (128, 128, 128), cutlass.Float8E4M3FN, 16),  # NVFP4: 2 tiles, 2 k-tiles
    ((128, 256, 256, 2), (128, 128, 256), cutlass.Float8E8M0FNU, 32),  # MXFP4, K tile 256, 2 batches
]


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("mnkl,tile,sf_dtype,vec", CASES, ids=["nvfp4", "mxfp4"])
def test_geforce_blockscaled_gemm_on_the_emulator(monkeypatch, script, mnkl, tile, sf_dtype, vec):
    monkeypatch.syspath_prepend(nvidia_examples.path(FOLDER))  # `from blockscaled_gemm_dispatch import`
    ex = load_example(monkeypatch, FOLDER + script + ".py")
    p = Problem(*mnkl, sf_dtype=sf_dtype, vec=vec)
    gemm = ex.Sm120BlockScaledGemmKernel(cutlass.Float32, vec, tile, (128, 128))
    args = p.tensors()
    f = cute.compile(gemm, *args, 1, make_fake_stream(), options=OPTIONS)
    f(*args, _default_stream())
    p.check()


def _needs_real_torch():
    """The script runs in a fresh process, which needs torch itself (not the import stand-in that
    lets this process load the examples without it)."""
    torch = pytest.importorskip("torch")
    if getattr(torch, "__file__", None) is None:
        pytest.skip("torch is not installed")


def _run(script, args, link_cubin=False):
    env = dict(os.environ, CUTE_DSL_ARCH="sm_120a", CUTE_DSL_TARGET="cpu")
    if link_cubin:
        env.update(OPENCUTE_EMULATOR_LINK_CUBIN="1", CUTE_DSL_DISABLE_FILE_CACHING="True")
    env["PYTHONPATH"] = os.pathsep.join([nvidia_examples.path("cute"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, RUNNER, nvidia_examples.path(FOLDER + script + ".py"), *args], env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_passes_its_own_check_on_the_emulator(script):
    _needs_real_torch()
    done = _run(script, ["--mnkl", "256,128,256,1"])
    assert done.returncode == 0 and "PASS" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


# Mixed FP4 x FP8 (MmaMXF8F6F4Op): the FP4 operand travels through TMA unpacked in shared memory
# (internal_type Int8: 16U4_ALIGN16B), ldmatrix .b4x16_p64 widens it to bytes, the kernel shifts each
# value into bits 2..5; factors Float8E8M0FNU per 32 values of K.
MIXED = ["--sf_dtype", "Float8E8M0FNU", "--sf_vec_size", "32"]


@pytest.mark.parametrize("script,a,b,mnkl", [
    (SCRIPTS[0], "Float4E2M1FN", "Float8E4M3FN", "128,128,256,1"),
    (SCRIPTS[1], "Float8E5M2", "Float4E2M1FN", "256,128,384,2"),
], ids=["cooperative-fp4xe4m3", "pingpong-e5m2xfp4"])
def test_mixed_fp4_fp8_script_passes_its_own_check_on_the_emulator(script, a, b, mnkl):
    _needs_real_torch()
    done = _run(script, ["--mnkl", mnkl, "--a_dtype", a, "--b_dtype", b, *MIXED])
    assert done.returncode == 0 and "PASS" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


def test_mixed_fp4_fp8_script_kernels_link_sm120a_cubins():
    _needs_real_torch()
    toolchain.require_cubin()
    done = _run(SCRIPTS[0], ["--mnkl", "128,128,128,1", "--a_dtype", "Float8E4M3FN", "--b_dtype", "Float4E2M1FN", *MIXED],
                link_cubin=True)
    assert done.returncode == 0 and "PASS" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_kernels_link_sm120a_cubins(script):
    _needs_real_torch()
    toolchain.require_cubin()
    done = _run(script, ["--mnkl", "128,128,128,1", "--sf_dtype", "Float8E8M0FNU", "--sf_vec_size", "32"], link_cubin=True)
    assert done.returncode == 0 and "PASS" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
