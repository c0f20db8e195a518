"""Host-side tensors handed to @jit functions: `from_dlpack` wraps a framework tensor without
copying; numpy arrays and torch tensors passed directly get a dynamic layout."""
from .._dsl.numeric import dtype as _dtype_by_name
from .._dsl.errors import DSLRuntimeError

_NUMPY_NAMES = {"bool": "Boolean", "int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64",
                "uint8": "Uint8", "uint16": "Uint16", "uint32": "Uint32", "uint64": "Uint64",
                "float16": "Float16", "float32": "Float32", "float64": "Float64", "bfloat16": "BFloat16"}


def _dtype_of(obj):
    name = str(obj.dtype).replace("torch.", "")
    if name not in _NUMPY_NAMES:
        raise DSLRuntimeError(f"unsupported tensor element type {obj.dtype}")
    return _dtype_by_name(_NUMPY_NAMES[name])


class _RuntimeTensor:
    """A framework tensor seen through DLPack-like metadata (`cute.runtime` Tensor)."""

    def __init__(self, source, assumed_align=None, dynamic=False, use_32bit_stride=False):
        self._source = source  # keeps the memory alive
        if hasattr(source, "data_ptr") and hasattr(source, "stride"):
            self._data_ptr = source.data_ptr()
            self._dl_shape = tuple(int(s) for s in source.shape)
            self._dl_stride = tuple(int(s) for s in source.stride())
            self.is_cuda = bool(getattr(source, "is_cuda", False))
        elif hasattr(source, "__array_interface__"):
            ai = source.__array_interface__
            self._data_ptr = ai["data"][0]
            self._dl_shape = tuple(int(s) for s in source.shape)
            self._dl_stride = tuple(int(s) // source.itemsize for s in source.strides)
            self.is_cuda = False
        else:
            raise DSLRuntimeError(f"cannot convert {type(source)} to a CuTe tensor (no DLPack-compatible metadata)")
        self._element_type = _dtype_of(source)
        self.assumed_align = int(assumed_align) if assumed_align else self._element_type.bytes
        if self._data_ptr % self.assumed_align:
            raise DSLRuntimeError(f"tensor data at 0x{self._data_ptr:x} is not aligned to assumed_align="
                                  f"{self.assumed_align}")
        rank = len(self._dl_shape)
        self.dynamic_shape = [dynamic] * rank
        self.dynamic_stride = [dynamic and s != 1 for s in self._dl_stride]
        if dynamic:
            self._mark_leading(None)

    def _mark_leading(self, leading_dim):
        rank = len(self._dl_shape)
        if leading_dim is None:
            units = [i for i, s in enumerate(self._dl_stride) if s == 1]
            leading_dim = units[-1] if units else None
        self.dynamic_shape = [True] * rank
        self.dynamic_stride = [True] * rank
        if leading_dim is not None:
            if self._dl_stride[leading_dim] != 1:
                raise ValueError(f"Expected strides[leading_dim] == 1, but got {self._dl_stride[leading_dim]}")
            self.dynamic_stride[leading_dim] = False

    def mark_layout_dynamic(self, leading_dim=None):
        self._mark_leading(leading_dim)
        return self

    @property
    def element_type(self):
        return self._element_type

    @element_type.setter
    def element_type(self, value):
        self._element_type = value

    @property
    def shape(self):
        return self._dl_shape

    @property
    def stride(self):
        return self._dl_stride

    @property
    def memspace(self):
        return "gmem" if self.is_cuda else "generic"

    def layout_str(self):
        shape = ",".join("?" if d else str(s) for s, d in zip(self._dl_shape, self.dynamic_shape))
        stride = ",".join("?" if d else str(s) for s, d in zip(self._dl_stride, self.dynamic_stride))
        return f"({shape}):({stride})"

    def __str__(self):
        return f"Tensor<0x{self._data_ptr:016x}@generic o {self._dl_shape}:{self._dl_stride}>"

    __repr__ = __str__


Tensor = _RuntimeTensor


def from_dlpack(tensor, assumed_align=None, use_32bit_stride=False, **kwargs):
    return _RuntimeTensor(tensor, assumed_align=assumed_align, use_32bit_stride=use_32bit_stride)


def as_runtime_tensor(value):
    if isinstance(value, _RuntimeTensor):
        return value
    return _RuntimeTensor(value, dynamic=True)


class SymInt:
    """A symbolic (dynamic) extent for fake tensors."""

    def __init__(self, width=32, divisibility=1):
        self.width = width
        self.divisibility = divisibility

    def __str__(self):
        return "?" if self.divisibility == 1 else f"?{{div={self.divisibility}}}"


def sym_int(width=32, divisibility=1):
    return SymInt(width, divisibility)


class _FakeTensor(_RuntimeTensor):
    """Stands for a tensor at compile time only: shape, stride and type, no data."""

    def __init__(self, dtype, shape, stride, assumed_align=None, is_cuda=True):
        self._source = None
        self._data_ptr = 0
        self._element_type = dtype
        self._dl_shape = tuple(0 if isinstance(s, SymInt) else int(s) for s in shape)
        self._dl_stride = tuple(0 if isinstance(s, SymInt) else int(s) for s in stride)
        self.dynamic_shape = [isinstance(s, SymInt) for s in shape]
        self.dynamic_stride = [isinstance(s, SymInt) for s in stride]
        self.assumed_align = int(assumed_align) if assumed_align else dtype.bytes
        self.is_cuda = is_cuda

    def __str__(self):
        fmt = lambda t: "(" + ", ".join(str(x) for x in t) + ")"
        return f"FakeTensor<{self._element_type}, {fmt(self._shape_spec)}, {fmt(self._stride_spec)}>"


def make_fake_tensor(dtype, shape, stride, *, assumed_align=None, memspace=None):
    t = _FakeTensor(dtype, shape, stride, assumed_align)
    t._shape_spec, t._stride_spec = tuple(shape), tuple(stride)
    return t


def make_fake_compact_tensor(dtype, shape, stride_order=None, *, assumed_align=None, memspace=None):
    rank = len(shape)
    order = list(stride_order) if stride_order is not None else list(range(rank))
    stride = [None] * rank
    running, dynamic = 1, False
    for mode in sorted(range(rank), key=lambda m: order[m]):
        stride[mode] = SymInt() if dynamic else running
        if isinstance(shape[mode], SymInt):
            dynamic = True
        elif not dynamic:
            running *= int(shape[mode])
    return make_fake_tensor(dtype, shape, stride, assumed_align=assumed_align)


class FakeStream:
    def __str__(self):
        return "FakeStream"


def make_fake_stream():
    return FakeStream()
