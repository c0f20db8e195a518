"""Type names used in annotations (`cute.Tensor`, `cute.Layout`, ...)."""
from .._dsl.tensor import Pointer, Tensor

for _cls in (Tensor, Pointer):
    _cls.__module__ = "cutlass.cute.typing"

from .layout import Layout, ComposedLayout  # noqa: E402,F401

Shape = Stride = Coord = IntTuple = Tile = tuple

from .. import _core as _core  # noqa: E402

# Atoms and their tilings (compile-time structure; as jit/kernel arguments they are static).
class _CopyAtomType(type):
    """`cute.CopyAtom`: the class of copy atoms (the C++ ones and TMA atoms); `cute.CopyAtom(op,
    trait)` is the atom a trait carries (NVIDIA's MLA decode builds its paged TMA atoms so)."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _core.cute.CopyAtom) or hasattr(obj, "_copy_atom")

    def __call__(cls, op, trait, *, loc=None, ip=None):
        atom = getattr(trait, "atom", None)
        if atom is None:
            raise TypeError(f"cute.CopyAtom(op, trait): the trait must carry an atom, got {type(trait).__name__}")
        return atom


class CopyAtom(metaclass=_CopyAtomType):
    pass


TiledCopy = _core.cute.TiledCopy
ThrCopy = _core.cute.ThrCopy
from .mma import MmaAtom, TiledMma, ThrMma  # noqa: E402,F401

# The DSL's numeric types, also importable from here (`from cutlass.cute.typing import Int32`).
import typing as _typing  # noqa: E402

from .._dsl.numeric import (Boolean, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64,  # noqa: E402,F401
                            Float16, BFloat16, Float32, Float64, Float8E4M3FN, Float8E5M2, Float4E2M1FN, Numeric, Integer, Float)
from .._dsl.numeric import Float8E8M0FNU, Float6E2M3FN, Float6E3M2FN  # noqa: F401

Int = _typing.Union[int, Integer]  # an integer parameter taking a Python int or a DSL integer
