"""NVIDIA's Blackwell dense GEMM examples (cute/blackwell/kernel/dense_gemm/*.py, BSD-3) with 2-CTA
MMAs (--use_2cta_instrs) and their default 128x128 MMA tiler: 64 rows of the accumulator per CTA,
its columns split over the tensor-memory lane halves, and an epilogue tile whose columns interleave
two warp pairs'. Loaded at run time when the examples are present next to the repository; the
kernel classes are driven as each example's `run()` does, with numpy arrays on the CPU emulator for
sm_100a, and checked against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

from test_ampere_gemm_examples import _default_stream, _small_ints, load_example

DIR = "cute/blackwell/kernel/dense_gemm/"
OPTIONS = "--target cpu --gpu-arch sm_100a"


def _aligned(shape, dtype, align=128):
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _operand(rng, l, rows, cols, values=True):
    """As the examples' tensors: storage (l, rows, cols) read as (rows, cols, l), the columns
    contiguous (K-major A and B, N-major C), the layout marked dynamic. Returns (the float32
    values in (rows, cols, l) order, the float16 view, the cute tensor)."""
    x32 = _small_ints(rng, (l, rows, cols)) if values else np.zeros((l, rows, cols), np.float32)
    storage = _aligned((l, rows, cols), np.float16)
    storage[...] = x32
    view = storage.transpose(1, 2, 0)
    return x32.transpose(1, 2, 0), view, from_dlpack(view, assumed_align=16).mark_layout_dynamic(leading_dim=1)


def _run(monkeypatch, script, cluster, m, n, k, l=1):
    ex = load_example(monkeypatch, DIR + script + ".py")
    rng = np.random.default_rng(25)
    a32, _, a = _operand(rng, l, m, k)
    b32, _, b = _operand(rng, l, n, k)
    _, c_view, c = _operand(rng, l, m, n, values=False)
    want = np.einsum("mkl,nkl->mnl", a32, b32)
    acc, two_cta, tiler = cutlass.Float32, True, (128, 128)
    if script in ("dense_gemm", "dense_gemm_software_pipeline"):
        gemm = ex.DenseGemmKernel(acc, two_cta, tiler, cluster, True)
        cute.compile(gemm, a, b, c, make_fake_stream(), options=OPTIONS)(a, b, c, _default_stream())
    elif script in ("dense_gemm_persistent", "dense_gemm_persistent_prefetch"):
        gemm = ex.PersistentDenseGemmKernel(acc, two_cta, tiler, cluster, True)
        cute.compile(gemm, a, b, c, 148, make_fake_stream(), options=OPTIONS)(a, b, c, _default_stream())
    elif script == "dense_gemm_persistent_dynamic":  # tiles handed out over cluster launch control
        gemm = ex.PersistentDenseGemmKernel(acc, two_cta, tiler, cluster, True)
        cute.compile(gemm, a, b, c, make_fake_stream(), options=OPTIONS)(a, b, c, _default_stream())
    else:  # D = alpha * A B + beta * C, C read through the epilogue's TMA load
        src32, _, src = _operand(rng, l, m, n)
        gemm = ex.SM100PersistentDenseGemmAlphaBetaKernel(acc, cutlass.Float32, two_cta, tiler, cluster)
        alpha, beta = cutlass.Float32(2.0), cutlass.Float32(-1.0)
        f = cute.compile(gemm, a, b, src, c, alpha, beta, 148, make_fake_stream(), options=OPTIONS)
        f(a, b, src, c, alpha, beta, _default_stream())
        want = 2 * want - src32
    assert gemm.cta_tile_shape_mnk[0] == 64  # the 128-row MMA tile shared by a CTA pair
    np.testing.assert_array_equal(c_view.astype(np.float32), want)


# Two MMA tiles along M and two along N (the epilogue's interleaved columns in both halves of each
# CTA's accumulator), K of 256: four k-tiles of 64.
@pytest.mark.parametrize("script", ["dense_gemm", "dense_gemm_persistent", "dense_gemm_persistent_prefetch",
                                    "dense_gemm_software_pipeline", "dense_gemm_alpha_beta_persistent",
                                    "dense_gemm_persistent_dynamic"])
def test_two_cta_default_tiler_on_the_emulator(monkeypatch, script):
    _run(monkeypatch, script, (2, 1), 256, 256, 256)


def test_two_cta_in_a_2x2_cluster_on_the_emulator(monkeypatch):
    # A and B multicast across the cluster besides the CTA pair's cta_group::2 loads.
    _run(monkeypatch, "dense_gemm_persistent", (2, 2), 512, 512, 1024)
