"""Values across dynamic control flow (loop-carried, or assigned in a dynamic `if`).

A value flattens to a *structure* (everything static about it) and a list of IR values, and
rebuilds from a structure and new IR values. C++ owns the protocol for its own values (tensors,
layouts, pointers, TensorSSA: `cutlass._core.carry`); this module composes it with DSL scalars,
tuples and lists (nested), user classes with `__extract_mlir_values__` /
`__new_from_mlir_values__`, and plain Python objects, which must stay the same object.

Two structures *join* when they describe the same static value; facts that are only bounds (a
pointer's alignment, a dynamic leaf's divisibility) join to what holds on both paths, and a
loop whose body weakens them is traced again from the weaker structure ("widened").
"""
import enum

from .. import _core
from .extracted_values import flat_values, rebuild_from_flat
from .numeric import Boolean, Numeric, as_numeric, wrap

_Native = _core.carry.Structure


class Mismatch(Exception):
    """Two paths give a variable values of different structure; `code` is the DSL error code."""

    def __init__(self, message, code="TYPE_UNSTABLE_JOIN"):
        super().__init__(message)
        self.code = code


class Scalar:
    """A DSL number of class `cls`; `literal` when it was a Python int/float/bool, which converts
    to a number class of its kind."""
    __slots__ = ("cls", "literal")

    def __init__(self, cls, literal):
        self.cls, self.literal = cls, literal

    def __str__(self):
        return self.cls.__name__


class Sequence:
    __slots__ = ("kind", "items")

    def __init__(self, kind, items):
        self.kind, self.items = kind, items

    def __str__(self):
        return f"{self.kind.__name__}({', '.join(str(i) for i in self.items)})"


class Protocol:
    """A user object with __extract_mlir_values__ / __new_from_mlir_values__; the object itself
    is the template."""
    __slots__ = ("template", "types")

    def __init__(self, template, types):
        self.template, self.types = template, types

    def __str__(self):
        return type(self.template).__name__


class Native:
    """A C++ value; `wrapper` is the Python class around it (cute.TensorSSA), or None when bare."""
    __slots__ = ("s", "wrapper")

    def __init__(self, s, wrapper):
        self.s, self.wrapper = s, wrapper

    def __str__(self):
        return str(self.s)


class Static:
    """Any other Python object: it must be the same object on every path (no IR)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __str__(self):
        return f"Python object {type(self.obj).__name__}"


_PY_SCALARS = (bool, int, float)


def _native_wrapper(value):
    """The class of `value` when it is a Python wrapper around one C++ value (it declares
    `__dsl_native_wrapper__`, keeps the value in `_t` and rebuilds with `_from_native`), else None.
    A protocol rather than an import: cute's classes sit above this front end."""
    cls = type(value)
    return cls if getattr(cls, "__dsl_native_wrapper__", False) else None


def _nums(values):
    return [v._n if isinstance(v, Numeric) else v for v in values]


def structure_of(value, literals_static=False):
    """The structure of `value` (emits no IR). Python ints/floats/bools become DSL numbers
    (they may change inside the region), or with literals_static, static parts."""
    if value is None:  # an optional argument left out (quack passes None tensors into loops)
        return Static(None)
    if isinstance(value, Numeric):
        return Scalar(type(wrap(value._n)), False)
    if isinstance(value, _PY_SCALARS) and not isinstance(value, enum.Enum):
        return Static(value) if literals_static else Scalar(type(as_numeric(value)), True)
    if isinstance(value, (tuple, list)):
        return Sequence(type(value), [structure_of(v, literals_static) for v in value])
    wrapper = _native_wrapper(value)
    if wrapper is not None:
        return Native(_core.carry.flatten(value._t)[0], wrapper)
    flat = _core.carry.flatten(value)
    if flat is not None:
        return Native(flat[0], None)
    if hasattr(value, "__extract_mlir_values__") and hasattr(value, "__new_from_mlir_values__") \
            and not isinstance(value, type):
        return Protocol(value, [v.ir_type for v in _nums(flat_values(value.__extract_mlir_values__()))])
    return Static(value)


def _same_static(a, b):
    if a is b:
        return True
    if type(a) is type(b) and isinstance(a, (str, bytes, type(None), enum.Enum)):
        return a == b
    return False


def join(a, b):
    """(the structure both a and b conform to, whether it knows less than a); raises Mismatch."""
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        if a.cls is b.cls:
            return Scalar(a.cls, a.literal and b.literal), False
        if b.literal and _same_kind(a.cls, b.cls):
            return Scalar(a.cls, a.literal), False
        raise Mismatch(f"from {a.cls.__name__} to {b.cls.__name__}")
    if isinstance(a, Sequence) and isinstance(b, Sequence):
        if a.kind is not b.kind or len(a.items) != len(b.items):
            raise Mismatch(f"from {a} to {b}")
        items, widened = [], False
        for x, y in zip(a.items, b.items):
            j, w = join(x, y)
            items.append(j)
            widened |= w
        return Sequence(a.kind, items), widened
    if isinstance(a, Native) and isinstance(b, Native) and a.wrapper is b.wrapper:
        s, widened, why = a.s.join(b.s)
        if s is None:
            raise Mismatch(f"from {why.replace(' and ', ' to ', 1) if ' and ' in why else why}")
        return Native(s, a.wrapper), widened
    if isinstance(a, Protocol) and isinstance(b, Protocol) and type(a.template) is type(b.template):
        if a.types != b.types:
            raise Mismatch(f"{type(a.template).__name__} with IR values of types "
                           f"[{', '.join(map(str, a.types))}] and [{', '.join(map(str, b.types))}]")
        return a, False
    if isinstance(a, Static) and isinstance(b, Static):
        if _same_static(a.obj, b.obj):
            return a, False
        raise Mismatch(f"{type(a.obj).__name__}", code="PHASE_MUTATE_PYTHON")
    if isinstance(a, Static):
        raise Mismatch(f"{type(a.obj).__name__}", code="PHASE_MUTATE_PYTHON")
    raise Mismatch(f"from {a} to {b}")


def _same_kind(target, literal_cls):
    return target.is_float == literal_cls.is_float and (target is Boolean) == (literal_cls is Boolean)


def values_for(node, value):
    """The IR values of `value` typed as structure `node` says (which it must conform to)."""
    if isinstance(node, Scalar):
        n = value if isinstance(value, Numeric) else node.cls(value)
        return [n._n]
    if isinstance(node, Sequence):
        out = []
        for n, v in zip(node.items, value):
            out.extend(values_for(n, v))
        return out
    if isinstance(node, Native):
        _, vals = _core.carry.flatten(value._t if node.wrapper else value)
        return node.s.conform(vals)
    if isinstance(node, Protocol):
        return _nums(flat_values(value.__extract_mlir_values__()))
    return []


def count(node):
    if isinstance(node, Scalar):
        return 1
    if isinstance(node, Sequence):
        return sum(count(n) for n in node.items)
    if isinstance(node, Native):
        return node.s.count
    if isinstance(node, Protocol):
        return len(node.types)
    return 0


def rebuild(node, values):
    """The value of structure `node` whose IR values are `values` (DSL Num handles)."""
    value, rest = _rebuild(node, list(values))
    assert not rest
    return value


def _rebuild(node, values):
    if isinstance(node, Scalar):
        return wrap(values[0]), values[1:]
    if isinstance(node, Sequence):
        items = []
        for n in node.items:
            v, values = _rebuild(n, values)
            items.append(v)
        if node.kind in (tuple, list):
            return node.kind(items), values
        return node.kind(*items), values  # a NamedTuple
    k = count(node)
    mine, rest = values[:k], values[k:]
    if isinstance(node, Native):
        obj = node.s.rebuild(mine)
        if node.wrapper is not None:
            obj = node.wrapper._from_native(obj)
        return obj, rest
    if isinstance(node, Protocol):
        return rebuild_from_flat(node.template, mine), rest
    return node.obj, rest


_PYTHON_STATE = (bool, int, float, str, bytes, type(None), enum.Enum)
_ABSENT = object()


def keep_python_state(copy, source):
    """`copy` (an object rebuilt through its __new_from_mlir_values__, which constructs a new one)
    given the plain Python attributes of `source` (flags, counters: state the trace itself keeps,
    which the constructor resets) where the copy holds a plain Python value or none; attributes
    holding IR values stay as rebuilt. FA4's varlen tile scheduler keeps `_is_first_block` so:
    reset to True in a copy, its loop never ends."""
    if type(copy) is not type(source) or copy is source or not hasattr(copy, "__dict__") \
            or not hasattr(source, "__dict__"):
        return copy
    for key, value in vars(source).items():
        current = copy.__dict__.get(key, _ABSENT)
        if isinstance(value, _PYTHON_STATE) and (current is _ABSENT or isinstance(current, _PYTHON_STATE)):
            copy.__dict__[key] = value
    return copy


def extract_mlir_values(obj):
    """The IR values of a DSL value (cutlass.cutlass_dsl.extract_mlir_values); Python objects
    without a dynamic part have none."""
    return values_for(structure_of(obj, literals_static=True), obj)


def new_from_mlir_values(obj, values):
    """`obj` rebuilt from new IR values (cutlass.cutlass_dsl.new_from_mlir_values). A host-side
    JIT argument (a runtime pointer from make_ptr) has no IR values of its own but rebuilds from the
    values its __get_mlir_types__ announced (quack's ArgumentsBase fields)."""
    structure = structure_of(obj, literals_static=True)
    if isinstance(structure, Static) and values and hasattr(obj, "__new_from_mlir_values__") \
            and not isinstance(obj, type):
        return obj.__new_from_mlir_values__(list(values))
    return rebuild(structure, values)
