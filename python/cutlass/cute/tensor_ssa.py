"""cute.TensorSSA: an immutable tensor value in registers, with a static shape and an element
type (what `Tensor.load()` returns). Every operation forwards to C++ (cpp/src/cute/tensor_ssa.h),
which broadcasts, promotes, folds static elements and emits IR for dynamic ones.

Elements are kept in CuTe's colexicographic order of the shape (mode 0 fastest).
Functions take the `loc`/`ip` keywords that @dsl_user_op code passes along; they are unused.
Interface for memory tensors: `TensorSSA._from_values(shape, dtype, scalars)` builds one from
scalars in that order; `v._values()` returns them.
"""
import enum

from .. import _core
from .._dsl import numeric as _numeric
from .._dsl.errors import DSLUserCodeError
from .._dsl.numeric import Numeric, as_numeric, wrap


class TensorSSAError(DSLUserCodeError, ValueError):
    """A TensorSSA shape, index, profile or dtype mistake (the CuTe DSL raises ValueError)."""


_core._set_ssa_error_class(TensorSSAError)


class ReductionOp(enum.Enum):
    """The combining operations of TensorSSA.reduce."""
    ADD = 0
    MUL = 1
    MAX = 2
    MIN = 3


def _wrap(t):
    obj = object.__new__(TensorSSA)
    obj._t = t
    return obj


def _wrap_any(r):
    return _wrap(r) if isinstance(r, _core.TensorSSA) else wrap(r)


def _operand(x, python_literals=True):
    """The C++ operand for x (a TensorSSA or a scalar), or None for anything else. Python ints
    and floats go to C++ as they are, where arithmetic types them (a literal takes the tensor's
    element type where it can); with python_literals=False they become Int32/Float32 first."""
    if isinstance(x, TensorSSA):
        return x._t
    if isinstance(x, Numeric):
        return x._n
    if isinstance(x, (bool, int, float)):
        return x if python_literals else as_numeric(x)._n
    return None


def _require_operand(x, what, python_literals=True):
    o = _operand(x, python_literals)
    if o is None:
        raise TypeError(f"{what}: expected a TensorSSA or a numeric scalar, got {type(x).__name__}")
    return o


def _binary(op, reflected=False):
    def method(self, other):
        o = _operand(other)
        if o is None:
            return NotImplemented
        a, b = (o, self._t) if reflected else (self._t, o)
        return _wrap(_core.ssa_binary(op, a, b))
    return method


def _compare(predicate):
    def method(self, other):
        o = _operand(other)
        if o is None:
            return NotImplemented
        return _wrap(_core.ssa_compare(predicate, self._t, o))
    return method


class TensorSSA:
    """`TensorSSA(values, shape, dtype=None)`: `values` are scalars in colexicographic order."""
    __slots__ = ("_t",)
    # Numeric operators defer to TensorSSA's reflected forms (see numeric.py).
    __dsl_elementwise__ = True
    # Carried through dynamic control flow as its C++ value `_t` (see _dsl/carry.py).
    __dsl_native_wrapper__ = True
    _from_native = staticmethod(_wrap)

    def __init__(self, values, shape, dtype=None):
        if isinstance(values, TensorSSA):
            # The value of a dialect op (`cute.TensorSSA(math.absi(x), x.shape, x.dtype)`, FA4's
            # score mods): the elements, read as `shape` in colexicographic order.
            values = values._t if values.shape == shape else values._values()
        if isinstance(values, _core.TensorSSA):
            self._t = values if dtype is None else _core.ssa_convert(values, dtype.__name__)
            return
        values = list(values)
        if dtype is None:
            if not values:
                raise TypeError("TensorSSA: dtype is needed when there are no values")
            dtype = type(as_numeric(values[0]))
        self._t = _core.ssa_from_values(shape, dtype.__name__, [dtype(v)._n for v in values])

    @classmethod
    def _from_values(cls, shape, dtype, values):
        """The TensorSSA of `shape` whose elements (colexicographic order) are `values`, each
        converted to `dtype`."""
        return cls(values, shape, dtype)

    def _values(self):
        """The element proxies, in colexicographic order."""
        return [wrap(n) for n in self._t.values()]

    def ir_value(self, *, loc=None, ip=None):
        """The value as the `_mlir` dialect functions take it (math.absf ...); TensorSSA(v, shape,
        dtype) wraps their result again."""
        return self._t

    # ---- properties -----------------------------------------------------------------------
    @property
    def shape(self):
        return self._t.shape

    @property
    def element_type(self):
        return _numeric.dtype(self._t.dtype)

    dtype = element_type

    @property
    def type(self):
        return self._t.vector_type

    def __len__(self):
        return self._t.size

    def __str__(self):
        return str(self._t)

    __repr__ = __str__

    def __bool__(self):
        raise DSLUserCodeError("a TensorSSA has no truth value; reduce it first (cute.any_, cute.all_ or .reduce)",
                               code="SSA_TRUTH_VALUE")

    __hash__ = object.__hash__

    # ---- conversions, reductions, indexing -------------------------------------------------
    def to(self, dtype, *, loc=None, ip=None):
        if not (isinstance(dtype, type) and issubclass(dtype, Numeric)):
            raise TypeError(f"TensorSSA.to expects a DSL numeric type such as cutlass.Float32, got {dtype!r}")
        return _wrap(_core.ssa_convert(self._t, dtype.__name__))

    def reduce(self, op, init_val, reduction_profile=0, *, loc=None, ip=None):
        code = int(_core.ReductionOp[op.name]) if isinstance(op, ReductionOp) else -1
        init = self.element_type(init_val)
        return _wrap_any(_core.ssa_reduce(self._t, code, init._n, reduction_profile))

    def broadcast_to(self, target_shape, *, loc=None, ip=None):
        return _wrap(_core.ssa_broadcast_to(self._t, target_shape))

    def reshape(self, shape, *, loc=None, ip=None):
        """The same elements, in colexicographic order, as a TensorSSA of `shape` (same size)."""
        return _wrap(_core.ssa_reshape(self._t, shape))

    def __getitem__(self, key):
        return _wrap_any(_core.ssa_getitem(self._t, key))

    # ---- operators -------------------------------------------------------------------------
    __add__, __radd__ = _binary(_numeric.ADD), _binary(_numeric.ADD, True)
    __sub__, __rsub__ = _binary(_numeric.SUB), _binary(_numeric.SUB, True)
    __mul__, __rmul__ = _binary(_numeric.MUL), _binary(_numeric.MUL, True)
    __truediv__, __rtruediv__ = _binary(_numeric.TRUEDIV), _binary(_numeric.TRUEDIV, True)
    __floordiv__, __rfloordiv__ = _binary(_numeric.FLOORDIV), _binary(_numeric.FLOORDIV, True)
    __mod__, __rmod__ = _binary(_numeric.MOD), _binary(_numeric.MOD, True)
    __pow__, __rpow__ = _binary(_numeric.POW), _binary(_numeric.POW, True)
    __and__, __rand__ = _binary(_numeric.AND), _binary(_numeric.AND, True)
    __or__, __ror__ = _binary(_numeric.OR), _binary(_numeric.OR, True)
    __xor__, __rxor__ = _binary(_numeric.XOR), _binary(_numeric.XOR, True)
    __lshift__, __rlshift__ = _binary(_numeric.SHL), _binary(_numeric.SHL, True)
    __rshift__, __rrshift__ = _binary(_numeric.SHR), _binary(_numeric.SHR, True)
    __eq__, __ne__ = _compare(_numeric.EQ), _compare(_numeric.NE)
    __lt__, __le__ = _compare(_numeric.LT), _compare(_numeric.LE)
    __gt__, __ge__ = _compare(_numeric.GT), _compare(_numeric.GE)

    def __neg__(self):
        return _wrap(_core.ssa_negate(self._t))

    def __pos__(self):
        return self

    def __abs__(self):
        return _wrap(_core.ssa_absolute(self._t))

    def __invert__(self):
        return _wrap(_core.ssa_invert(self._t))


TensorSSA.__module__ = "cutlass.cute"


def apply_math(name, args):
    """cute.math.<name> element-wise over TensorSSA (and scalar) arguments."""
    return _wrap(_core.ssa_math(name, [_require_operand(a, f"cute.math.{name}") for a in args]))


# ---- constructors and selection ----------------------------------------------------------------

def full(shape, fill_value, dtype=None, *, loc=None, ip=None):
    """A TensorSSA of a static `shape` whose elements are `fill_value` converted to `dtype`."""
    fill = dtype(fill_value) if dtype is not None else as_numeric(fill_value)
    return _wrap(_core.ssa_full(shape, fill._n, type(fill).__name__))


def full_like(a, fill_value, dtype=None, *, loc=None, ip=None):
    """`full` with the shape of `a` (a TensorSSA or a Tensor); dtype defaults to a's."""
    return full(a.shape, fill_value, dtype if dtype is not None else a.element_type)


def zeros_like(a, dtype=None, *, loc=None, ip=None):
    return full_like(a, 0, dtype)


def ones_like(a, dtype=None, *, loc=None, ip=None):
    return full_like(a, 1, dtype)


def empty_like(a, dtype=None, *, loc=None, ip=None):
    """Like zeros_like: registers have to hold some value, and zero is the one that never
    surprises."""
    return full_like(a, 0, dtype)


def where(cond, x, y, *, loc=None, ip=None):
    """Element-wise `x if cond else y`; scalars broadcast, x and y must share one dtype."""
    # A Python scalar here is an Int32/Float32 value, not a literal that adapts: the CuTe DSL
    # asks for full_like(x, 0) to select against a Float16 tensor.
    return _wrap(_core.ssa_where(_require_operand(cond, "where", False), _require_operand(x, "where", False),
                                 _require_operand(y, "where", False)))


def any_(x, *, loc=None, ip=None):
    """Boolean: some element of the TensorSSA is non-zero."""
    return wrap(_core.ssa_any(_as_tensor(x, "any_")))


def all_(x, *, loc=None, ip=None):
    """Boolean: every element of the TensorSSA is non-zero."""
    return wrap(_core.ssa_all(_as_tensor(x, "all_")))


def _as_tensor(x, what):
    if not isinstance(x, TensorSSA):
        raise TypeError(f"cute.{what} expects a TensorSSA, got {type(x).__name__}")
    return x._t
