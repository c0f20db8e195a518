"""The kernels of NVIDIA's Blackwell blockwise-scaled and mixed-input GEMM examples (the `bwx:` rows
blockwise_gemm, contiguous_grouped_gemm, masked_grouped_gemm, mixed_input_gemm,
grouped_mixed_input_gemm and grouped_mixed_input_gemm_acc_scale of
../shared/tools/run_nvidia_examples.sh) compile to sm_100a cubins on a machine without a GPU: as
test_sm100_example_cubins.py, each kernel class is compiled for the emulator with
OPENCUTE_EMULATOR_LINK_CUBIN=1 (the file cache off), which also lowers it through libNVVM and links
it with nvJitLink for sm_100a. Reference: nvJitLink's acceptance and the ELF magic of its output.
The kernels' results on the emulator are checked in tests/examples/test_blackwell_blockwise_gemm_examples.py
and test_blackwell_mixed_input_gemm_examples.py."""
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


MIXED = "cute/blackwell/kernel/mixed_input_gemm/"


def _mixed_operands(m, n, k, l, gran_k):
    """Int4 A (M-major, packed), its BFloat16 scales (M-major), K-major BFloat16 B."""
    a = from_dlpack(zeros((l, k, m // 2), np.uint8).transpose(2, 1, 0), assumed_align=16)
    a.element_type = cutlass.Int4
    a = a.mark_layout_dynamic(leading_dim=0)
    scale = operand(l, m, k // gran_k, np.uint16, cutlass.BFloat16, mode0_major=True)
    b = operand(l, n, k, np.uint16, cutlass.BFloat16)
    return a, scale, b


@pytest.fixture
def mixed_module_path(monkeypatch):
    import nvidia_examples
    monkeypatch.syspath_prepend(nvidia_examples.ROOT)  # the scripts import cute.blackwell.kernel...
    try:
        import torch  # noqa: F401
    except ImportError:
        import sys
        import types
        stand_in = types.ModuleType("torch")
        stand_in.Tensor = type("Tensor", (), {})  # the mixed-input host utilities annotate with it
        monkeypatch.setitem(sys.modules, "torch", stand_in)


def test_mixed_input_gemm_kernel_links_an_sm100a_cubin(mixed_module_path):
    module = load(MIXED + "mixed_input_gemm.py")
    m, n, k = 128, 128, 256
    a, scale, b = _mixed_operands(m, n, k, 1, 128)
    c = operand(1, m, n, np.uint16, cutlass.BFloat16)
    gemm = module.MixedInputGemmKernel(1, 128, cutlass.Float32, False, (128, 128, 128), (1, 1), False, False)
    check_cubin(cute.compile(gemm, a, scale, b, c, 2, make_fake_stream(), options=EMU))


@pytest.mark.parametrize("name,cls", [("grouped_mixed_input_gemm", "GroupedMixedInputGemmKernel"),
                                      ("grouped_mixed_input_gemm_acc_scale", "GroupedMixedInputGemmAccScaleKernel")])
def test_grouped_mixed_input_gemm_kernels_link_sm100a_cubins(mixed_module_path, name, cls):
    module = load(MIXED + name + ".py")
    m, n, k, groups = 128, 256, 256, 2
    a, scale, b = _mixed_operands(m, n, k, groups, 128)
    b = operand(1, n, k, np.uint16, cutlass.BFloat16)
    c = operand(1, m, n, np.uint16, cutlass.BFloat16)
    cumsum = from_dlpack(np.array([0, 128, 256], np.int32))
    gemm = getattr(module, cls)(1, 128, cutlass.Float32, False, (128, 128, 128), (1, 1), groups, False)
    check_cubin(cute.compile(gemm, a, scale, b, cumsum, c, 2, make_fake_stream(), options=EMU))
