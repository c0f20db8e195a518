"""How a call's arguments become a @jit function's traced parameters: which are compile-time
values and which runtime values (`_classify`), and the argument plan built meanwhile (`_ArgPlan`:
the C++ argument contract, and what the TVM-FFI signature needs). The one place traced tensors
and pointers are made from arguments."""
import inspect

from .. import _core
from . import c_struct, tvm_ffi
from .address_space import ARGUMENT_SPACES
from .decorated_function import _is_constexpr_annotation, _is_stream
from .errors import DSLUserCodeError
from .jit_arg_adapter import adapt as adapt_jit_arg
from .numeric import Int32, Int64, Numeric, NumericMeta, _wrap_int, annotated_class, as_numeric, wrap
from .runtime_arguments import SymInt, _traced_tensor, as_runtime_tensor
from .tensor import Pointer, Tensor

# Kinds of runtime argument slots: the argument contract's (runtime/argument_contract.h).
_K = _core.SlotKind
K_SCALAR, K_TENSOR_DATA, K_TENSOR_SHAPE, K_TENSOR_STRIDE, K_STREAM, K_POINTER, K_C_POINTER = (
    _K.Scalar, _K.TensorData, _K.TensorShape, _K.TensorStride, _K.Stream, _K.Pointer, _K.CPointer)


def _is_runtime_pointer(value):
    return getattr(type(value), "_is_runtime_pointer", False)


def _is_tensor_like(value):
    return hasattr(value, "_data_ptr") or (hasattr(value, "data_ptr") and hasattr(value, "stride")) or \
        hasattr(value, "__array_interface__")


def _type_mismatch(index, name, expected, value):
    return DSLUserCodeError(f"expects argument #{index} ({name}) to be {expected}, but got {type(value)}",
                            code="ARG_ANNOTATION_MISMATCH")


def _traced_pointer(ptr_value, dtype, memspace, align):
    """The pointer a @jit function's body sees for a `cute.Pointer` argument."""
    return _core.cute.pointer_from_value(ptr_value)


_DSL_INT = {32: Int32, 64: Int64}


NONE_PARAM_ARITY = tvm_ffi.NONE_PARAM_ARITY


class _ArgPlan:
    """Adds the host-function parameters to the tracer while it builds their argument plan (the
    C++ argument contract, `contract`: how each parameter is read from the call's arguments and
    what each tensor and pointer was compiled for); keeps what only tracing and the TVM-FFI
    signature need."""

    def __init__(self, tracer):
        self.tracer = tracer
        self.contract = _core.ArgumentPlan()
        # Symbolic extents (cute.sym_int) of fake tensors by identity: one symbol is one run-time
        # value, read from its first tensor; the others are checked to match it.
        self.symbols = {}
        self.env_stream_slots = []  # stream slots filled from TVM-FFI's environment stream
        # For the TVM-FFI signature: per source (kind, type text); per runtime parameter a dict
        # (name, arity, type text, leaves, env).
        self.leaf_info = {}
        self.params_info = []
        self.symbol_names = {}
        # Parameters given None at compile time (compile-time values): their positions among the
        # call's arguments (runtime and None ones; `self` and other compile-time values are not
        # passed), so that a call may pass None there again (cta_norm's `bias=None`).
        self.none_positions = []
        self.none_names = []

    @property
    def num_sources(self):
        return self.contract.num_sources

    def add_argument(self, name, length=-1):
        """A runtime argument: one value, or a list of `length` values (each a source)."""
        self.contract.add_argument(name, length)

    def _symbol_name(self, symbol):
        key = id(symbol) if symbol is not None else object()
        if key not in self.symbol_names:
            given = getattr(symbol, "symbol", None)
            self.symbol_names[key] = given or f"n{len(self.symbol_names)}"
        return self.symbol_names[key]

    def add_param(self, name, arity, sources, env=False):
        leaves = [(s,) + self.leaf_info[s] for s in sources]
        if arity < 0:
            type_text = leaves[0][2]
        else:
            type_text = "Tuple[" + ", ".join(leaf[2] for leaf in leaves) + "]"
        self.params_info.append({"name": name, "arity": arity, "type": type_text, "leaves": leaves, "env": env})

    def add_none_param(self, name, position):
        """A parameter compiled with None: the call may pass None there (and nothing else)."""
        self.none_positions.append(position)
        self.none_names.append(name)
        self.params_info.append({"name": name, "arity": NONE_PARAM_ARITY, "type": "None", "leaves": [], "env": False})

    def scalar(self, cls, source):
        self.leaf_info[source] = (1, "bool" if cls.__name__ == "Boolean" else cls.__name__.lower())
        self.contract.add_slot(source, K_SCALAR)
        return wrap(self.tracer.add_argument(cls.mlir_type))

    def stream(self, source, value=None):
        self.leaf_info[source] = (2, "Stream")
        if getattr(value, "use_tvm_ffi_env_stream", False):
            self.env_stream_slots.append(self.contract.num_slots)
        self.contract.add_slot(source, K_STREAM)
        return wrap(self.tracer.add_argument(Int64.mlir_type))

    def _entry(self, source, kind, mode, entry, symbol=None, same_as=None):
        value, dynamic, divisibility, width = entry
        if not dynamic:
            return value
        if symbol is not None:
            known = self.symbols.get(id(symbol))
            if known is not None:
                traced, slot = known[1], known[2]
                same_as.append((kind == K_TENSOR_STRIDE, mode, slot))
                return traced
        slot = self.contract.add_slot(source, kind, mode)
        traced = _wrap_int(self.tracer.add_argument(_DSL_INT[width].mlir_type), divisibility)
        if symbol is not None:
            self.symbols[id(symbol)] = (symbol, traced, slot)
        return traced

    def tensor(self, value, source, name=""):
        rt_tensor = as_runtime_tensor(value)
        spec = rt_tensor._spec
        space = int(rt_tensor.memspace)
        dtype = rt_tensor.element_type
        ptr = self.tracer.add_argument(_core.pointer_type(dtype.__name__, space, rt_tensor.assumed_align))
        self.contract.add_slot(source, K_TENSOR_DATA)
        shape_entries, stride_entries = spec.shape, spec.stride
        shape_syms = getattr(rt_tensor, "_shape_spec", None) or [None] * len(shape_entries)
        stride_syms = getattr(rt_tensor, "_stride_spec", None) or [None] * len(stride_entries)
        same_as = []  # (is stride, mode, slot of the symbol's first occurrence)
        shape = [self._entry(source, K_TENSOR_SHAPE, i, e, _symbol(shape_syms[i]), same_as)
                 for i, e in enumerate(shape_entries)]
        stride = [self._entry(source, K_TENSOR_STRIDE, i, e, _symbol(stride_syms[i]), same_as)
                  for i, e in enumerate(stride_entries)]
        dims = [self._symbol_name(_symbol(shape_syms[i])) if e[1] else str(e[0]) for i, e in enumerate(shape_entries)]
        self.leaf_info[source] = (0, f"Tensor([{', '.join(dims)}], {_framework_dtype_name(dtype)})")
        static_shape = [-1 if e[1] else e[0] for e in shape_entries]
        static_stride = [-1 if e[1] else e[0] for e in stride_entries]
        shape_div = [e[2] for e in shape_entries]
        stride_div = [e[2] for e in stride_entries]
        int32_strides = any(e[1] and e[3] == 32 for e in stride_entries)
        # Every tensor is checked at call time: element type, memory and alignment always, the
        # layout where the code assumed something of it.
        self.contract.add_tensor(source, static_shape, static_stride, shape_div, stride_div, int32_strides,
                                 spec.layout_string(), name, same_as)
        return _traced_tensor(ptr, dtype, shape, stride, space, rt_tensor.assumed_align)

    def pointer(self, value, source):
        if value.memspace not in ARGUMENT_SPACES:
            raise DSLUserCodeError(f"a {value.memspace} pointer cannot be passed to a jit function yet",
                                   code="ARG_UNSUPPORTED_TYPE")
        dtype = value.dtype
        ptr = self.tracer.add_argument(_core.pointer_type(dtype.__name__, int(value.memspace), value.alignment))
        self.leaf_info[source] = (3, "Pointer")
        self.contract.add_slot(source, K_POINTER)
        self.contract.add_pointer(source, value._type_key, value.alignment, value.type_string())
        return _traced_pointer(ptr, dtype, value.memspace, value.alignment)


    def custom(self, value, source):
        """A user object with the JIT-argument protocol: one parameter per type of
        `__get_mlir_types__()`, read at call time from the storage `__c_pointers__()` points at;
        the body sees `__new_from_mlir_values__` of the parameters."""
        types = list(value.__get_mlir_types__())
        n_pointers = len(list(value.__c_pointers__()))
        if n_pointers != len(types):
            raise DSLUserCodeError(f"{type(value).__name__}.__c_pointers__() gives {n_pointers} pointers but "
                                   f"__get_mlir_types__() {len(types)} types; they must match",
                                   code="ARG_UNSUPPORTED_TYPE")
        params = []
        for j, t in enumerate(types):
            if isinstance(t, (c_struct.StructType, c_struct.PointerType)):
                # A C struct (or pointer) read field by field from the storage at pointer j: one
                # parameter per scalar leaf at its C offset, rebuilt into one struct value.
                leaves = []
                for leaf_type, offset in c_struct.flatten_type(t):
                    self.contract.add_slot(source, K_C_POINTER, c_pointer_slot_mode(j, offset))
                    leaves.append(self.tracer.add_argument(leaf_type))
                params.append(c_struct.rebuild_value(t, leaves))
                continue
            self.contract.add_slot(source, K_C_POINTER, c_pointer_slot_mode(j, 0))
            params.append(self.tracer.add_argument(getattr(t, "mlir_type", t)))
        self.leaf_info[source] = (3, type(value).__name__)
        return value.__new_from_mlir_values__(params)


C_POINTER_INDEX_BITS = 16  # the C-pointer slot's mode: byte offset above, pointer index below


def c_pointer_slot_mode(pointer_index, byte_offset):
    """The mode of a slot reading a value at `byte_offset` of `__c_pointers__()[pointer_index]`
    (decoded in bindings/compiled_function.cpp, c_pointer_argument)."""
    if not 0 <= pointer_index < (1 << C_POINTER_INDEX_BITS) or not 0 <= byte_offset < (1 << 14):
        raise DSLUserCodeError(f"a JIT argument's C storage is too large (pointer {pointer_index}, byte offset "
                               f"{byte_offset}; at most {1 << 14} bytes per pointer)", code="ARG_UNSUPPORTED_TYPE")
    return (byte_offset << C_POINTER_INDEX_BITS) | pointer_index


def _has_jit_argument_protocol(value):
    return all(hasattr(value, m) for m in ("__c_pointers__", "__get_mlir_types__", "__new_from_mlir_values__"))


def _framework_dtype_name(dtype):
    name = dtype.__name__
    return {"Boolean": "bool", "BFloat16": "bfloat16"}.get(name, name.lower())


def _symbol(entry):
    return entry if isinstance(entry, SymInt) else None


def _classify(fn, sig, args, kwargs, plan, for_kernel=False, static_shapes=True, info=None):
    """Binds the call's arguments; returns (call kwargs for tracing, runtime values).
    `static_shapes`: a tuple of ints for a cute.Shape/Stride/... parameter is a compile-time value
    (the default ABI); TVM-FFI functions take shapes at call time instead. `info`, when given,
    receives the parameter positions of the runtime values ("runtime_positions") and the
    compile-time argument values ("static_values")."""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise DSLUserCodeError(f"cannot bind arguments to {fn.__name__}: {e}", code="ARG_BIND_FAILED") from None
    bound.apply_defaults()
    call, runtime_values = {}, []
    call_position = 0  # among the arguments a call of the compiled function passes
    for index, (name, value) in enumerate(bound.arguments.items()):
        value = adapt_jit_arg(value)  # a registered adapter stands in for its type (register_jit_arg_adapter)
        param = sig.parameters[name]
        ann = param.annotation
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise DSLUserCodeError(f"*args/**kwargs parameters of a jit function are not supported ({name})",
                                   code="ARG_UNSUPPORTED_TYPE")
        static = (_is_constexpr_annotation(ann) or (index == 0 and name in ("self", "cls")) or value is None
                  or isinstance(value, type) or (callable(value) and not _is_tensor_like(value)
                                                 and not isinstance(value, Numeric))
                  or _is_slicing_coordinate(value) or (static_shapes and ann is tuple and _is_int_tuple(value))
                  or getattr(value, "__cute_static__", False))
        if static:
            call[name] = value
            if info is not None:
                info["static_values"].append(value)
            if value is None and not for_kernel:
                plan.add_none_param(name, call_position)
                call_position += 1
            continue
        call_position += 1
        if info is not None:
            info["runtime_positions"].append(index)
        number = index + 1
        if isinstance(ann, NumericMeta) and ann is not Numeric:
            if not isinstance(value, (Numeric, int, float, bool)):
                raise _type_mismatch(number, name, ann, value)
            cls = annotated_class(ann, value)
        elif ann is not inspect.Parameter.empty and isinstance(ann, type) and issubclass(ann, Tensor):
            if not _is_tensor_like(value):
                raise _type_mismatch(number, name, ann, value)
            cls = None
        elif ann is Pointer:
            if not _is_runtime_pointer(value):
                raise _type_mismatch(number, name, ann, value)
            cls = None
        else:
            cls = None
        if isinstance(value, (list, tuple)) and cls is None and _is_runtime_tree(value):
            # A list or tuple (named, empty, or nested: fmha_bwd.py's problem shape
            # (s_q, s_k, d, ((h_r, h_k), b))) of tensors, scalars, streams, pointers: one runtime
            # source per leaf, depth first. A call passes the same nesting (the compiled function
            # reads the leaves in that order).
            first, count = plan.num_sources, _leaf_count(value)
            call[name] = _runtime_tree(plan, value, iter(range(first, first + count)), name)
            plan.add_param(name, count, range(first, first + count))
            plan.add_argument(name, count)
            runtime_values.append(value)
            continue
        leaf = _runtime_leaf(plan, value, plan.num_sources, cls, name)
        if leaf is None:
            raise DSLUserCodeError(f"argument #{number} ({name}) of type {type(value)} is not supported by a jit "
                                   "function; annotate it with cutlass.Constexpr to make it a compile-time value",
                                   code="ARG_UNSUPPORTED_TYPE")
        call[name] = leaf
        plan.add_param(name, -1, [plan.num_sources], env=bool(getattr(value, "use_tvm_ffi_env_stream", False)))
        plan.add_argument(name)
        runtime_values.append(value)
    return call, runtime_values


def _is_int_tuple(value):
    """Python ints, possibly nested in tuples: for a `cute.Shape`/`Stride`/`Coord`/`Tile`
    parameter they are a compile-time shape, as the layout algebra wants it."""
    if isinstance(value, tuple):
        return len(value) > 0 and all(_is_int_tuple(v) for v in value)
    return type(value) is int


def _is_slicing_coordinate(value):
    """A tuple of Python ints and Nones with at least one None, such as (None, 0): it can only be
    a slicing coordinate, so it is a compile-time value like a Constexpr."""
    def leaves(v):
        if isinstance(v, (list, tuple)):
            for x in v:
                yield from leaves(x)
        else:
            yield v
    if not isinstance(value, tuple):
        return False
    items = list(leaves(value))
    return any(v is None for v in items) and all(v is None or type(v) is int for v in items)


def _is_runtime_tree(value):
    """A list or tuple whose items are runtime leaves or such lists or tuples."""
    return all(_is_runtime_tree(v) if isinstance(v, (list, tuple)) else _is_runtime_leaf(v) for v in value)


def _leaf_count(value):
    return sum(_leaf_count(v) if isinstance(v, (list, tuple)) else 1 for v in value)


def _runtime_tree(plan, value, sources, name):
    """`value` with each leaf replaced by its traced stand-in (sources in depth-first order)."""
    items = [_runtime_tree(plan, v, sources, f"{name}[{j}]") if isinstance(v, (list, tuple))
             else _runtime_leaf(plan, v, next(sources), None, f"{name}[{j}]") for j, v in enumerate(value)]
    return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)


def _is_runtime_leaf(value):
    return (isinstance(value, (Numeric, int, float, bool)) or _is_stream(value) or _is_runtime_pointer(value)
            or _is_tensor_like(value))


def _runtime_leaf(plan, value, source, cls, name=""):
    """The traced stand-in for one runtime argument value (None when it is not one)."""
    if cls is None and isinstance(value, (Numeric, int, float, bool)) and not _is_stream(value):
        cls = type(as_numeric(value))  # int-like CUstream handles are streams, not scalars
    if cls is not None:
        return plan.scalar(cls, source)
    if _is_stream(value):
        return plan.stream(source, value)
    if _is_runtime_pointer(value):
        return plan.pointer(value, source)
    if _is_tensor_like(value):
        return plan.tensor(value, source, name)
    if _has_jit_argument_protocol(value) and not isinstance(value, type):
        return plan.custom(value, source)
    return None
