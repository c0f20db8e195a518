"""f32 -> bf16 conversion: one hardware `cvt.rn.bf16.f32` in GPU code (every bf16 epilogue has
them), and round-to-nearest-even on the emulator, checked against a numpy model."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import toolchain


@cute.kernel
def _to_bf16(src: cute.Tensor, dst: cute.Tensor):
    i = cute.arch.thread_idx()[0]
    dst[i] = src[i].to(cutlass.BFloat16)


@cute.jit
def to_bf16(src: cute.Tensor, dst: cute.Tensor):
    _to_bf16(src, dst).launch(grid=(1, 1, 1), block=(src.shape[0], 1, 1))


def bf16_bits_rne(x):
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def test_emulator_rounds_to_nearest_even():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(60).astype(np.float32) * 1e3,
                        np.array([1.00390625, 1.01171875, -3.0, 0.0], np.float32)])  # two exact ties
    out = np.zeros(64, np.uint16)
    from cutlass.cute.runtime import from_dlpack
    dst = from_dlpack(out).mark_layout_dynamic()
    dst.element_type = cutlass.BFloat16  # view the uint16 storage as bf16
    cute.compile(to_bf16, x, dst, options="--target cpu")(x, dst)
    np.testing.assert_array_equal(out, bf16_bits_rne(x))


def test_gpu_code_uses_the_hardware_conversion():
    from cutlass.cute.runtime import from_dlpack
    out = np.zeros(32, np.uint16)
    dst = from_dlpack(out).mark_layout_dynamic()
    dst.element_type = cutlass.BFloat16
    compiled = cute.compile(to_bf16, np.zeros(32, np.float32), dst, options="--target gpu")
    assert "cvt.rn.bf16.f32" in compiled.nvvm_ir
    toolchain.ptx_of(compiled)
    assert "cvt.rn.bf16.f32" in compiled.__ptx__
