"""The CuTe DSL numeric types. Each instance wraps a C++ value (`_core.Num`), static or
dynamic; every operator forwards to C++, which applies promotion and folding."""
from .. import _core
from .errors import DSLUserCodeError

# Order must match opencute::dsl::BinOp.
ADD, SUB, MUL, TRUEDIV, FLOORDIV, MOD, POW, AND, OR, XOR, SHL, SHR, MIN, MAX = range(14)
# Order must match opencute::ir::CmpPredicate.
EQ, NE, LT, LE, GT, GE = range(6)

_CLASSES = {}


def wrap(n):
    """Python proxy for a C++ Num."""
    cls = _CLASSES[n.dtype]
    obj = object.__new__(cls)
    obj._n = n
    return obj


def num_of(x):
    return x._n if isinstance(x, Numeric) else x


class NumericMeta(type):
    def __str__(cls):
        return cls.__name__

    @property
    def width(cls):
        return _core.dtype_info(cls.__name__)[0]

    @property
    def is_float(cls):
        return _core.dtype_info(cls.__name__)[1]

    @property
    def is_integer(cls):
        return not _core.dtype_info(cls.__name__)[1]

    @property
    def signed(cls):
        return _core.dtype_info(cls.__name__)[2]

    @property
    def bytes(cls):
        return _core.dtype_info(cls.__name__)[3]

    @property
    def zero(cls):
        return 0.0 if cls.is_float else 0

    @property
    def min(cls):
        w, f, s, _ = _core.dtype_info(cls.__name__)
        if f:
            raise AttributeError("min is defined on integer types")
        return -(1 << (w - 1)) if s else 0

    @property
    def max(cls):
        w, f, s, _ = _core.dtype_info(cls.__name__)
        if f:
            raise AttributeError("max is defined on integer types")
        return (1 << (w - 1)) - 1 if s else (1 << w) - 1

    def is_same_kind(cls, other):
        return cls.is_float == other.is_float

    @property
    def mlir_type(cls):
        return _core.dtype_type(cls.__name__)


class Numeric(metaclass=NumericMeta):
    __slots__ = ("_n",)

    def __init__(self, x=0):
        if isinstance(x, Numeric):
            x = x._n
        self._n = _core.num(type(self).__name__, x)

    # --- value access -------------------------------------------------------------------
    @property
    def dtype(self):
        return type(self)

    @property
    def value(self):
        return self._n.value if self._n.is_static else self._n

    def is_static(self):
        return self._n.is_static

    def to(self, dtype):
        if dtype in (int, float, bool):
            if not self._n.is_static:
                raise ValueError(f"cannot convert a dynamic {type(self).__name__} to Python {dtype.__name__}")
            return dtype(self._n.value)
        if dtype is type(self):
            return self
        return wrap(_core.convert(self._n, dtype.__name__))

    def bitcast(self, dtype):
        return wrap(_core.bitcast(self._n, dtype.__name__))

    def ir_value(self):
        return self._n

    def __str__(self):
        return "?"

    def __repr__(self):
        return repr(self._n)

    def __hash__(self):
        return id(self)

    def __bool__(self):
        if self._n.is_static:
            return bool(self._n.value)
        raise DSLUserCodeError(
            "a dynamic value cannot be converted to a Python bool at trace time; use it in an `if`/`while` "
            "that the DSL compiles, or cutlass.const_expr only on static values",
            code="PHASE_DYNAMIC_TO_STATIC_BOOL")

    def __index__(self):
        if self._n.is_static and not type(self).is_float:
            return int(self._n.value)
        raise DSLUserCodeError(
            f"a dynamic {type(self).__name__} cannot be used where Python needs a static integer "
            "(e.g. to index a Python list or as a range_constexpr bound)", code="PHASE_DYNAMIC_INDEX")

    def __int__(self):
        if self._n.is_static:
            return int(self._n.value)
        raise DSLUserCodeError("a dynamic value cannot be converted to a Python int", code="PHASE_DYNAMIC_INDEX")

    def __float__(self):
        if self._n.is_static:
            return float(self._n.value)
        raise DSLUserCodeError("a dynamic value cannot be converted to a Python float", code="PHASE_DYNAMIC_INDEX")

    # --- arithmetic -----------------------------------------------------------------------
    # Operators are generated below by _forward/_reflected/_compare; an element-wise operand
    # (TensorSSA) on the other side takes over through its reflected method.
    def __neg__(self): return wrap(_core.negate(self._n))
    def __pos__(self): return self
    def __invert__(self): return wrap(_core.invert(self._n))
    def __abs__(self): return wrap(_core.absolute(self._n))


def _defers(o):
    return getattr(o, "__dsl_elementwise__", False)


def _forward(op):
    def method(self, o):
        return NotImplemented if _defers(o) else wrap(_core.binary(op, self._n, num_of(o)))
    return method


def _reflected(op):
    def method(self, o):
        return NotImplemented if _defers(o) else wrap(_core.binary(op, num_of(o), self._n))
    return method


def _compare(predicate):
    def method(self, o):
        return NotImplemented if _defers(o) else wrap(_core.compare(predicate, self._n, num_of(o)))
    return method


for _name, _op in (("add", ADD), ("sub", SUB), ("mul", MUL), ("truediv", TRUEDIV), ("floordiv", FLOORDIV),
                   ("mod", MOD), ("pow", POW), ("and", AND), ("or", OR), ("xor", XOR), ("lshift", SHL),
                   ("rshift", SHR)):
    setattr(Numeric, f"__{_name}__", _forward(_op))
    setattr(Numeric, f"__r{_name}__", _reflected(_op))
for _name, _pred in (("eq", EQ), ("ne", NE), ("lt", LT), ("le", LE), ("gt", GT), ("ge", GE)):
    setattr(Numeric, f"__{_name}__", _compare(_pred))


class Integer(Numeric):
    __slots__ = ()


class Float(Numeric):
    __slots__ = ()


def _make(name, base):
    cls = NumericMeta(name, (base,), {"__slots__": (), "__module__": "cutlass"})
    _CLASSES[name] = cls
    return cls


Boolean = _make("Boolean", Integer)
Int8 = _make("Int8", Integer)
Int16 = _make("Int16", Integer)
Int32 = _make("Int32", Integer)
Int64 = _make("Int64", Integer)
Uint8 = _make("Uint8", Integer)
Uint16 = _make("Uint16", Integer)
Uint32 = _make("Uint32", Integer)
Uint64 = _make("Uint64", Integer)
Float16 = _make("Float16", Float)
BFloat16 = _make("BFloat16", Float)
Float32 = _make("Float32", Float)
Float64 = _make("Float64", Float)

NUMERIC_TYPES = tuple(_CLASSES.values())


def as_numeric(x):
    """Python bool/int/float -> Boolean/Int32 (Int64 when large)/Float32; Numeric unchanged."""
    if isinstance(x, Numeric):
        return x
    return wrap(_core.as_num(x))


def dtype(name):
    if name in _CLASSES:
        return _CLASSES[name]
    raise TypeError(f"can't interpret {name!r} as data type")


def is_numeric_like(x):
    return isinstance(x, (Numeric, bool, int, float))


def is_dynamic(x):
    return isinstance(x, Numeric) and not x._n.is_static
