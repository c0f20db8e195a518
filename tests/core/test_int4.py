"""cutlass.Int4: signed 4-bit integers packed two to a byte (the first in the low nibble), the
narrow operand of NVIDIA's Blackwell mixed-input GEMMs. Bytes are viewed as Int4 through
element_type (doubling the stride-1 extent), copied whole into register fragments, and converted
element-wise to wider types. The reference is the two's-complement reading of each nibble."""
import os

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack
import toolchain

OPTIONS = "--target cpu --gpu-arch sm_100a"


def test_int4_is_a_signed_4_bit_integer_type():
    assert cutlass.Int4.width == 4 and cutlass.Int4.signed
    assert issubclass(cutlass.Int4, cutlass.Integer)
    assert cutlass.dtype("Int4") is cutlass.Int4


def _nibbles(values):
    v = np.asarray(values, np.int64)
    return ((v[0::2] & 0xF) | ((v[1::2] & 0xF) << 4)).astype(np.uint8)


def _widen(to_type):
    @cute.kernel
    def kernel(a: cute.Tensor, out: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        frag = cute.make_rmem_tensor((8,), cutlass.Int4)
        cute.autovec_copy(cute.local_tile(a, (8,), (t,)), frag)  # 8 elements: one 32-bit word
        wide = cute.make_rmem_tensor((8,), cutlass.Float32)
        wide.store(frag.load().to(to_type).to(cutlass.Float32))
        cute.autovec_copy(wide, cute.local_tile(out, (8,), (t,)))

    @cute.jit
    def run(a: cute.Tensor, out: cute.Tensor):
        kernel(a, out).launch(grid=(1, 1, 1), block=(cute.size(out) // 8, 1, 1))

    return run


@pytest.mark.parametrize("to_type", [cutlass.BFloat16, cutlass.Float16, cutlass.Float32, cutlass.Int32])
def test_int4_fragments_widen_with_their_sign(to_type):
    values = np.random.default_rng(3).integers(-8, 8, size=64)
    values[:16] = np.arange(-8, 8)  # every code
    a = from_dlpack(_nibbles(values), assumed_align=16)
    a.element_type = cutlass.Int4
    assert a.shape == (64,)
    out = np.zeros(64, np.float32)
    cute.compile(_widen(to_type), a, out, options=OPTIONS)(a, out)
    np.testing.assert_array_equal(out, values.astype(np.float32))


def test_int4_conversion_links_an_sm100a_cubin(monkeypatch):
    toolchain.require_cubin()
    monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")
    a = from_dlpack(_nibbles(np.zeros(16, np.int64)), assumed_align=16)
    a.element_type = cutlass.Int4
    out = np.zeros(16, np.float32)
    compiled = cute.compile(_widen(cutlass.BFloat16), a, out, options=OPTIONS)
    assert bytes(compiled.__cubin__[:4]) == b"\x7fELF"
