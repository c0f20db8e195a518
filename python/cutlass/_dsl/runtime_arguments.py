"""Host-side tensors, pointers and compile-time stand-ins handed to @jit functions (what
`cute.runtime` exports; here in the front end because the call path classifies them).

`from_dlpack` wraps a framework tensor without copying; its layout starts fully static and
`mark_layout_dynamic` / `mark_compact_shape_dynamic` choose what the compiled code reads at call
time. Those rules live in C++ (`_core.runtime.TensorSpec`); this module reads the framework's
metadata and forwards. numpy arrays and torch tensors passed directly to a @jit function become
`from_dlpack(x).mark_layout_dynamic()`.
"""
import ctypes

from .. import _core
from .address_space import AddressSpace
from .errors import DSLUserCodeError
from .numeric import Int32, Int64, NumericMeta, _wrap_int, dtype as _dtype_by_name
from .tensor import Pointer as _AbstractPointer, Tensor as _AbstractTensor
from .tvm_ffi import import_tvm_ffi

_rt = _core.runtime


class TensorSpecError(DSLUserCodeError, ValueError):
    """A misuse of from_dlpack / mark_layout_dynamic / mark_compact_shape_dynamic / make_ptr."""


_rt._set_error_class(TensorSpecError)

# Element types by the framework's dtype name (numpy's and torch's spellings).
_DTYPE_NAMES = {"bool": "Boolean", "int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64",
                "uint8": "Uint8", "uint16": "Uint16", "uint32": "Uint32", "uint64": "Uint64",
                "float16": "Float16", "float32": "Float32", "float64": "Float64", "bfloat16": "BFloat16",
                "float8_e4m3fn": "Float8E4M3FN", "float8_e5m2": "Float8E5M2", "float8_e8m0fnu": "Float8E8M0FNU",
                "float4_e2m1fn_x2": "Float4E2M1FN"}


def _element_type_of(name):
    try:
        return _dtype_by_name(_DTYPE_NAMES[name])
    except (KeyError, TypeError):
        raise TypeError(f"unsupported tensor element type {name}") from None


def _interface_metadata(obj, interface, is_cuda):
    """(data pointer, shape, strides in elements, dtype name) from an array interface dict."""
    import numpy as np
    info = getattr(obj, interface)
    dt = np.dtype(info["typestr"])
    shape = tuple(int(s) for s in info["shape"])
    if info.get("strides") is None:
        stride, running = [], 1
        for s in reversed(shape):
            stride.append(running)
            running *= s
        stride = tuple(reversed(stride))
    else:
        stride = tuple(int(s) // dt.itemsize for s in info["strides"])
    return int(info["data"][0]), shape, stride, dt.name, is_cuda


def _source_metadata(obj):
    if hasattr(obj, "data_ptr") and hasattr(obj, "stride") and callable(obj.stride):  # torch
        shape = tuple(int(s) for s in obj.shape)
        # DLPack export from torch gives size-1 modes stride 1; do the same so that layouts (and
        # the deduction rules that depend on them) agree with the CuTe DSL's.
        stride = tuple(1 if n == 1 else int(s) for n, s in zip(shape, obj.stride()))
        try:
            data = obj.data_ptr()
        except (RuntimeError, NotImplementedError):
            data = 0  # torch's FakeTensorMode: no storage, the tensor only describes one for compiling
        return (data, shape, stride, str(obj.dtype).replace("torch.", ""), bool(getattr(obj, "is_cuda", False)))
    if hasattr(obj, "unsafe_buffer_pointer") and hasattr(obj, "devices") and hasattr(obj, "dtype"):
        # A jax.Array (one device; JAX keeps arrays row-major). Its __cuda_array_interface__ exists
        # on GPUs only, and JAX's CPU arrays have no __array_interface__.
        import numpy as np
        shape = tuple(int(s) for s in obj.shape)
        stride, running = [0] * len(shape), 1
        for d in reversed(range(len(shape))):
            stride[d] = running
            running *= shape[d]
        platform = next(iter(obj.devices())).platform
        return int(obj.unsafe_buffer_pointer()), shape, tuple(stride), np.dtype(obj.dtype).name, platform != "cpu"
    if hasattr(obj, "__cuda_array_interface__"):
        return _interface_metadata(obj, "__cuda_array_interface__", True)
    if hasattr(obj, "__array_interface__"):
        return _interface_metadata(obj, "__array_interface__", False)
    raise TypeError(f"cannot convert {type(obj).__name__} to a CuTe tensor: it offers no DLPack-compatible "
                    "metadata (torch tensor, numpy array, or __cuda_array_interface__)")


def _traced_tensor(ptr_value, dtype, shape, stride, memspace, align):
    """The tensor a @jit function's body sees for a tensor argument. `ptr_value` is the IR
    pointer; shape/stride entries are ints (static) or DSL integers (dynamic, possibly carrying
    a divisibility). The one place traced tensors are built from arguments (argument_plan's
    tensor parameters, and a runtime tensor rebuilt from its JIT-argument values)."""
    layout = _core.layout.make_layout(tuple(shape), tuple(stride))
    return _core.cute.make_tensor(_core.cute.pointer_from_value(ptr_value), layout)


class Tensor:
    """A framework tensor seen by a @jit function (`cute.runtime` Tensor)."""

    def __init__(self, source, assumed_align=None, use_32bit_stride=False):
        self._source = source  # keeps the memory alive
        data, shape, stride, dtype_name, is_cuda = _source_metadata(source)
        self._data_ptr = data
        self._dl_shape = shape
        self._dl_stride = stride
        self.is_cuda = is_cuda
        self._element_type = _element_type_of(dtype_name)
        if dtype_name == "float4_e2m1fn_x2":  # torch counts packed pairs; the tensor holds 4-bit elements
            shape, stride = (tuple(x) for x in _rt.unpack_fp4_pairs(list(shape), list(stride)))
            self._dl_shape, self._dl_stride = shape, stride
        self.assumed_align = _rt.resolve_alignment(assumed_align, self._element_type.bytes)
        _rt.check_address_alignment(data, self.assumed_align, "The tensor's data pointer")
        self._use_32bit_stride = bool(use_32bit_stride)
        self._marked = False
        self._spec = _rt.TensorSpec(list(shape), list(stride), bool(use_32bit_stride))

    def mark_layout_dynamic(self, leading_dim=None):
        self._marked = True
        self._spec.mark_layout_dynamic(leading_dim)
        return self

    def mark_compact_shape_dynamic(self, mode, stride_order=None, divisibility=1):
        order = None if stride_order is None else [int(m) for m in stride_order]
        self._marked = True
        self._spec.mark_compact_shape_dynamic(int(mode), order, int(divisibility))
        return self

    @property
    def element_type(self):
        return self._element_type

    @element_type.setter
    def element_type(self, value):
        if not isinstance(value, NumericMeta):
            raise TypeError(f"element_type must be a cutlass numeric type, got {value!r}")
        if value.width == 4 and self._element_type.width == 8:
            # Bytes seen as packed pairs of 4-bit values (the first in the low nibble), as torch's
            # uint8.view(float4_e2m1fn_x2): the stride-1 mode holds twice as many elements.
            if getattr(self, "_marked", False):
                raise TypeError(f"set element_type to {value} before marking the layout dynamic: the view "
                                "doubles the extent of the stride-1 mode")
            shape, stride = _rt.unpack_fp4_pairs(list(self._dl_shape), list(self._dl_stride))
            self._dl_shape, self._dl_stride = tuple(shape), tuple(stride)
            self._spec = _rt.TensorSpec(list(shape), list(stride), self._spec.use_32bit_stride)
        elif value.width != self._element_type.width:
            raise TypeError(f"cannot view {self._element_type} storage ({self._element_type.width} bits) as "
                            f"{value} ({value.width} bits): the widths differ")
        self._element_type = value

    def _hold_one_element_per_byte(self, value):
        """Sees byte storage as `value` (a packed 4-bit type) element for element: the shape and
        element strides stay, so the packed values take the first half of the bytes. How
        cutlass.torch.cute_tensor_like holds narrow floats (a byte per element of the reference)."""
        if not (isinstance(value, NumericMeta) and value.width == 4 and self._element_type.width == 8):
            raise TypeError(f"a byte per element holds 4-bit values only, not {value!r} over {self._element_type}")
        self._element_type = value

    dtype = element_type

    @property
    def shape(self):
        return self._dl_shape

    @property
    def stride(self):
        return self._dl_stride

    @property
    def layout(self):
        return self._spec.layout_string()

    @property
    def memspace(self):
        return AddressSpace.gmem if self.is_cuda else AddressSpace.generic

    @property
    def data_ptr(self):
        return self._data_ptr

    @property
    def iterator(self):
        return make_ptr(self._element_type, self._data_ptr, self.memspace, self.assumed_align)

    @property
    def size_in_bytes(self):
        return _rt.cosize(list(self._dl_shape), list(self._dl_stride)) * self._element_type.width // 8

    @property
    def leading_dim(self):
        lead = self._spec.leading_dim
        return None if lead < 0 else lead

    @property
    def dynamic_shapes_mask(self):
        return tuple(int(e[1]) for e in self._spec.shape)

    @property
    def dynamic_strides_mask(self):
        return tuple(int(e[1]) for e in self._spec.stride)

    # The JIT-argument protocol, so that a user object holding tensors passes them on (quack's
    # ArgumentsBase dataclasses ask each field for it): one parameter for the data pointer, then
    # one per dynamic extent and per dynamic stride, read from this object at each call. The body
    # sees a tensor like a tensor argument's, with the same static modes and divisibilities.
    def _dynamic_entries(self):
        return [e for e in self._spec.shape if e[1]] + [e for e in self._spec.stride if e[1]]

    def __get_mlir_types__(self):
        pointer = _core.pointer_type(self._element_type.__name__, int(self.memspace), self.assumed_align)
        return [pointer] + [(Int64 if e[3] == 64 else Int32).mlir_type for e in self._dynamic_entries()]

    def __c_pointers__(self):
        # Storage holding each value, kept alive with the object.
        self._c_storage = [ctypes.c_void_p(self._data_ptr)] + [
            (ctypes.c_int64 if e[3] == 64 else ctypes.c_int32)(e[0]) for e in self._dynamic_entries()]
        return [ctypes.addressof(c) for c in self._c_storage]

    def __new_from_mlir_values__(self, values):
        values = list(values)
        if len(values) != 1 + len(self._dynamic_entries()):
            raise DSLUserCodeError(f"a tensor argument is rebuilt from {1 + len(self._dynamic_entries())} values, "
                                   f"got {len(values)}", code="ARG_UNSUPPORTED_TYPE")
        dynamic = iter(values[1:])

        def leaf(entry):
            value, is_dynamic, divisibility, _ = entry
            return _wrap_int(next(dynamic), divisibility) if is_dynamic else value

        shape = [leaf(e) for e in self._spec.shape]
        stride = [leaf(e) for e in self._spec.stride]
        return _traced_tensor(values[0], self._element_type, shape, stride, int(self.memspace), self.assumed_align)

    def __tvm_ffi_object__(self):
        """The tvm_ffi.Tensor a TVM-FFI function receives for this tensor (made once)."""
        t = self.__dict__.get("_tvm_ffi_tensor")
        if t is None:
            t = self._tvm_ffi_tensor = import_tvm_ffi().from_dlpack(self._source)
        return t

    def __str__(self):
        static = not any(self.dynamic_shapes_mask + self.dynamic_strides_mask)
        layout = self._spec.value_string() if static else self._spec.layout_string()
        return f"Tensor<0x{self._data_ptr:016x}@{self.memspace} o {layout}>"

    __repr__ = __str__


_RuntimeTensor = Tensor


def from_dlpack(tensor, assumed_align=None, use_32bit_stride=False, *, enable_tvm_ffi=False, force_tf32=False):
    """Zero-copy CuTe view of a framework tensor, with a fully static layout. With
    `enable_tvm_ffi=True` (or CUTE_DSL_ENABLE_TVM_FFI=1) it is also ready to pass to a TVM-FFI
    compiled function (its tvm_ffi.Tensor is made now)."""
    t = Tensor(tensor, assumed_align=assumed_align, use_32bit_stride=use_32bit_stride)
    if enable_tvm_ffi or _core.env_flag("CUTE_DSL_ENABLE_TVM_FFI"):
        t.__tvm_ffi_object__()
    return t


def as_runtime_tensor(value):
    """What a @jit function sees of a tensor argument: runtime tensors as they are; framework
    tensors fully dynamic except the leading dimension's unit stride."""
    if isinstance(value, Tensor):
        return value
    t = Tensor(value)
    try:
        t.mark_layout_dynamic()
    except TensorSpecError:  # no unique leading dimension: every stride is read at call time
        entries = [(v, True, 1, 32) for v in t._dl_shape]
        strides = [(v, v != 0, 1, 64) for v in t._dl_stride]
        t._spec = _rt.TensorSpec.from_entries(entries, strides)
    return t


# ---- pointers -----------------------------------------------------------------------------

class Pointer:
    """A raw address with an element type, address space and alignment, passed to a @jit
    function's `cute.Pointer` parameter (bypassing DLPack)."""

    _is_runtime_pointer = True

    def __init__(self, dtype, address, mem_space=AddressSpace.generic, assumed_align=None):
        if not isinstance(dtype, NumericMeta):
            raise TypeError(f"make_ptr: dtype must be a cutlass numeric type, got {dtype!r}")
        try:
            self._memspace = AddressSpace(mem_space)
        except ValueError:
            raise ValueError(f"make_ptr: {mem_space!r} is not an AddressSpace") from None
        # The value as given (NVIDIA's examples hand `ptr._pointer` back to cudaFree).
        self._pointer = address
        if isinstance(address, ctypes._Pointer) or isinstance(address, ctypes.c_void_p):
            address = ctypes.cast(address, ctypes.c_void_p).value or 0
        if isinstance(address, bool) or not isinstance(address, int):
            raise TypeError(f"make_ptr: the address must be an int or a ctypes pointer, got {type(address).__name__}")
        if address < 0:
            raise ValueError(f"make_ptr: the address must not be negative, got {address}")
        self._dtype = dtype
        self._address = address
        self._alignment = _rt.resolve_alignment(assumed_align, dtype.bytes)
        _rt.check_address_alignment(address, self._alignment, "make_ptr: the address")
        self._type_key = f"{dtype.__name__},{int(self._memspace)},{self._alignment}"

    @property
    def dtype(self):
        return self._dtype

    value_type = dtype

    @property
    def memspace(self):
        return self._memspace

    @property
    def alignment(self):
        return self._alignment

    assumed_align = alignment

    def toint(self):
        return self._address

    def __tvm_ffi_opaque_ptr__(self):
        return self._address

    __int__ = toint

    def __add__(self, offset):
        if isinstance(offset, bool) or not isinstance(offset, int):
            return NotImplemented
        byte_offset = offset * self._dtype.width // 8
        align = _rt.alignment_after_offset(self._alignment, byte_offset)
        return Pointer(self._dtype, self._address + byte_offset, self._memspace, align)

    __radd__ = __add__

    def __sub__(self, offset):
        if isinstance(offset, bool) or not isinstance(offset, int):
            return NotImplemented
        return self + (-offset)

    def align(self, min_align):
        raise NotImplementedError("align() is only available on pointers inside a @cute.jit function")

    # The JIT-argument protocol, so that user classes holding a pointer can forward to it.
    def __get_mlir_types__(self):
        return [_core.pointer_type(self._dtype.__name__, int(self._memspace), self._alignment)]

    def __c_pointers__(self):
        # The address of storage holding the pointer value; kept alive with the object.
        self._c_storage = ctypes.c_void_p(self._address)
        return [ctypes.addressof(self._c_storage)]

    def __new_from_mlir_values__(self, values):
        return _core.cute.pointer_from_value(values[0])

    def type_string(self):
        """The pointer type the compiled code sees, e.g. `ptr<f16, gmem, align<32>>`."""
        return f"ptr<{_core.dtype_type(self._dtype.__name__)}, {self._memspace}, align<{self._alignment}>>"

    def __str__(self):
        return f"Ptr<0x{self._address:016x}@{self._memspace}>"

    __repr__ = __str__


def make_ptr(dtype, value, mem_space=AddressSpace.generic, assumed_align=None):
    return Pointer(dtype, value, mem_space, assumed_align)


def nullptr(dtype, mem_space=AddressSpace.generic, assumed_align=None):
    return Pointer(dtype, 0, mem_space, assumed_align)


# ---- compile-time stand-ins ---------------------------------------------------------------

class SymInt:
    """A symbolic (run-time) extent or stride of a fake tensor. One SymInt object is one run-time
    value: tensors that share it are traced with the same IR value, and a call checks that their
    extents agree."""

    def __init__(self, width=32, divisibility=1, symbol=None):
        if width not in (32, 64):
            raise ValueError(f"sym_int width must be 32 or 64, got {width}")
        if isinstance(divisibility, bool) or not isinstance(divisibility, int) or divisibility < 1:
            raise ValueError(f"sym_int divisibility must be a positive int, got {divisibility!r}")
        if symbol is not None and not isinstance(symbol, str):
            raise TypeError(f"sym_int symbol must be a str, got {type(symbol).__name__}")
        self.width = width
        self.divisibility = divisibility
        self.symbol = symbol

    def _derived(self, divisibility):
        return SymInt(self.width, divisibility)

    def __mul__(self, other):
        if isinstance(other, SymInt):
            return self._derived(self.divisibility * other.divisibility)
        if isinstance(other, int) and not isinstance(other, bool):
            return self._derived(self.divisibility * abs(other) if other else 1)
        return NotImplemented

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if isinstance(other, int) and not isinstance(other, bool) and other > 0:
            return self._derived(self.divisibility // other if self.divisibility % other == 0 else 1)
        return NotImplemented

    def __mod__(self, other):
        if isinstance(other, int) and not isinstance(other, bool) and other > 0:
            import math
            return self._derived(math.gcd(self.divisibility, other))
        return NotImplemented

    def __str__(self):
        if self.width == 32:
            text = "?" if self.divisibility == 1 else f"?{{div={self.divisibility}}}"
        else:
            text = f"?{{i{self.width}}}" if self.divisibility == 1 else f"?{{i{self.width} div={self.divisibility}}}"
        return text if self.symbol is None else f"{self.symbol}{text}"

    __repr__ = __str__


def sym_int(width=32, *, divisibility=1, symbol=None):
    return SymInt(width, divisibility, symbol)


def sym_int32(divisibility=1, symbol=None):
    return SymInt(32, divisibility, symbol)


def sym_int64(divisibility=1, symbol=None):
    return SymInt(64, divisibility, symbol)


def _entry(x):
    if isinstance(x, SymInt):
        return (0, True, int(x.divisibility), x.width)
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"fake tensor extents and strides must be ints or cute.sym_int() values, got {x!r}")
    return (int(x), False, 1, 32)


class FakeTensor(Tensor):
    """Stands for a tensor at compile time only: element type, shape, stride, memory and alignment,
    no data. Pass it to `cute.compile`; call the compiled function with real tensors."""

    def __init__(self, dtype, shape, stride, assumed_align=None, memspace=None):
        if not isinstance(dtype, NumericMeta):
            raise TypeError(f"fake tensor dtype must be a cutlass numeric type, got {dtype!r}")
        shape, stride = tuple(shape), tuple(stride)
        if len(shape) != len(stride):
            raise ValueError(f"fake tensor shape {shape} and stride {stride} have different ranks")
        space = AddressSpace.gmem if memspace is None else AddressSpace(memspace)
        self._source = None
        self._data_ptr = 0
        self._element_type = dtype
        self._dl_shape = tuple(0 if isinstance(s, SymInt) else int(s) for s in shape)
        self._dl_stride = tuple(0 if isinstance(s, SymInt) else int(s) for s in stride)
        self._spec = _rt.TensorSpec.from_entries([_entry(s) for s in shape], [_entry(s) for s in stride])
        self.assumed_align = _rt.resolve_alignment(assumed_align, max(1, dtype.width // 8))
        self.is_cuda = space == AddressSpace.gmem
        self._memspace = space
        self._shape_spec, self._stride_spec = shape, stride

    @property
    def shape(self):
        return self._shape_spec

    @property
    def stride(self):
        return self._stride_spec

    @property
    def memspace(self):
        return self._memspace

    def __tvm_ffi_object__(self):
        self._no_data()

    def _no_data(self, *_args, **_kwargs):
        raise TypeError("a fake tensor has no data: it only describes a tensor for cute.compile; call the "
                        "compiled function with real tensors")

    data_ptr = property(_no_data)
    iterator = property(_no_data)
    __getitem__ = __setitem__ = __dlpack__ = __dlpack_device__ = _no_data
    fill = load = store = _no_data

    def mark_layout_dynamic(self, leading_dim=None):
        raise TypeError("a fake tensor's layout is fixed by its shape and stride; use cute.sym_int() entries")

    mark_compact_shape_dynamic = mark_layout_dynamic

    def __str__(self):
        fmt = lambda t: "(" + ", ".join(str(x) for x in t) + ("," if len(t) == 1 else "") + ")"
        return f"FakeTensor<{self._element_type}, {fmt(self._shape_spec)}, {fmt(self._stride_spec)}>"

    __repr__ = __str__


_FakeTensor = FakeTensor


def make_fake_tensor(dtype, shape, stride, *, memspace=None, assumed_align=None):
    return FakeTensor(dtype, shape, stride, assumed_align, memspace)


def make_fake_compact_tensor(dtype, shape, stride_order=None, *, memspace=None, assumed_align=None,
                             use_32bit_stride=False):
    """A compact fake tensor; `stride_order[m]` ranks mode m (0: stride 1). The default (0, 1, ...)
    is column-major. A stride after a symbolic extent is itself symbolic (64-bit unless
    `use_32bit_stride`), divisible by the product of what precedes it."""
    shape = tuple(shape)
    rank = len(shape)
    order = list(range(rank)) if stride_order is None else [int(o) for o in stride_order]
    if sorted(order) != list(range(rank)):
        raise ValueError(f"stride_order {tuple(order)} must be a permutation of 0..{rank - 1}")
    stride = [None] * rank
    running, divisibility, dynamic = 1, 1, False
    for mode in sorted(range(rank), key=lambda m: order[m]):
        stride[mode] = SymInt(32 if use_32bit_stride else 64, divisibility) if dynamic else running
        extent = shape[mode]
        if isinstance(extent, SymInt):
            dynamic = True
            divisibility *= extent.divisibility
        else:
            divisibility *= int(extent)
            running *= int(extent)
    return make_fake_tensor(dtype, shape, stride, memspace=memspace, assumed_align=assumed_align)


class FakeStream:
    """Stands for a CUDA stream argument at compile time. With `use_tvm_ffi_env_stream=True` the
    TVM-FFI function takes no stream argument and launches on TVM-FFI's environment stream of the
    device of its first GPU tensor (the current torch stream when called from torch)."""

    def __init__(self, use_tvm_ffi_env_stream=False):
        self.use_tvm_ffi_env_stream = bool(use_tvm_ffi_env_stream)

    def __str__(self):
        return "FakeStream"

    __repr__ = __str__


def make_fake_stream(*, use_tvm_ffi_env_stream=False):
    return FakeStream(use_tvm_ffi_env_stream)


# Runtime tensors and pointers are `cute.Tensor` / `cute.Pointer` too (isinstance, annotations).
_AbstractPointer.register(Pointer)
_AbstractTensor.register(Tensor)
