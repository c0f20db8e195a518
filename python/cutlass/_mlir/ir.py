"""`cutlass._mlir.ir`: MLIR type constructors as DSL types, and the names user code annotates with.

A "type" here is what `cutlass.Int32.mlir_type` is (the C++ IR type handle); an IR value is a DSL
number's `.ir_value()`. `Location` / `InsertionPoint` exist for signatures only: OpenCuTe tracks
the user's line itself and inserts at the tracer's current point."""
from .. import _core
from .._dsl.carry import extract_mlir_values, new_from_mlir_values
from .._dsl.numeric import NumericMeta


class Value:
    """Base class for user wrappers of IR values (examples subclass `ir.Value`)."""

    def __init__(self, v=None):
        self._v = v

    # The value protocol: a wrapper passes to kernels and across dynamic control flow as the
    # value it wraps (a DSL number, a struct value ...), rebuilt as the same wrapper class.
    def __extract_mlir_values__(self):
        return extract_mlir_values(self._v)

    def __new_from_mlir_values__(self, values):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._v = new_from_mlir_values(self._v, values)
        return new


class Type:
    """Namespace of `Type.parse`-style helpers is not provided; use the typed constructors below."""


class Location:
    @staticmethod
    def unknown(context=None):
        return None


class InsertionPoint:
    def __init__(self, block=None):
        self.block = block


def _dtype(name):
    return _core.dtype_type(name)


class IntegerType:
    _SIGNLESS = {1: "Boolean", 8: "Int8", 16: "Int16", 32: "Int32", 64: "Int64"}
    _UNSIGNED = {8: "Uint8", 16: "Uint16", 32: "Uint32", 64: "Uint64"}

    @staticmethod
    def get_signless(width, context=None):
        if width not in IntegerType._SIGNLESS:
            raise ValueError(f"IntegerType.get_signless: no {width}-bit integer type (1, 8, 16, 32 or 64)")
        return _dtype(IntegerType._SIGNLESS[width])

    get_signed = get_signless

    @staticmethod
    def get_unsigned(width, context=None):
        if width not in IntegerType._UNSIGNED:
            raise ValueError(f"IntegerType.get_unsigned: no {width}-bit unsigned type (8, 16, 32 or 64)")
        return _dtype(IntegerType._UNSIGNED[width])


class F16Type:
    @staticmethod
    def get(context=None):
        return _dtype("Float16")


class BF16Type:
    @staticmethod
    def get(context=None):
        return _dtype("BFloat16")


class F32Type:
    @staticmethod
    def get(context=None):
        return _dtype("Float32")


class F64Type:
    @staticmethod
    def get(context=None):
        return _dtype("Float64")


def as_type(t):
    """A DSL numeric class or an IR type handle, as the type handle."""
    if isinstance(t, NumericMeta):
        return t.mlir_type
    return t
