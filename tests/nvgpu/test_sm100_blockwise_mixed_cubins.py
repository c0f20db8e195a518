"""The kernels of NVIDIA's Blackwell blockwise-scaled and mixed-input GEMM examples (the `bwx:` rows
blockwise_gemm, contiguous_grouped_gemm, masked_grouped_gemm of ../shared/tools/run_nvidia_examples.sh)
compile to sm_100a cubins on a machine without a GPU: as test_sm100_example_cubins.py, each kernel
class is compiled for the emulator with OPENCUTE_EMULATOR_LINK_CUBIN=1 (the file cache off), which
also lowers it through libNVVM and links it with nvJitLink for sm_100a. Reference: nvJitLink's
acceptance and the ELF magic of its output. The kernels' results on the emulator are checked in
tests/examples/test_blackwell_blockwise_gemm_examples.py."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

from test_sm100_example_cubins import EMU, check_cubin, cold_cubin_link, load, zeros  # noqa: F401 - fixture

BLOCKWISE = "cute/blackwell/kernel/blockwise_gemm/"


def operand(l, rows, cols, np_dtype, element_type=None, mode0_major=False):
    """A (rows, cols, l) tensor over (l, rows, cols) storage, or (l, cols, rows) when mode0_major."""
    if mode0_major:
        host = zeros((l, cols, rows), np_dtype).transpose(2, 1, 0)
        leading = 0
    else:
        host = zeros((l, rows, cols), np_dtype).transpose(1, 2, 0)
        leading = 1
    t = from_dlpack(host, assumed_align=16)
    if element_type is not None:
        t.element_type = element_type
    return t.mark_layout_dynamic(leading_dim=leading)


@pytest.mark.parametrize("name,cls", [("blockwise_gemm", "BlockwiseGemmKernel"),
                                      ("contiguous_grouped_gemm", "BlockwiseContiguousGroupedGemmKernel"),
                                      ("masked_grouped_gemm", "BlockwiseMaskedGroupedGemmKernel")])
def test_blockwise_gemm_kernels_link_sm100a_cubins(name, cls):
    module = load(BLOCKWISE + name + ".py")
    m, n, k, l = 256, 256, 256, 1
    a = operand(l, m, k, np.uint8, cutlass.Float8E4M3FN)
    b = operand(l, n, k, np.uint8, cutlass.Float8E4M3FN)
    c = operand(l, m, n, np.uint16, cutlass.BFloat16)
    sfa = operand(l, m, k // 128, np.float32, mode0_major=True)
    sfb = operand(l, n // 128, k // 128, np.float32)
    gemm = getattr(module, cls)(cutlass.Float32, False, (128, 128), (1, 1))
    groups = () if name == "blockwise_gemm" else (from_dlpack(np.zeros(m, np.int32)).mark_layout_dynamic(),)
    check_cubin(cute.compile(gemm, a, b, c, sfa, sfb, *groups, 2, make_fake_stream(), options=EMU))
