"""The CuTe DSL numeric types. Each instance wraps a C++ value (`_core.Num`), static or
dynamic; every operator forwards to C++, which applies promotion and folding."""
from .. import _core
from .errors import DSLUserCodeError
from .extracted_values import ExtractedValues

# The operation codes of _core.binary / _core.compare, from C++ (dsl::BinOp, ir::CmpPredicate),
# as plain ints: operators pass them on every call.
_B, _P = _core.BinOp, _core.CmpPredicate
ADD, SUB, MUL, TRUEDIV, FLOORDIV = int(_B.Add), int(_B.Sub), int(_B.Mul), int(_B.TrueDiv), int(_B.FloorDiv)
MOD, POW, AND, OR, XOR = int(_B.Mod), int(_B.Pow), int(_B.And), int(_B.Or), int(_B.Xor)
SHL, SHR, MIN, MAX = int(_B.Shl), int(_B.Shr), int(_B.Min), int(_B.Max)
EQ, NE, LT, LE, GT, GE = int(_P.Eq), int(_P.Ne), int(_P.Lt), int(_P.Le), int(_P.Gt), int(_P.Ge)
del _B, _P

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
        # The abstract Float / Integer classes too (`cutlass.Float.zero`), by their kind.
        if cls.__name__ in _CLASSES:
            return 0.0 if cls.is_float else 0
        return 0.0 if issubclass(cls, Float) else 0

    @property
    def inf(cls):
        """Positive infinity of a float type, as a Python float (`-Float32.inf` is minus infinity);
        it takes the type of the DSL value it meets."""
        if not cls.is_float:
            raise AttributeError(f"inf is defined on float types, not {cls.__name__}")
        return float("inf")

    @property
    def nan(cls):
        if not cls.is_float:
            raise AttributeError(f"nan is defined on float types, not {cls.__name__}")
        return float("nan")

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
    __slots__ = ("_n", "_c_storage")

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

    @property
    def width(self):
        """The bit width of this number's type, read from a value (FA4's shuffle_sync checks it)."""
        return type(self).width

    @property
    def signed(self):
        return type(self).signed

    def is_static(self):
        return self._n.is_static

    def __tvm_ffi_value__(self):
        """What a TVM-FFI call receives for this scalar: its Python value."""
        return self.to(bool if type(self).__name__ == "Boolean" else float if type(self).is_float else int)

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

    def ir_value(self, *, loc=None, ip=None):
        return self._n

    # --- the JIT-argument protocol: a number held by a user argument class (quack's
    # ArgumentsBase dataclasses) passes to a jit function as a run-time parameter of its type ---
    def __get_mlir_types__(self):
        return [type(self).mlir_type]

    def __c_pointers__(self):
        import ctypes
        if not self._n.is_static:
            raise DSLUserCodeError(f"a dynamic {type(self).__name__} cannot be passed into a jit function from "
                                   "host code", code="ARG_UNSUPPORTED_TYPE")
        width, is_float, signed, _ = _core.dtype_info(type(self).__name__)
        if is_float:
            ctype = {32: ctypes.c_float, 64: ctypes.c_double}.get(width)
            if ctype is None:
                raise DSLUserCodeError(f"a {type(self).__name__} field cannot be passed as a run-time argument "
                                       "(Float32 and Float64 can)", code="ARG_UNSUPPORTED_TYPE")
            self._c_storage = ctype(self._n.value)
        else:
            self._c_storage = ctypes.c_int64(int(self._n.value))  # read back in the type's width
        return [ctypes.addressof(self._c_storage)]

    def __new_from_mlir_values__(self, values):
        v = values[0]
        return v if isinstance(v, Numeric) else wrap(v)

    @property
    def mlir_type(self):
        """The IR type of this number's class (`cutlass.Float32(1.0).mlir_type`, as the docs' adapter uses)."""
        return type(self).mlir_type

    # The value protocol, as user classes call it on their parts (see extracted_values.py).
    def __extract_mlir_values__(self):
        return ExtractedValues([self._n], self)

    def __new_from_mlir_values__(self, values):
        return type(self)(values[0])

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
    def __add__(self, o): return wrap(_core.binary(ADD, self._n, num_of(o)))
    def __radd__(self, o): return wrap(_core.binary(ADD, num_of(o), self._n))
    def __sub__(self, o): return wrap(_core.binary(SUB, self._n, num_of(o)))
    def __rsub__(self, o): return wrap(_core.binary(SUB, num_of(o), self._n))
    def __mul__(self, o): return wrap(_core.binary(MUL, self._n, num_of(o)))
    def __rmul__(self, o): return wrap(_core.binary(MUL, num_of(o), self._n))
    def __truediv__(self, o): return wrap(_core.binary(TRUEDIV, self._n, num_of(o)))
    def __rtruediv__(self, o): return wrap(_core.binary(TRUEDIV, num_of(o), self._n))
    def __floordiv__(self, o): return wrap(_core.binary(FLOORDIV, self._n, num_of(o)))
    def __rfloordiv__(self, o): return wrap(_core.binary(FLOORDIV, num_of(o), self._n))
    def __mod__(self, o): return wrap(_core.binary(MOD, self._n, num_of(o)))
    def __rmod__(self, o): return wrap(_core.binary(MOD, num_of(o), self._n))
    def __pow__(self, o): return wrap(_core.binary(POW, self._n, num_of(o)))
    def __rpow__(self, o): return wrap(_core.binary(POW, num_of(o), self._n))
    def __and__(self, o): return wrap(_core.binary(AND, self._n, num_of(o)))
    def __rand__(self, o): return wrap(_core.binary(AND, num_of(o), self._n))
    def __or__(self, o): return wrap(_core.binary(OR, self._n, num_of(o)))
    def __ror__(self, o): return wrap(_core.binary(OR, num_of(o), self._n))
    def __xor__(self, o): return wrap(_core.binary(XOR, self._n, num_of(o)))
    def __rxor__(self, o): return wrap(_core.binary(XOR, num_of(o), self._n))
    def __lshift__(self, o): return wrap(_core.binary(SHL, self._n, num_of(o)))
    def __rlshift__(self, o): return wrap(_core.binary(SHL, num_of(o), self._n))
    def __rshift__(self, o): return wrap(_core.binary(SHR, self._n, num_of(o)))
    def __rrshift__(self, o): return wrap(_core.binary(SHR, num_of(o), self._n))
    def __neg__(self): return wrap(_core.negate(self._n))
    def __pos__(self): return self
    def __invert__(self): return wrap(_core.invert(self._n))
    def __abs__(self): return wrap(_core.absolute(self._n))
    def __eq__(self, o): return wrap(_core.compare(EQ, self._n, num_of(o)))
    def __ne__(self, o): return wrap(_core.compare(NE, self._n, num_of(o)))
    def __lt__(self, o): return wrap(_core.compare(LT, self._n, num_of(o)))
    def __le__(self, o): return wrap(_core.compare(LE, self._n, num_of(o)))
    def __gt__(self, o): return wrap(_core.compare(GT, self._n, num_of(o)))
    def __ge__(self, o): return wrap(_core.compare(GE, self._n, num_of(o)))



def _defer_to_elementwise(method):
    """An element-wise operand (TensorSSA) on the other side takes over through its reflected
    method, so that `Float32(2) * tensor_ssa` works as it does in the CuTe DSL."""
    def deferring(self, o):
        return NotImplemented if getattr(o, "__dsl_elementwise__", False) else method(self, o)
    deferring.__name__ = method.__name__
    return deferring


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift"):
    for _method in (f"__{_name}__", f"__r{_name}__"):
        setattr(Numeric, _method, _defer_to_elementwise(getattr(Numeric, _method)))
for _method in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Numeric, _method, _defer_to_elementwise(getattr(Numeric, _method)))

class Integer(Numeric):
    __slots__ = ()


class Float(Numeric):
    __slots__ = ()


def _make(name, base):
    cls = NumericMeta(name, (base,), {"__slots__": (), "__module__": "cutlass"})
    _CLASSES[name] = cls
    return cls


Boolean = _make("Boolean", Integer)
Int4 = _make("Int4", Integer)  # signed 4-bit, packed two to a byte (mixed-input GEMMs' A)
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
# tf32: Float32 storage whose low 13 mantissa bits the tf32 MMAs (tcgen05 .kind::tf32) ignore.
TFloat32 = _make("TFloat32", Float)
Float64 = _make("Float64", Float)
Float8E4M3FN = _make("Float8E4M3FN", Float)
Float8E5M2 = _make("Float8E5M2", Float)
Float4E2M1FN = _make("Float4E2M1FN", Float)
# The MX formats' scale factors: unsigned powers of two 2^(bits - 127) (0xFF is NaN).
Float8E8M0FNU = _make("Float8E8M0FNU", Float)
# The MX 6-bit floats (E2M3: up to 7.5, E3M2: up to 28; no infinity, no NaN).
Float6E2M3FN = _make("Float6E2M3FN", Float)
Float6E3M2FN = _make("Float6E3M2FN", Float)

NUMERIC_TYPES = tuple(_CLASSES.values())
# IEEE-style E4M3 (with infinities), as distinct from Float8E4M3FN. Named so that code can test for
# it (`dtype is cutlass.Float8E4M3`); kernels can't hold it yet: its width and values raise
# (so it is left out of NUMERIC_TYPES, which the element-type lookups walk).
Float8E4M3 = _make("Float8E4M3", Float)


def as_numeric(x):
    """Python bool/int/float -> Boolean/Int32 (Int64 when large)/Float32; Numeric unchanged."""
    if isinstance(x, Numeric):
        return x
    return wrap(_core.as_num(x))


def annotated_class(ann, value):
    """The concrete numeric class a value annotated with `ann` becomes. The abstract classes
    (`Numeric`, `Integer`, `Float`, as in `eps: cute.Float`) keep a value that already is one
    of them; a Python value becomes the DSL's default of that kind (Int32, Float32)."""
    if ann in NUMERIC_TYPES:
        return ann
    if isinstance(value, ann):
        return type(value)
    if ann is Float:
        return Float32
    if ann is Integer:
        return Boolean if isinstance(value, bool) else Int32
    return type(as_numeric(value))


def dtype(name):
    if name in _CLASSES:
        return _CLASSES[name]
    raise TypeError(f"can't interpret {name!r} as data type")


def is_numeric_like(x):
    return isinstance(x, (Numeric, bool, int, float))


def is_dynamic(x):
    return isinstance(x, Numeric) and not x._n.is_static


# ---- DSL integers with divisibility (dynamic layout leaves, cute.assume) ----------------------

_INT_VALUE_CLASSES = {}


def _int_value_class(base):
    cls = _INT_VALUE_CLASSES.get(base)
    if cls is None:
        cls = type(base)(base.__name__, (base,), {
            "__slots__": ("_div",),
            "__module__": "cutlass",
            "__str__": lambda self: _core.layout.int_str(self),
            "divisibility": property(lambda self: self._div),
        })
        _INT_VALUE_CLASSES[base] = cls
    return cls


def _wrap_int(num, divisibility):
    proxy = wrap(num)
    if divisibility <= 1 or not isinstance(proxy, Integer) or isinstance(proxy, Boolean):
        return proxy
    obj = object.__new__(_int_value_class(type(proxy)))
    obj._n = num
    obj._div = divisibility
    return obj
