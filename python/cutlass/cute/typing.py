"""Type names used in annotations (`cute.Tensor`, `cute.Layout`, ...)."""
from .._dsl.tensor import SimpleLayout as Layout
from .._dsl.tensor import Tensor

Tensor.__module__ = "cutlass.cute.typing"
Tensor.__qualname__ = "Tensor"

Shape = Stride = Coord = IntTuple = Tile = tuple


class Pointer:
    pass
