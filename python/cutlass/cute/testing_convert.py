"""`cute.testing.convert(src, dst)`: dst's elements become src's, converted to dst's element type
(fmha.py checks its fp8/fp16 output this way). One elementwise kernel over the tensors' common
shape, on the GPU or the CPU emulator like any other kernel; compiled once per argument kind."""
from .._dsl.errors import DSLUserCodeError
from .._dsl.jit import jit, kernel
from .._dsl.numeric import Int32
from . import arch
from .layout import size
from .typing import Tensor

_THREADS = 256
_convert_fn = None


def _build():
    @kernel
    def convert_kernel(src: Tensor, dst: Tensor, n: Int32):
        tid, _, _ = arch.thread_idx()
        bid, _, _ = arch.block_idx()
        i = bid * _THREADS + tid
        if i < n:
            dst[i] = src[i].to(dst.element_type)

    @jit
    def convert_tensor(src: Tensor, dst: Tensor):
        n = size(src)
        convert_kernel(src, dst, n).launch(grid=((n + _THREADS - 1) // _THREADS, 1, 1), block=(_THREADS, 1, 1))

    return convert_tensor


def _shape_of(t):
    shape = getattr(t, "shape", None)
    return tuple(shape) if shape is not None else None


def convert(src, dst):
    """Writes `src` converted to `dst.element_type` into `dst` (tensors of one shape)."""
    global _convert_fn
    s, d = _shape_of(src), _shape_of(dst)
    if s is None or d is None:
        raise DSLUserCodeError(f"cute.testing.convert takes two tensors, got {type(src).__name__} and "
                               f"{type(dst).__name__}", code="TYPE_MISMATCH")
    if s != d:
        raise DSLUserCodeError(f"cute.testing.convert: the tensors' shapes differ ({s} and {d})", code="SHAPE_MISMATCH")
    if _convert_fn is None:
        _convert_fn = _build()
    _convert_fn(src, dst)
