"""cutlass.utils: helpers that NVIDIA's kernels share (layouts, FP8 tensors, ...)."""
from . import tensor_helpers
from .layout import LayoutEnum, OperandMajorMode
from .tensor_helpers import create_cute_tensor_for_fp8, is_fp8_dtype

__all__ = ["LayoutEnum", "OperandMajorMode", "tensor_helpers", "create_cute_tensor_for_fp8", "is_fp8_dtype"]
