"""C structs passed to a @jit function through the JIT-argument protocol (`__c_pointers__`):
`llvm.StructType` / `llvm.PointerType` (exported from `cutlass._mlir.dialects.llvm`), their C
layout (natural alignment) and the traced value rebuilt from their scalar leaves. Here because
argument binding reads them; the struct value class is the MLIR layer's, which registers it."""
from .errors import DSLUserCodeError
from .numeric import NUMERIC_TYPES, Int64, Numeric, wrap

_struct_value_class = None  # cutlass._mlir.dialects.llvm.StructValue


def set_struct_value_class(cls):
    global _struct_value_class
    _struct_value_class = cls


class PointerType:
    """An opaque pointer (`!llvm.ptr`): 8 bytes, an Int64 address when read."""

    def __init__(self, address_space=0):
        self.address_space = int(address_space)

    @staticmethod
    def get(address_space=0, context=None):
        return PointerType(getattr(address_space, "value", address_space) or 0)

    def __eq__(self, other):
        return isinstance(other, PointerType) and other.address_space == self.address_space

    def __hash__(self):
        return hash(("ptr", self.address_space))

    def __repr__(self):
        return "!llvm.ptr" if not self.address_space else f"!llvm.ptr<{self.address_space}>"


class StructType:
    """A literal LLVM struct of `fields` (IR types, pointers or structs)."""

    def __init__(self, fields, packed=False):
        self.fields = list(fields)
        self.packed = bool(packed)

    @staticmethod
    def get_literal(fields, *, packed=False, context=None):
        return StructType(fields, packed)

    @property
    def body(self):
        return list(self.fields)

    def __eq__(self, other):
        return isinstance(other, StructType) and other.fields == self.fields and other.packed == self.packed

    def __hash__(self):
        return hash(("struct", tuple(self.fields), self.packed))

    def __repr__(self):
        return "!llvm.struct<(" + ", ".join(repr(f) for f in self.fields) + ")>"


def _scalar_class(t):
    for cls in NUMERIC_TYPES:  # (not the names kernels cannot hold, such as Float8E4M3)
        if cls.mlir_type == t:
            return cls
    raise DSLUserCodeError(f"no C layout for the type {t!r}", code="ARG_UNSUPPORTED_TYPE")


def _size_align(t):
    if isinstance(t, PointerType):
        return 8, 8
    if isinstance(t, StructType):
        offset, align = 0, 1
        for f in t.fields:
            s, a = _size_align(f)
            a = 1 if t.packed else a
            offset = (offset + a - 1) // a * a + s
            align = max(align, a)
        return (offset + align - 1) // align * align, align
    n = max(1, _scalar_class(t).width // 8)
    return n, n


def flatten_type(t):
    """[(leaf IR type, byte offset)] of a value of type `t` in C memory (a pointer leaf reads as Int64)."""
    if isinstance(t, PointerType):
        return [(Int64.mlir_type, 0)]
    if not isinstance(t, StructType):
        _scalar_class(t)
        return [(t, 0)]
    out, offset = [], 0
    for f in t.fields:
        s, a = _size_align(f)
        if not t.packed:
            offset = (offset + a - 1) // a * a
        out.extend((lt, offset + o) for lt, o in flatten_type(f))
        offset += s
    return out


def _leaf_count(t):
    return len(flatten_type(t))


def rebuild_value(t, leaves):
    """The traced value of type `t` from its flattened leaves (see flatten_type)."""
    leaves = [x if isinstance(x, Numeric) else wrap(x) for x in leaves]
    if len(leaves) != _leaf_count(t):
        raise DSLUserCodeError(f"{t!r} has {_leaf_count(t)} leaves, got {len(leaves)} values", code="TYPE_MISMATCH")
    return _struct_value_class(t, leaves) if isinstance(t, StructType) else leaves[0]
