"""Minimal tensors: a typed pointer plus flat shape and stride tuples whose entries are static
ints or dynamic DSL integers (Int32 extents, Int32/Int64 strides, possibly with a known
divisibility). The full layout algebra replaces the flat tuples later."""
from .. import _core
from . import context
from .address_space import AddressSpace
from .numeric import Int32, Numeric, as_numeric, num_of, wrap

GENERIC, GMEM, SMEM, RMEM = 0, 1, 3, 5


def _leaf_str(v):
    if isinstance(v, Numeric) and not v.is_static():
        return _core.layout.int_str(v)  # `?`, `?{div=16}`, `?{i64}` as CuTe prints layout leaves
    return str(int(v))


def _rewrap(value, like):
    """A new IR value standing for the dynamic leaf `like`, keeping its divisibility."""
    from ..cute.layout import _wrap_int
    return _wrap_int(value, getattr(like, "divisibility", 1))


def layout_str(shape, stride):
    return "(" + ",".join(_leaf_str(s) for s in shape) + "):(" + ",".join(_leaf_str(d) for d in stride) + ")"


class SimpleLayout:
    """The flat layout of a minimal tensor; prints in CuTe notation."""

    def __init__(self, shape, stride):
        self.shape = tuple(shape)
        self.stride = tuple(stride)

    def __str__(self):
        return layout_str(self.shape, self.stride)

    __repr__ = __str__


class Tensor:
    """A tensor while tracing (`cute.Tensor`)."""

    def __init__(self, ptr, element_type, shape, stride, memspace=GMEM, align=None):
        self._ptr = ptr  # _core.Num of pointer type
        self._dtype = element_type
        self._shape = tuple(shape)
        self._stride = tuple(stride)
        self._memspace = memspace
        self._align = align or element_type.bytes

    @property
    def element_type(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    @property
    def stride(self):
        return self._stride

    @property
    def layout(self):
        return SimpleLayout(self._shape, self._stride)

    @property
    def memspace(self):
        return AddressSpace(self._memspace)

    @property
    def iterator(self):
        return self._ptr

    def __str__(self):
        align = f", align<{self._align}>" if self._align > self._dtype.bytes else ""
        return f"tensor<ptr<{_core.dtype_type(self._dtype.__name__)}, {self.memspace}{align}> o {self.layout}>"

    __repr__ = __str__

    def _element_ptr(self, key):
        coord = key if isinstance(key, tuple) else (key,)
        for c in coord:
            if c is None or isinstance(c, slice):
                raise NotImplementedError("slicing tensors with None comes with the tensor algebra issue")
        offset = _core.tensor_offset([num_of(as_numeric(s)) for s in self._shape],
                                     [num_of(as_numeric(s)) for s in self._stride],
                                     [num_of(as_numeric(c)) for c in coord])
        return context.tracer().ptr_add(self._ptr, offset)

    def __getitem__(self, key):
        return wrap(context.tracer().load(self._element_ptr(key)))

    def __setitem__(self, key, value):
        context.tracer().store(num_of(as_numeric(value)), self._element_ptr(key))

    def fill(self, value):
        from .rt import DynamicRange, for_
        size = 1
        for s in self._shape:
            size = size * s
        value = self._dtype(value) if not isinstance(value, Numeric) else value.to(self._dtype)

        def body(i):
            self[i] = value
            return ()

        for_(DynamicRange(size), body, (), (), (None, 0))

    def __extract_mlir_values__(self):
        vals = [self._ptr]
        vals += [num_of(s) for s in self._shape if isinstance(s, Numeric) and not s.is_static()]
        vals += [num_of(s) for s in self._stride if isinstance(s, Numeric) and not s.is_static()]
        return vals

    def __new_from_mlir_values__(self, values):
        values = list(values)
        ptr = values.pop(0)
        shape = tuple(_rewrap(values.pop(0), s) if isinstance(s, Numeric) and not s.is_static() else s
                      for s in self._shape)
        stride = tuple(_rewrap(values.pop(0), s) if isinstance(s, Numeric) and not s.is_static() else s
                       for s in self._stride)
        return Tensor(ptr, self._dtype, shape, stride, self._memspace, self._align)
