"""`cute.struct` / `cute.union`: C-like descriptions of shared-memory storage.

The decorator reads the class's annotations (a Numeric class, `cute.struct.MemRange[dtype, n]`,
another struct, or `cute.struct.Align[T, alignment]` around any of these); the C layout rules
(offsets, alignment, size) are computed in C++ (`cpp/src/dsl/smem_layout`). Instantiating the
decorated struct over a byte pointer (`S(ptr)`, usually through `SmemAllocator.allocate(S)`)
gives a view whose attributes are the fields.
"""
from .. import _core
import operator

from .._dsl import carry as _carry
from .._dsl.errors import DSLUserCodeError
from .._dsl.numeric import Integer, Numeric, NumericMeta, Int8
from . import layout as _layout
from . import tensor as _tensor

_S = _core.smem


def _byte_size(dtype):
    bits = dtype.width
    if bits % 8 != 0 and bits != 1:
        raise TypeError(f"cute.struct: {dtype.__name__} is not a whole number of bytes")
    return max(1, bits // 8)  # Boolean occupies one byte


class _MemRangeType:
    """`MemRange[dtype, n]`: `n` consecutive elements of `dtype`."""

    def __init__(self, dtype, count):
        if not isinstance(dtype, NumericMeta):
            raise TypeError(f"MemRange: the element type must be a Numeric class, got {dtype!r}")
        if isinstance(count, Integer):
            count = operator.index(count)  # static DSL integers are fine
        if not isinstance(count, int) or isinstance(count, bool):
            raise TypeError(f"MemRange: the element count must be a static int, got {type(count).__name__}")
        if count < 0:
            raise ValueError(f"MemRange: the element count must not be negative, got {count}")
        self.dtype, self.count = dtype, count

    def size_and_align(self):
        bits = self.dtype.width
        if bits < 8 and bits != 1 and 8 % bits == 0:
            # Packed sub-byte elements (Int4, Float4E2M1FN): byte-aligned, a last partial byte whole.
            return -(-self.count * bits // 8), 1
        es = _byte_size(self.dtype)
        return es * self.count, es

    def __repr__(self):
        return f"MemRange[{self.dtype.__name__}, {self.count}]"


class _MemRange:
    def __class_getitem__(cls, params):
        if not isinstance(params, tuple) or len(params) != 2:
            raise TypeError("MemRange takes [dtype, count]")
        return _MemRangeType(*params)


class _AlignType:
    """`Align[T, n]`: member T placed at a multiple of n bytes (n > 0, a power of two)."""

    def __init__(self, member, align):
        if not isinstance(align, int) or align <= 0 or align & (align - 1):
            raise ValueError(f"Align: alignment must be a positive power of two, got {align!r}")
        self.member, self.align = member, align

    def size_and_align(self):
        size, align = _member_size_and_align(self.member)
        return size, max(align, self.align)

    def __repr__(self):
        return f"Align[{self.member!r}, {self.align}]"


class _Align:
    def __class_getitem__(cls, params):
        if not isinstance(params, tuple) or len(params) != 2:
            raise TypeError("Align takes [member type, alignment]")
        return _AlignType(*params)


def _member_size_and_align(t):
    if isinstance(t, (_MemRangeType, _AlignType)):
        return t.size_and_align()
    if isinstance(t, struct):
        return t.size_in_bytes(), t.__alignof__()
    if isinstance(t, NumericMeta) and t is not Numeric:
        s = _byte_size(t)
        return s, s
    raise TypeError(f"cute.struct: unsupported member type {t!r} (a Numeric class, MemRange, Align or struct)")


def _unwrap_align(t):
    while isinstance(t, _AlignType):
        t = t.member
    return t


class struct:
    """`@cute.struct` class decorator (C struct layout)."""

    MemRange = _MemRange
    Align = _Align
    _is_union = False

    def __init__(self, cls):
        annotations = dict(getattr(cls, "__annotations__", {}))
        if any(isinstance(a, str) for a in annotations.values()):
            # `from __future__ import annotations`: evaluate where the class was written.
            import sys
            frame = sys._getframe(1)
            annotations = {n: eval(a, frame.f_globals, frame.f_locals) if isinstance(a, str) else a  # noqa: S307
                           for n, a in annotations.items()}
        if not annotations:
            kind = "union" if self._is_union else "struct"
            raise TypeError(f"cute.{kind} {cls.__name__} has no members")
        self._cls = cls
        self.__name__ = cls.__name__
        self.__qualname__ = getattr(cls, "__qualname__", cls.__name__)
        self.__doc__ = cls.__doc__
        self._names = list(annotations)
        self._types = [annotations[n] for n in self._names]
        sizes = [_member_size_and_align(t) for t in self._types]
        offsets, self._size, self._align = _S.layout_struct(sizes, self._is_union, cls.__name__)
        self._offsets = dict(zip(self._names, offsets))
        self._fields = dict(zip(self._names, self._types))

    # ---- class-level queries (static ints) ----
    def size_in_bytes(self):
        return self._size

    def __sizeof__(self):
        return self._size

    def __alignof__(self):
        return self._align

    def offset_of(self, name):
        return self._offsets[name]

    def __call__(self, base):
        dtype = getattr(base, "dtype", None)
        if dtype is None or dtype.width != 8:
            raise TypeError(f"{self.__name__}(ptr): the base pointer must point to 8-bit elements, got {base}")
        return _StructView(self, base)

    def __repr__(self):
        return f"<cute.struct::{self.__name__}>"


class union(struct):
    """`@cute.union`: every member at offset 0; the size is the largest member's, rounded up to
    the largest alignment."""
    _is_union = True

    def __repr__(self):
        return f"<cute.union::{self.__name__}>"


class _ScalarField:
    """A scalar member: `.ptr` (typed pointer), `.dtype`, `.load()` / `.store(v)`."""

    def __init__(self, ptr, dtype):
        self.ptr, self.dtype = ptr, dtype

    def load(self):
        return self.ptr.load()

    def __extract_mlir_values__(self):
        # Where an operation takes a pointer, a scalar member stands for its address (quack's SM100
        # GEMM hands `storage.tmem_holding_buf` to alloc_tmem and an mbarrier member to mbarrier_init).
        return _carry.extract_mlir_values(self.ptr)

    def store(self, value):
        self.ptr.store(value)

    def __repr__(self):
        return f"<scalar {self.dtype.__name__} at {self.ptr}>"


class _MemRangeData:
    """A MemRange member: `.data_ptr()`, `.get_tensor(layout, swizzle=None, dtype=None)`, `[i]`."""

    def __init__(self, ptr, dtype, count):
        self._ptr, self.dtype, self.count = ptr, dtype, count

    def data_ptr(self):
        return self._ptr

    def get_tensor(self, layout, swizzle=None, dtype=None):
        ptr = self._ptr if dtype is None else _tensor.recast_ptr(self._ptr, dtype=dtype)
        elem = dtype or self.dtype
        if isinstance(layout, (int, tuple)):  # a shape: the compact layout (quack's `get_tensor((stages,))`)
            layout = _layout.make_layout(layout)
        if swizzle is not None:
            if isinstance(layout, _layout.ComposedLayout):
                raise TypeError("get_tensor: a composed layout already holds its swizzle; pass swizzle=None or "
                                f"the outer layout (got {layout} and {swizzle})")
            ptr = _tensor.recast_ptr(ptr, swizzle, None)
        cosize = _layout.cosize(layout)
        if isinstance(cosize, int) and (cosize * elem.width + 7) // 8 > _MemRangeType(self.dtype, self.count).size_and_align()[0]:
            raise DSLUserCodeError(f"get_tensor: layout {layout} spans {cosize} elements of {elem.__name__}, more "
                                   f"than the MemRange[{self.dtype.__name__}, {self.count}] holds",
                                   code="SHAPE_MISMATCH")
        return _tensor.make_tensor(ptr, layout)

    def __getitem__(self, i):
        return self._ptr[i]

    def __setitem__(self, i, value):
        self._ptr[i] = value

    def __repr__(self):
        return f"<MemRange[{self.dtype.__name__}, {self.count}] at {self._ptr}>"


class _StructView:
    """A struct laid over shared memory: attributes are the fields."""

    def __init__(self, struct_type, base):
        object.__setattr__(self, "_type", struct_type)
        object.__setattr__(self, "_base", base)

    def _field_ptr(self, name, dtype):
        p = self._base + self._type._offsets[name]
        return p if dtype is Int8 else _tensor.recast_ptr(p, dtype=dtype)

    def __getattr__(self, name):
        t = self._type
        if name not in t._fields:
            raise AttributeError(f"struct {t.__name__} has no member '{name}'")
        member = _unwrap_align(t._fields[name])
        if isinstance(member, _MemRangeType):
            return _MemRangeData(self._field_ptr(name, member.dtype), member.dtype, member.count)
        if isinstance(member, struct):
            return _StructView(member, self._base + t._offsets[name])
        return _ScalarField(self._field_ptr(name, member), member)

    def __setattr__(self, name, value):
        t = self._type
        if name not in t._fields:
            raise AttributeError(f"struct {t.__name__} has no member '{name}'")
        member = _unwrap_align(t._fields[name])
        if not isinstance(member, NumericMeta):
            raise TypeError(f"struct {t.__name__}: only scalar members can be assigned, '{name}' is {member!r}")
        self._field_ptr(name, member).store(value)

    # Carried across dynamic control flow as its base pointer.
    def __extract_mlir_values__(self):
        return self._base.__extract_mlir_values__()

    def __new_from_mlir_values__(self, values):
        return _StructView(self._type, self._base.__new_from_mlir_values__(values))

    def __repr__(self):
        return f"{object.__repr__(self)} <cute.struct::{self._type.__name__}> <base = {self._base}>"
