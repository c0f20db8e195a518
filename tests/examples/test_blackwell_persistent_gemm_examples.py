"""NVIDIA's Blackwell persistent dense GEMMs (cute/blackwell/kernel/dense_gemm/, BSD-3), loaded at
run time when the examples are present next to the repository (or at OPENCUTE_NVIDIA_EXAMPLES),
their kernel classes driven with numpy arrays on the CPU emulator (compiled for sm_100a) and
checked against numpy. Each persistent CTA runs the k-loops of several output tiles through the
same pipelines, as on a GPU with more tiles than CTAs: the dynamic scheduler's CTAs take canceled
clusters' tiles over cluster launch control, the static scheduler gets one persistent cluster."""
import importlib.util
import os
import sys
import types

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

from test_ampere_gemm_examples import CANDIDATES, _aligned, _cuda_bindings_stand_in, _default_stream

DENSE_GEMM = "cute/blackwell/kernel/dense_gemm"
OPTIONS = "--target cpu --gpu-arch sm_100a"


def _load(monkeypatch, name):
    relative = f"{DENSE_GEMM}/{name}.py"
    path = next((os.path.join(b, relative) for b in CANDIDATES if b and os.path.isfile(os.path.join(b, relative))),
                None)
    if path is None:
        pytest.skip(f"NVIDIA's {relative} is not present")
    _cuda_bindings_stand_in(monkeypatch)
    try:
        import torch  # noqa: F401
    except ImportError:  # the script imports torch for its run(); the kernel class does not use it
        monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    spec = importlib.util.spec_from_file_location("example_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _gemm_operands(m, n, k, l):
    """K-major A (l, m, k) and B (l, n, k), N-major C (l, m, n) in float32 (the scripts' default tf32
    inputs: small integers, exact in tf32), and the numpy product."""
    rng = np.random.default_rng(11)
    a = _aligned(rng.integers(-2, 3, (l, m, k)).astype(np.float32), np.float32)
    b = _aligned(rng.integers(-2, 3, (l, n, k)).astype(np.float32), np.float32)
    c = _aligned(np.zeros((l, m, n), np.float32), np.float32)
    ref = np.einsum("lmk,lnk->lmn", a.astype(np.float64), b.astype(np.float64))
    return a, b, c, ref


def _run(gemm, a, b, c, *extra):
    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        # As the scripts' bmm: (l, m, k) -> (m, k, l), (l, n, k) -> (n, k, l), (l, m, n) -> (m, n, l).
        gemm(*(cute.make_tensor(t.iterator, cute.select(t.layout, mode=[1, 2, 0])) for t in (a, b, c)), *extra,
             stream)

    tensors = [from_dlpack(x, assumed_align=16).mark_layout_dynamic(leading_dim=2) for x in (a, b, c)]
    cute.compile(host, *tensors, _default_stream(), options=OPTIONS)(*tensors, _default_stream())


# (m, n, k, l), mma tiler, cluster shape, TMA store: the script's default (1-CTA MMAs, 2x2 tiles
# of 16 k-blocks, more than the 7 stages of its ring), a batch of 4x3 tiles with a TMA-store
# epilogue, and clusters of two CTAs (the responses multicast to both).
DYNAMIC_CONFIGS = [((256, 256, 512, 1), (128, 128), (1, 1), False),
                   ((512, 384, 256, 2), (128, 128), (1, 1), True),
                   ((512, 512, 256, 1), (128, 64), (2, 1), False)]


@pytest.mark.parametrize("host_threads", ["1", "2"])
@pytest.mark.parametrize("mnkl,tiler,cluster,tma_store", DYNAMIC_CONFIGS)
def test_dynamic_persistent_gemm(monkeypatch, host_threads, mnkl, tiler, cluster, tma_store):
    # One host thread: the first cluster cancels every other one and computes all tiles.
    monkeypatch.setenv("OPENCUTE_EMULATOR_THREADS", host_threads)
    ex = _load(monkeypatch, "dense_gemm_persistent_dynamic")
    a, b, c, ref = _gemm_operands(*mnkl)
    gemm = ex.PersistentDenseGemmKernel(cutlass.Float32, False, tiler, cluster, tma_store, 1, "m", 1)
    assert gemm.can_implement(mnkl, cutlass.TFloat32, cutlass.TFloat32, cutlass.Float32, "k", "k", "n")
    _run(gemm, a, b, c)
    np.testing.assert_array_equal(c, ref)


def test_static_persistent_gemm_with_one_cluster(monkeypatch):
    ex = _load(monkeypatch, "dense_gemm_persistent")
    a, b, c, ref = _gemm_operands(512, 384, 256, 1)
    gemm = ex.PersistentDenseGemmKernel(cutlass.Float32, False, (128, 128), (1, 1), False)
    _run(gemm, a, b, c, 1)  # max_active_clusters = 1: one CTA does all 12 tiles
    np.testing.assert_array_equal(c, ref)
