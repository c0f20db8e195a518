"""Pointers while tracing: what a `cute.Pointer` parameter of a @jit function becomes. A typed
IR pointer value plus its element type, address space and byte alignment."""
from .. import _core
from . import context
from .address_space import AddressSpace
from .numeric import Numeric, as_numeric, num_of


class _PointerMeta(type):
    # `isinstance(p, cute.Pointer)` holds for runtime pointers (cute.runtime.make_ptr) too.
    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or getattr(type(obj), "_is_runtime_pointer", False)


class Pointer(metaclass=_PointerMeta):
    """A pointer in a trace (`cute.Pointer`); prints as `ptr<f16, gmem, align<32>>`."""

    def __init__(self, value, dtype, memspace, alignment):
        self._value = value  # _core.Num of pointer type
        self._dtype = dtype
        self._memspace = AddressSpace(memspace)
        self._alignment = int(alignment)

    @property
    def value_type(self):
        return self._dtype

    dtype = value_type

    @property
    def memspace(self):
        return self._memspace

    @property
    def alignment(self):
        return self._alignment

    max_alignment = alignment

    def __add__(self, offset):
        if isinstance(offset, Numeric) and not offset._n.is_static:
            align = _core.runtime.alignment_after_offset(self._alignment, self._dtype.bytes)
        else:
            align = _core.runtime.alignment_after_offset(self._alignment, int(offset) * self._dtype.bytes)
        value = context.tracer().ptr_add(self._value, num_of(as_numeric(offset)))
        return Pointer(value, self._dtype, self._memspace, align)

    __radd__ = __add__

    def __sub__(self, offset):
        return self + (-offset)

    def __str__(self):
        return f"ptr<{_core.dtype_type(self._dtype.__name__)}, {self._memspace}, align<{self._alignment}>>"

    __repr__ = __str__

    def __extract_mlir_values__(self):
        return [self._value]

    def __new_from_mlir_values__(self, values):
        return Pointer(values[0], self._dtype, self._memspace, self._alignment)
