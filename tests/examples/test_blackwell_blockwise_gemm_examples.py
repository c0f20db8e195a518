"""NVIDIA's Blackwell blockwise-scaled fp8 GEMMs (cute/blackwell/kernel/blockwise_gemm/, BSD-3):
C = (SFA * A)(SFB * B) with one A scale per row and 128 k, one B scale per 128 n and 128 k, applied
to each k-block's accumulator in the epilogue warps. Loaded at run time when the examples are
present, their kernel classes driven as each script's run() does (dense, contiguous-grouped with a
row-to-group map, masked-grouped with per-group valid rows) with numpy arrays on the CPU emulator
for sm_100a, and checked against numpy: small integer operands and power-of-two scales keep every
sum exact in float32, so the bfloat16 output is the reference rounded to nearest even."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

from test_ampere_gemm_examples import _default_stream, load_example

DIR = "cute/blackwell/kernel/blockwise_gemm/"
OPTIONS = "--target cpu --gpu-arch sm_100a"
E4M3_OF_INT = {-2: 0xC0, -1: 0xB8, 0: 0x00, 1: 0x38, 2: 0x40}  # sign, exponent (bias 7), 3 mantissa bits


def _aligned(shape, dtype, align=128):
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _tensor(storage, order, element_type=None):
    """`storage` read as the examples' (d0, d1, l) tensors: axes permuted by `order`, dynamic layout."""
    view = storage.transpose(order)
    t = from_dlpack(view, assumed_align=16)
    if element_type is not None:
        t.element_type = element_type
    return t.mark_layout_dynamic(leading_dim=[i for i, s in enumerate(view.strides) if s == view.itemsize][0])


def _fp8(rng, shape):
    """(float32 values in -2..2, their Float8E4M3FN bytes, the cute tensor) of (l, rows, k) storage."""
    ints = rng.integers(-2, 3, size=shape)
    storage = _aligned(shape, np.uint8)
    storage[...] = np.vectorize(E4M3_OF_INT.get)(ints)
    return ints.astype(np.float32), _tensor(storage, (1, 2, 0), cutlass.Float8E4M3FN)


def _scales(rng, shape, mode0_major):
    """Power-of-two float32 scales of (l, d0, d1) values; storage d0-contiguous when mode0_major."""
    values = (2.0 ** rng.integers(-1, 2, size=shape)).astype(np.float32)
    if mode0_major:
        storage = _aligned((shape[0], shape[2], shape[1]), np.float32)
        storage[...] = values.transpose(0, 2, 1)
        return values, _tensor(storage, (2, 1, 0))
    storage = _aligned(shape, np.float32)
    storage[...] = values
    return values, _tensor(storage, (1, 2, 0))


def _bf16_output(l, m, n):
    storage = _aligned((l, m, n), np.uint16)
    return storage, _tensor(storage, (1, 2, 0), cutlass.BFloat16)


def _bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _round_to_bf16(x):
    bits = np.asarray(x, np.float32).view(np.uint32)
    return _bf16_values(((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16))


def _scaled(values, scales, rows_per_scale):
    """values (l, rows, k) times scales (l, rows / rows_per_scale, k / 128), expanded."""
    l, rows, k = values.shape
    return values * scales[:, np.arange(rows) // rows_per_scale][:, :, np.arange(k) // 128]


def _operands(rng, l_a, l_b, m, n, k):
    a, a_t = _fp8(rng, (l_a, m, k))
    b, b_t = _fp8(rng, (l_b, n, k))
    sfa, sfa_t = _scales(rng, (l_a, m, k // 128), mode0_major=True)
    sfb, sfb_t = _scales(rng, (l_b, n // 128, k // 128), mode0_major=False)
    return _scaled(a, sfa, 1), _scaled(b, sfb, 128), (a_t, b_t, sfa_t, sfb_t)


@pytest.mark.parametrize("mnkl", [(256, 256, 512, 1), (128, 256, 384, 2)])
def test_blockwise_gemm(monkeypatch, mnkl):
    ex = load_example(monkeypatch, DIR + "blockwise_gemm.py")
    m, n, k, l = mnkl
    a, b, (a_t, b_t, sfa_t, sfb_t) = _operands(np.random.default_rng(5), l, l, m, n, k)
    c_bits, c_t = _bf16_output(l, m, n)
    gemm = ex.BlockwiseGemmKernel(cutlass.Float32, False, (128, 128), (1, 1))
    f = cute.compile(gemm, a_t, b_t, c_t, sfa_t, sfb_t, 2, make_fake_stream(), options=OPTIONS)
    f(a_t, b_t, c_t, sfa_t, sfb_t, _default_stream())
    np.testing.assert_array_equal(_bf16_values(c_bits), _round_to_bf16(np.einsum("lmk,lnk->lmn", a, b)))


def test_contiguous_grouped_gemm(monkeypatch):
    ex = load_example(monkeypatch, DIR + "contiguous_grouped_gemm.py")
    group_m, n, k = [256, 128, 128], 256, 384  # each group's rows a multiple of the 128-row tile
    valid_m, groups = sum(group_m), len(group_m)
    a, b, (a_t, b_t, sfa_t, sfb_t) = _operands(np.random.default_rng(6), 1, groups, valid_m, n, k)
    c_bits, c_t = _bf16_output(1, valid_m, n)
    group_of_row = np.repeat(np.arange(groups, dtype=np.int32), group_m)
    g_t = from_dlpack(group_of_row).mark_layout_dynamic()
    gemm = ex.BlockwiseContiguousGroupedGemmKernel(cutlass.Float32, False, (128, 128), (1, 1))
    f = cute.compile(gemm, a_t, b_t, c_t, sfa_t, sfb_t, g_t, 2, make_fake_stream(), options=OPTIONS)
    f(a_t, b_t, c_t, sfa_t, sfb_t, g_t, _default_stream())
    want = np.einsum("mk,mnk->mn", a[0], b[group_of_row])
    np.testing.assert_array_equal(_bf16_values(c_bits[0]), _round_to_bf16(want))


def test_masked_grouped_gemm(monkeypatch):
    ex = load_example(monkeypatch, DIR + "masked_grouped_gemm.py")
    m, n, k, masked_m = 256, 256, 256, np.array([16, 256, 1, 128], np.int32)
    l = len(masked_m)
    a, b, (a_t, b_t, sfa_t, sfb_t) = _operands(np.random.default_rng(7), l, l, m, n, k)
    c_bits, c_t = _bf16_output(l, m, n)
    g_t = from_dlpack(masked_m).mark_layout_dynamic()
    gemm = ex.BlockwiseMaskedGroupedGemmKernel(cutlass.Float32, False, (128, 128), (1, 1))
    f = cute.compile(gemm, a_t, b_t, c_t, sfa_t, sfb_t, g_t, 2, make_fake_stream(), options=OPTIONS)
    f(a_t, b_t, c_t, sfa_t, sfb_t, g_t, _default_stream())
    want = _round_to_bf16(np.einsum("lmk,lnk->lmn", a, b))
    got = _bf16_values(c_bits)
    for j, rows in enumerate(masked_m):
        np.testing.assert_array_equal(got[j, :rows], want[j, :rows])  # rows past them are unspecified
