"""Type names used in annotations (`cute.Tensor`, `cute.Layout`, ...)."""
from .._dsl.tensor import Tensor

Tensor.__module__ = "cutlass.cute.typing"
Tensor.__qualname__ = "Tensor"

from .layout import Layout, ComposedLayout  # noqa: E402,F401

Shape = Stride = Coord = IntTuple = Tile = tuple

from .._dsl.pointer import Pointer  # noqa: E402

Pointer.__module__ = "cutlass.cute.typing"
