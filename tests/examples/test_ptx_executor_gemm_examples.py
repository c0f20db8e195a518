"""Whole GEMMs on the PTX executor ("--target ptx"): NVIDIA's Hopper dense GEMM example (wgmma,
TMA loads and stores, mbarrier pipelines, stmatrix epilogue, clusters with multicast) and Ampere
tensor-op GEMM example (cp.async, ldmatrix, mma.sync), run from the PTX libNVVM made for sm_90a /
sm_80, checked against numpy and against the IR emulator. Skipped where the examples or libNVVM
are absent (see test_hopper_gemm_examples.py for how the examples are found)."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

from ptx_target import needs_libnvvm
from test_ampere_gemm_examples import _default_stream, _small_ints, load_example
from test_hopper_gemm_examples import DENSE_GEMM, _operand

pytestmark = needs_libnvvm


def _hopper_dense_gemm(monkeypatch, target, tile, cluster, m, n, a_major, b_major):
    dg = load_example(monkeypatch, DENSE_GEMM)
    k, l = 128, 1
    rng = np.random.default_rng(13)
    a32, _, a = _operand(rng, l, m, k, a_major == "m", np.float16)
    b32, _, b = _operand(rng, l, n, k, b_major == "n", np.float16)
    _, c_storage, c = _operand(rng, l, m, n, False, np.float16, values=False)
    gemm = dg.HopperWgmmaGemmKernel(cutlass.Float32, tile, cluster)
    f = cute.compile(gemm, a, b, c, make_fake_stream(), options=f"--target {target} --gpu-arch sm_90a")
    assert f.target == target
    f(a, b, c, _default_stream())
    return c_storage.astype(np.float32), np.einsum("mkl,nkl->mnl", a32, b32)


@pytest.mark.parametrize("a_major,b_major,tile,cluster,m,n", [
    ("k", "k", (64, 64), (1, 1), 512, 64),
    ("m", "n", (64, 64), (1, 1), 512, 64),
    ("k", "k", (64, 64), (2, 1), 1024, 64),   # B multicast over a 2-CTA cluster
])
def test_ptx_hopper_dense_gemm_example(monkeypatch, a_major, b_major, tile, cluster, m, n):
    executed, want = _hopper_dense_gemm(monkeypatch, "ptx", tile, cluster, m, n, a_major, b_major)
    np.testing.assert_array_equal(executed, want)
    emulated, _ = _hopper_dense_gemm(monkeypatch, "cpu", tile, cluster, m, n, a_major, b_major)
    np.testing.assert_array_equal(executed, emulated)


def _ampere_tensorop_gemm(monkeypatch, target, arch):
    tg = load_example(monkeypatch, "cute/ampere/kernel/dense_gemm/tensorop_gemm.py")
    m, n, k, l = 128, 128, 96, 1
    rng = np.random.default_rng(1)
    a32, b32 = _small_ints(rng, (l, k, m)), _small_ints(rng, (l, k, n))
    a, b, c = a32.astype(np.float16).transpose(0, 2, 1), b32.astype(np.float16), np.zeros((l, m, n), np.float16)

    def tensor(x, leading_dim):  # as test_ampere_gemm_examples.py makes them
        t = from_dlpack(x, assumed_align=16)
        t.element_type = cutlass.Float16
        t.mark_layout_dynamic(leading_dim=leading_dim)
        return t.mark_compact_shape_dynamic(mode=leading_dim, stride_order=(0, 1, 2) if leading_dim == 2 else (0, 2, 1),
                                            divisibility=8)

    a_, b_, c_ = tensor(a, 1), tensor(b, 2), tensor(c, 2)
    gemm = tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1), False)
    f = cute.compile(tg.bmm, gemm, a_, b_, c_, make_fake_stream(), lambda x: x,
                     options=f"--target {target} --gpu-arch {arch}")
    assert f.target == target
    f(a_, b_, c_, _default_stream())
    return c.astype(np.float32), np.matmul(a32.transpose(0, 2, 1), b32)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ptx_ampere_tensorop_gemm_example(monkeypatch, arch):
    executed, want = _ampere_tensorop_gemm(monkeypatch, "ptx", arch)
    np.testing.assert_array_equal(executed, want)
    emulated, _ = _ampere_tensorop_gemm(monkeypatch, "cpu", arch)
    np.testing.assert_array_equal(executed, emulated)
