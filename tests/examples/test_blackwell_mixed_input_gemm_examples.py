"""NVIDIA's Blackwell mixed-input GEMMs (cute/blackwell/kernel/mixed_input_gemm/, BSD-3): A in Int4
(times a BFloat16 scale per row and scale_granularity_k of K) or Int8 / Uint8 (converted only),
widened to B's BFloat16 by transform warps, then tcgen05 MMAs. Loaded at run time when the examples
are present, the kernel classes driven as each script's run() does (dense; grouped along N with a
cumsum of group extents) with numpy arrays on the CPU emulator for sm_100a, and checked against
numpy: small integers and power-of-two scales keep every sum exact in float32, so the BFloat16
output is the reference rounded to nearest even."""
import os
import sys
import types

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

from test_ampere_gemm_examples import CANDIDATES, _default_stream, load_example
from test_blackwell_blockwise_gemm_examples import _aligned, _bf16_values, _round_to_bf16

DIR = "cute/blackwell/kernel/mixed_input_gemm/"
OPTIONS = "--target cpu --gpu-arch sm_100a"


def _load(monkeypatch, name):
    for base in CANDIDATES:  # the scripts import cute.blackwell.kernel.mixed_input_gemm.mixed_input_host_utils
        if base and os.path.isdir(os.path.join(base, "cute")):
            monkeypatch.syspath_prepend(base)
    try:
        import torch  # noqa: F401
    except ImportError:  # the host utilities import torch; the kernel classes do not use it
        stand_in = types.ModuleType("torch")
        stand_in.Tensor = type("Tensor", (), {})  # the host utilities annotate with it
        monkeypatch.setitem(sys.modules, "torch", stand_in)
    return load_example(monkeypatch, DIR + name + ".py")


def _bf16(values):
    storage = _aligned(values.shape, np.uint16)
    storage[...] = (np.ascontiguousarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return storage


def _tensor(storage, order, element_type=None):
    view = storage.transpose(order)
    t = from_dlpack(view, assumed_align=16)
    if element_type is not None:
        t.element_type = element_type
    leading = [i for i, s in enumerate(t.stride) if s == 1][0]
    return t.mark_layout_dynamic(leading_dim=leading)


def _operand_a(rng, m, k, l, a_dtype, m_major):
    """(values (m, k, l), the cute tensor): Int4 packed two to a byte along the contiguous mode."""
    lo, hi = (-8, 8) if a_dtype is cutlass.Int4 else ((-8, 8) if a_dtype is cutlass.Int8 else (0, 16))
    a = rng.integers(lo, hi, size=(m, k, l))
    storage_shape = (l, k, m) if m_major else (l, m, k)  # storage order: the contiguous mode last
    values = a.transpose(2, 1, 0) if m_major else a.transpose(2, 0, 1)
    order = (2, 1, 0) if m_major else (1, 2, 0)
    if a_dtype is cutlass.Int4:
        nib = values & 0xF
        packed = _aligned(storage_shape[:2] + (storage_shape[2] // 2,), np.uint8)
        packed[...] = nib[..., 0::2] | (nib[..., 1::2] << 4)
        return a.astype(np.float32), _tensor(packed, order, cutlass.Int4)
    storage = _aligned(storage_shape, np.int8 if a_dtype is cutlass.Int8 else np.uint8)
    storage[...] = values
    return a.astype(np.float32), _tensor(storage, order)


def _scales(rng, m, k, l, granularity_k):
    """(values (m, k / granularity_k, l), the M-major BFloat16 cute tensor): powers of two."""
    s = (2.0 ** rng.integers(-1, 2, size=(m, k // granularity_k, l))).astype(np.float32)
    return s, _tensor(_bf16(s.transpose(2, 1, 0)), (2, 1, 0), cutlass.BFloat16)


def _operand_b(rng, n, k, l):
    b = rng.integers(-2, 3, size=(n, k, l)).astype(np.float32)
    return b, _tensor(_bf16(b.transpose(2, 0, 1)), (1, 2, 0), cutlass.BFloat16)


def _output(m, n, l):
    storage = _aligned((l, m, n), np.uint16)
    return storage, _tensor(storage, (1, 2, 0), cutlass.BFloat16)


# A scale granule spanning several k-tiles needs the scale's TMA tensor to give its broadcast
# (stride-0) leaf stride 0, which the block-scaled GEMMs' scale-factor tiles do not want: not yet
# reconciled (branch bwmixed has the rule; the block-scaled tiles are partitioned with the leaf).
# (m, n, k, l), A type, A M-major, scale granularity K (0: convert only), MMA tiler, cluster, 2-CTA,
# TMA store: the script's default, two scale granules of two k-tiles each over a batch of 2 with a
# K-major A and TMA stores, 2-CTA MMAs in a 2x2 cluster, and Int8 A converted only.
DENSE = [((128, 128, 128, 1), cutlass.Int4, True, 128, (128, 128, 128), (1, 1), False, False),
         ((256, 256, 512, 2), cutlass.Int4, False, 256, (128, 128, 128), (1, 1), False, True),
         ((512, 256, 256, 1), cutlass.Int4, True, 128, (256, 128, 128), (2, 2), True, True),
         ((128, 256, 256, 1), cutlass.Int8, False, 0, (128, 128, 128), (1, 2), False, False)]


@pytest.mark.parametrize("mnkl,a_dtype,m_major,gran_k,tiler,cluster,two_cta,tma_store", DENSE)
def test_mixed_input_gemm(monkeypatch, mnkl, a_dtype, m_major, gran_k, tiler, cluster, two_cta, tma_store):
    ex = _load(monkeypatch, "mixed_input_gemm")
    m, n, k, l = mnkl
    rng = np.random.default_rng(8)
    a, a_t = _operand_a(rng, m, k, l, a_dtype, m_major)
    scale_t = None
    if gran_k:
        s, scale_t = _scales(rng, m, k, l, gran_k)
        a = a * np.repeat(s, gran_k, axis=1)
    b, b_t = _operand_b(rng, n, k, l)
    c_bits, c_t = _output(m, n, l)
    gemm = ex.MixedInputGemmKernel(1 if gran_k else 0, gran_k, cutlass.Float32, two_cta, tiler, cluster, tma_store,
                                   False)
    f = cute.compile(gemm, a_t, scale_t, b_t, c_t, 4, make_fake_stream(), options=OPTIONS)
    f(a_t, scale_t, b_t, c_t, _default_stream())
    want = _round_to_bf16(np.einsum("mkl,nkl->lmn", a, b))
    np.testing.assert_array_equal(_bf16_values(c_bits), want)


@pytest.mark.parametrize("script,kernel_class", [("grouped_mixed_input_gemm", "GroupedMixedInputGemmKernel"),
                                                 ("grouped_mixed_input_gemm_acc_scale",
                                                  "GroupedMixedInputGemmAccScaleKernel")])
def test_grouped_mixed_input_gemm(monkeypatch, script, kernel_class):
    ex = _load(monkeypatch, script)
    m, k, gran_k = 128, 256, 128
    group_n = [128, 0, 256, 64]  # an empty group, and one of half a tile
    l, fused_n = len(group_n), sum(group_n)
    rng = np.random.default_rng(9)
    a, a_t = _operand_a(rng, m, k, l, cutlass.Int4, True)
    s, scale_t = _scales(rng, m, k, l, gran_k)
    a = a * np.repeat(s, gran_k, axis=1)
    b, b_t = _operand_b(rng, fused_n, k, 1)
    cumsum = np.concatenate([[0], np.cumsum(group_n)]).astype(np.int32)
    cumsum_t = from_dlpack(cumsum)
    c_bits, c_t = _output(m, fused_n, 1)
    gemm = getattr(ex, kernel_class)(1, gran_k, cutlass.Float32, False, (128, 128, 128), (1, 1), l, False)
    f = cute.compile(gemm, a_t, scale_t, b_t, cumsum_t, c_t, 4, make_fake_stream(), options=OPTIONS)
    f(a_t, scale_t, b_t, cumsum_t, c_t, _default_stream())
    want = np.zeros((m, fused_n), np.float32)
    for g in range(l):
        cols = slice(cumsum[g], cumsum[g + 1])
        want[:, cols] = a[:, :, g] @ b[cols, :, 0].T
    np.testing.assert_array_equal(_bf16_values(c_bits[0]), _round_to_bf16(want))
