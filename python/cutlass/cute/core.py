"""`cutlass.cute.core`: names NVIDIA's examples import from the DSL's core module. Shapes and tiles
are plain (nested) tuples here, so `_pack_shape` / `_pack_tile` hand them back checked."""
from .._dsl.address_space import AddressSpace  # noqa: F401
from .._dsl.errors import DSLUserCodeError
from .tensor import make_ptr  # noqa: F401
from .typing import ThrCopy, ThrMma  # noqa: F401 - annotations name them on cute.core


def _check_tuple(x, what):
    if isinstance(x, tuple):
        for v in x:
            _check_tuple(v, what)
        return
    if x is None or hasattr(x, "shape") or isinstance(x, int) or hasattr(x, "ir_value"):
        return  # ints, dynamic ints, None (a tile's "whole mode") and layouts
    raise DSLUserCodeError(f"{what}: {x!r} is not an int, a dynamic int or a layout", code="TYPE_MISMATCH")


def _pack_shape(shape, *, loc=None, ip=None):
    _check_tuple(shape, "_pack_shape")
    return shape


def _pack_tile(tile, *, loc=None, ip=None):
    _check_tuple(tile, "_pack_tile")
    return tile
