"""Type names used in annotations (`cute.Tensor`, `cute.Layout`, ...)."""
from .._dsl.tensor import Pointer, Tensor

for _cls in (Tensor, Pointer):
    _cls.__module__ = "cutlass.cute.typing"

from .layout import Layout, ComposedLayout  # noqa: E402,F401

Shape = Stride = Coord = IntTuple = Tile = tuple
