"""`cutlass._mlir.dialects.vector`: element access on a register vector (a TensorSSA here)."""
from ... import _core
from ..._dsl.errors import DSLUserCodeError
from ..._dsl.numeric import NUMERIC_TYPES, NumericMeta, Uint8, Uint16, Uint32, Uint64, as_numeric, wrap


def extract(vector, dynamic_position, static_position, *, loc=None, ip=None):
    """The element at `static_position` (one index into a 1-D vector)."""
    if list(dynamic_position or []) or len(static_position) != 1:
        raise DSLUserCodeError("vector.extract takes one static index into a 1-D vector",
                               code="VALUE_INVALID")
    return vector[int(static_position[0])]


# ---- small register vectors built from scalars (quack's f32x2 <-> i64 packing) -------------------
# A `vector<n x T>` value is its n DSL numbers; bitcast reinterprets their bits as LLVM does on the
# GPU (little-endian: element 0 in the lowest bits) through integer shifts and masks.

class VectorType:
    """`T.vector(n, element_type)`: n elements of one numeric type."""

    def __init__(self, count, element_type):
        self.count = int(count)
        self.element_type = element_type

    def __eq__(self, other):
        return isinstance(other, VectorType) and (other.count, other.element_type) == (self.count, self.element_type)

    def __hash__(self):
        return hash((self.count, self.element_type))

    def __repr__(self):
        return f"vector<{self.count}x{_numeric_class(self.element_type).__name__}>"


class _Vector:
    def __init__(self, vector_type, elements):
        self.type = vector_type
        self.elements = list(elements)

    def __getitem__(self, i):
        return self.elements[i]

    def __len__(self):
        return len(self.elements)


def _numeric_class(t):
    if isinstance(t, NumericMeta):
        return t
    for cls in NUMERIC_TYPES:
        if cls.mlir_type == t:
            return cls
    raise DSLUserCodeError(f"vector: {t!r} is not a numeric element type", code="TYPE_MISMATCH")


def _check_vector_type(t, what):
    if not isinstance(t, VectorType):
        raise DSLUserCodeError(f"vector.{what} needs a vector type (T.vector(n, T.f32()) ...), got {t!r}",
                               code="TYPE_MISMATCH")


def from_elements(result, elements, *, loc=None, ip=None):
    """The vector of type `result` holding `elements` (IR values or DSL numbers), in order."""
    _check_vector_type(result, "from_elements")
    elements = list(elements)
    if len(elements) != result.count:
        raise DSLUserCodeError(f"vector.from_elements: {result!r} takes {result.count} elements, got {len(elements)}",
                               code="VALUE_INVALID")
    cls = _numeric_class(result.element_type)
    values = []
    for e in elements:
        n = e if hasattr(e, "_n") else as_numeric(e) if isinstance(e, (bool, int, float)) else wrap(e)
        if type(n) is not cls:
            raise DSLUserCodeError(f"vector.from_elements: element {n!r} is not a {cls.__name__}", code="TYPE_MISMATCH")
        values.append(n)
    return _Vector(result, values)


def _unsigned(width):
    return {8: Uint8, 16: Uint16, 32: Uint32, 64: Uint64}[width]


def bitcast(result, source, *, loc=None, ip=None):
    """`source`'s bits as a vector of type `result` (the same total width)."""
    _check_vector_type(result, "bitcast")
    if not isinstance(source, _Vector):
        raise DSLUserCodeError("vector.bitcast needs a vector (from vector.from_elements)", code="TYPE_MISMATCH")
    src_cls = _numeric_class(source.type.element_type)
    dst_cls = _numeric_class(result.element_type)
    total = src_cls.width * source.type.count
    if dst_cls.width * result.count != total or total > 64:
        raise DSLUserCodeError(f"vector.bitcast: {source.type!r} and {result!r} must have one total width of at "
                               "most 64 bits", code="TYPE_MISMATCH")
    bits = Uint64(0)
    for k, e in enumerate(source.elements):
        raw = wrap(_core.bitcast(e._n, _unsigned(src_cls.width).__name__))
        bits = bits | (Uint64(raw) << (k * src_cls.width))
    out = []
    mask = (1 << dst_cls.width) - 1
    for k in range(result.count):
        raw = _unsigned(dst_cls.width)((bits >> (k * dst_cls.width)) & Uint64(mask))
        out.append(wrap(_core.bitcast(raw._n, dst_cls.__name__)))
    return _Vector(result, out)
