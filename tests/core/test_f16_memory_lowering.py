"""f16 memory accesses compile through libNVVM for the GPU. libNVVM (CUDA 13.0) merges five or
more adjacent, 16-byte-aligned `half` loads into an access it then refuses ("unsupported
operation"); OpenCuTe keeps f16 in memory as i16, which it vectorises and accepts."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack
import toolchain


class _DeviceArray:
    """Metadata of a CUDA array (nothing reads it: these kernels are only compiled)."""

    def __init__(self, host):
        self._host = host
        self.__cuda_array_interface__ = {"data": (host.ctypes.data, False), "shape": host.shape,
                                         "typestr": host.dtype.str, "strides": None, "version": 3}


def _gpu_tensor(a):
    return from_dlpack(_DeviceArray(a), assumed_align=16).mark_layout_dynamic()


@cute.kernel
def _smem_rows_to_global(src: cute.Tensor, dst: cute.Tensor, width: cutlass.Constexpr):
    tid = cute.arch.thread_idx()[0]
    smem = cute.arch.alloc_smem(src.element_type, 32 * width, alignment=16)
    for j in cutlass.range_constexpr(width):
        smem[tid * width + j] = src[tid * width + j]
    cute.arch.sync_threads()
    for j in cutlass.range_constexpr(width):
        dst[tid * width + j] = smem[tid * width + j]


@cute.jit
def smem_rows_to_global(src: cute.Tensor, dst: cute.Tensor, width: cutlass.Constexpr):
    _smem_rows_to_global(src, dst, width).launch(grid=(1, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("dtype", [np.float16, np.int16, np.float32])
@pytest.mark.parametrize("width", [4, 5, 8])
def test_runs_of_adjacent_accesses_compile_for_the_gpu(dtype, width):
    a = np.zeros(32 * width, dtype)
    compiled = cute.compile(smem_rows_to_global, _gpu_tensor(a), _gpu_tensor(np.zeros_like(a)), width,
                            options="--target gpu")
    toolchain.ptx_of(compiled)
    assert ".entry" in compiled.__ptx__


@pytest.mark.parametrize("width", [5, 8])
def test_the_same_kernel_is_right_on_the_emulator(width):
    a = (np.arange(32 * width) % 1000).astype(np.float16)
    out = np.zeros_like(a)
    cute.compile(smem_rows_to_global, a, out, width, options="--target cpu")(a, out)
    np.testing.assert_array_equal(out, a)
