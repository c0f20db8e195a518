"""Type names used in annotations (`cute.Tensor`, `cute.Layout`, ...)."""
from .._dsl.tensor import Pointer, Tensor

for _cls in (Tensor, Pointer):
    _cls.__module__ = "cutlass.cute.typing"

from .layout import Layout, ComposedLayout  # noqa: E402,F401

Shape = Stride = Coord = IntTuple = Tile = tuple

from .. import _core as _core  # noqa: E402

# Atoms and their tilings (compile-time structure; as jit/kernel arguments they are static).
CopyAtom = _core.cute.CopyAtom
TiledCopy = _core.cute.TiledCopy
ThrCopy = _core.cute.ThrCopy
from .mma import MmaAtom, TiledMma, ThrMma  # noqa: E402,F401
