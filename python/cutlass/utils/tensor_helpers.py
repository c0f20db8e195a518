"""Host helpers for FP8 tensors. Frameworks without FP8 DLPack support hand over uint8 storage;
`create_cute_tensor_for_fp8` views it as the FP8 type and, given an f32 source, fills it with the
DSL's own f32 -> FP8 conversion (round to nearest even, saturating to the largest finite value),
run as a kernel where the storage lives (GPU, or the CPU emulator for host arrays)."""
from .. import cute
from .._dsl import numeric as _numeric
from ..cute.runtime import from_dlpack

_FP8_NAMES = ("Float8E4M3FN", "Float8E5M2")


def is_fp8_dtype(dtype):
    return getattr(dtype, "__name__", None) in _FP8_NAMES and isinstance(dtype, _numeric.NumericMeta)


def _convert(source, target, dtype):

    @cute.kernel
    def convert_kernel(src: cute.Tensor, dst: cute.Tensor, n: _numeric.Int32):
        t, _, _ = cute.arch.thread_idx()
        b, _, _ = cute.arch.block_idx()
        i = b * 256 + t
        if i < n:
            dst[i] = src[i].to(dtype)

    @cute.jit
    def convert(src: cute.Tensor, dst: cute.Tensor, n: _numeric.Int32):
        convert_kernel(src, dst, n).launch(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1))

    src = from_dlpack(source)
    n = 1
    for extent in src.shape:
        n *= extent
    options = None if getattr(target, "is_cuda", False) else "--target cpu"
    cute.compile(convert, src, target, n, options=options)(src, target, n)


def create_cute_tensor_for_fp8(storage, dtype, leading_dim, source_f32_tensor=None, assumed_align=16,
                               mark_dynamic_layout=True):
    """A cute tensor over `storage` (a framework tensor; uint8 storage for FP8 types) with element
    type `dtype`; for FP8 types, `source_f32_tensor` (same shape) is converted into the storage."""
    tensor = from_dlpack(storage, assumed_align=assumed_align)
    # Always the requested type: the storage's own type differs for FP8 (uint8) and TFloat32 (float32).
    tensor.element_type = dtype
    if is_fp8_dtype(dtype):
        if source_f32_tensor is not None:
            _convert(source_f32_tensor, tensor, dtype)
    if mark_dynamic_layout:
        tensor.mark_layout_dynamic(leading_dim=leading_dim)
    return tensor
