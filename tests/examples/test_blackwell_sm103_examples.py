"""NVIDIA's sm_103 block-scaled GEMMs (BSD-3; the bwx: rows sm103_dense_blockscaled_gemm_persistent and
sm103_grouped_blockscaled_gemm, CUTE_DSL_ARCH=sm_103a) on the CPU emulator: Float4E2M1FN A and B,
factors per 16 (or 32) values, eight K = 96 MMAs per 768 values of K reading 128-byte K buffers
through descriptors that continue in the next buffer (tcgen05.SM103MmaMXF4NVF4Op /
SM103MmaMXF4Op, make_umma_smem_desc's next_src), the scale-factor TMA loads on their own warp.

The dense kernel class is driven as its run() does at small sizes, against A and B dequantised
with their factors (numpy): one CTA with N = 128; CTA pairs (M = 256, 2-CTA MMA) in a 2x4 cluster
with N = 256, where the accumulator and the factors share tensor memory (overlapping_accum); factors
per 32 values in UE8M0. Then both examples' own scripts with torch's CPU tensors standing in for
CUDA ones, checked by their torch references: the grouped GEMM at its defaults, the dense one at a
small problem (its default, 4096 x 4096 x 6144 x 2, is hours on this emulator). Where the toolchain
is present each kernel also links an sm_103a cubin (OPENCUTE_EMULATOR_LINK_CUBIN), a refusal being
an error. Skipped where the examples are absent."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

import toolchain
from test_ampere_gemm_examples import _default_stream, load_example
from test_blackwell_blockscaled_examples import Problem, _run_script_with_torch_on_the_cpu
from test_sm100_example_cubins import torch_for_import

OPTIONS = "--target cpu --gpu-arch sm_103a"
DENSE = "cute/blackwell/kernel/blockscaled_gemm/sm103_dense_blockscaled_gemm_persistent.py"
GROUPED = "cute/blackwell/kernel/blockscaled_grouped_gemm/sm103_grouped_blockscaled_gemm.py"


@pytest.fixture(autouse=True)
def _sm103(monkeypatch):
    torch_for_import(monkeypatch)  # the examples import torch for their run()
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_103a")  # the kernels size shared and tensor memory for sm_103
    if toolchain.probe().has_linker:
        monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
        monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")


DENSE_CASES = [  # (mnkl, mma tiler, cluster, factor type, vector size)
    ((256, 128, 768, 1), (128, 128), (1, 1), cutlass.Float8E4M3FN, 16),  # one CTA, two M tiles, one k-tile
    ((512, 512, 1536, 1), (256, 256), (2, 4), cutlass.Float8E8M0FNU, 16),  # CTA pairs, multicast, shared TMEM
    ((256, 256, 1536, 2), (128, 256), (1, 1), cutlass.Float8E8M0FNU, 32),  # SM103MmaMXF4Op, two batches
]


@pytest.mark.parametrize("mnkl,tiler,cluster,sf_dtype,vec", DENSE_CASES, ids=["1cta-nvf4", "2cta-2x4", "mxf4-vec32"])
def test_sm103_dense_blockscaled_gemm_on_the_emulator(monkeypatch, mnkl, tiler, cluster, sf_dtype, vec):
    ex = load_example(monkeypatch, DENSE)
    p = Problem(*mnkl, sf_dtype=sf_dtype, vec=vec)
    gemm = ex.Sm103BlockScaledPersistentDenseGemmKernel(vec, tiler, cluster, False)
    args = p.tensors()
    f = cute.compile(gemm, *args, 148, make_fake_stream(), options=OPTIONS)
    f(*args, _default_stream())
    p.check()


def test_sm103_dense_with_tma_store_epilogue(monkeypatch):
    ex = load_example(monkeypatch, DENSE)
    p = Problem(256, 256, 768, 1, sf_dtype=cutlass.Float8E4M3FN)
    gemm = ex.Sm103BlockScaledPersistentDenseGemmKernel(16, (128, 256), (1, 1), True)
    args = p.tensors()
    f = cute.compile(gemm, *args, 148, make_fake_stream(), options=OPTIONS)
    f(*args, _default_stream())
    p.check()


def test_sm103_dense_script_small_problem(monkeypatch, capsys):
    _run_script_with_torch_on_the_cpu(monkeypatch, DENSE, "--mnkl", "512,256,1536,1", arch="sm_103a")
    assert "PASS" in capsys.readouterr().out


def test_sm103_grouped_script_with_its_defaults(monkeypatch, capsys):
    _run_script_with_torch_on_the_cpu(monkeypatch, GROUPED, arch="sm_103a")
    assert "PASS" in capsys.readouterr().out
