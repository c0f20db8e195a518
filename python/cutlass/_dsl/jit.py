"""@jit and @kernel: argument classification, tracing, compilation, caching and launch."""
import contextlib
import copy
import dataclasses
import functools
import inspect
import os
import sys
import threading

from .. import _core
from . import context, rt
from . import direct_call as _direct_call
from . import trace_key as _trace_key
from .errors import DSLUserCodeError, DSLUserCodeRuntimeError, DSLRuntimeError
from .extracted_values import rebuild_parts
from .jit_arg_adapter import adapt as adapt_jit_arg
from .numeric import Int32, Int64, Numeric, NumericMeta, annotated_class, as_numeric, wrap
from .options import CompileOptions, EnableTVMFFI, resolve_target
from .preprocess import preprocess as _preprocess
from .source_lines import track_source_lines
from .tensor import Pointer, Tensor

VERSION = "0.1.0"

# Kinds of runtime argument slots: the argument contract's (runtime/argument_contract.h).
_K = _core.SlotKind
K_SCALAR, K_TENSOR_DATA, K_TENSOR_SHAPE, K_TENSOR_STRIDE, K_STREAM, K_POINTER, K_C_POINTER = (
    _K.Scalar, _K.TensorData, _K.TensorShape, _K.TensorStride, _K.Stream, _K.Pointer, _K.CPointer)


class ConstexprMeta(type):
    def __getitem__(cls, item):
        return cls


class Constexpr(metaclass=ConstexprMeta):
    """Annotation of a compile-time parameter."""


def _is_constexpr_annotation(ann):
    return ann is Constexpr or (isinstance(ann, type) and issubclass(ann, Constexpr)) or \
        getattr(ann, "__origin__", None) is Constexpr or (isinstance(ann, str) and "Constexpr" in ann)


def _is_stream(value):
    """A CUDA stream, or another CUDA handle passed by value the same way (an event for a launch's
    launch_completion_event / programmatic_event)."""
    name = type(value).__name__
    return name in ("CUstream", "cudaStream_t", "Stream", "ExternalStream", "FakeStream", "StreamHandle",
                    "cudaEvent_t", "CUevent")


def _is_runtime_pointer(value):
    return getattr(type(value), "_is_runtime_pointer", False)


def _is_tensor_like(value):
    return hasattr(value, "_data_ptr") or (hasattr(value, "data_ptr") and hasattr(value, "stride")) or \
        hasattr(value, "__array_interface__")


def _env_flag(name):
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def _arch_for_compile(opts):
    if opts["gpu_arch"]:
        return opts["gpu_arch"]
    env = os.environ.get("CUTE_DSL_ARCH")
    if env:
        return env
    if _core.cuda_available():
        return _core.device_arch(0)
    return "sm_90a"


def _type_mismatch(index, name, expected, value):
    return DSLUserCodeError(f"expects argument #{index} ({name}) to be {expected}, but got {type(value)}",
                            code="ARG_ANNOTATION_MISMATCH")


def _traced_tensor(ptr_value, dtype, shape, stride, memspace, align):
    """The tensor a @jit function's body sees for a tensor argument. `ptr_value` is the IR
    pointer; shape/stride entries are ints (static) or DSL integers (dynamic, possibly carrying
    a divisibility). The one place traced tensors are built from arguments."""
    from ..cute import layout as _layout, tensor as _tensor
    layout = _layout.make_layout(tuple(shape), stride=tuple(stride))
    return _tensor.make_tensor(_core.cute.pointer_from_value(ptr_value), layout)


def _traced_pointer(ptr_value, dtype, memspace, align):
    """The pointer a @jit function's body sees for a `cute.Pointer` argument."""
    return _core.cute.pointer_from_value(ptr_value)


_DSL_INT = {32: Int32, 64: Int64}


NONE_PARAM_ARITY = -2  # a TVM-FFI parameter that was compiled with None (tvm_ffi_function.cpp)


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
        from ..cute.layout import _wrap_int  # dynamic layout leaves carry their divisibility
        slot = self.contract.add_slot(source, kind, mode)
        traced = _wrap_int(self.tracer.add_argument(_DSL_INT[width].mlir_type), divisibility)
        if symbol is not None:
            self.symbols[id(symbol)] = (symbol, traced, slot)
        return traced

    def tensor(self, value, source, name=""):
        from ..cute.runtime import as_runtime_tensor
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
        from .address_space import ARGUMENT_SPACES
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
        from .._mlir.dialects import llvm
        params = []
        for j, t in enumerate(types):
            if isinstance(t, (llvm.StructType, llvm.PointerType)):
                # A C struct (or pointer) read field by field from the storage at pointer j: one
                # parameter per scalar leaf at its C offset, rebuilt into one struct value.
                leaves = []
                for leaf_type, offset in llvm.flatten_type(t):
                    self.contract.add_slot(source, K_C_POINTER, c_pointer_slot_mode(j, offset))
                    leaves.append(self.tracer.add_argument(leaf_type))
                params.append(llvm.rebuild_value(t, leaves))
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
    from ..cute.runtime import SymInt
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
        if isinstance(value, (list, tuple)) and cls is None and all(_is_runtime_leaf(v) for v in value):
            # A list or tuple (named, empty) of tensors, scalars, streams, pointers: one runtime
            # source per item.
            items = [_runtime_leaf(plan, v, plan.num_sources + j, None, f"{name}[{j}]") for j, v in enumerate(value)]
            call[name] = type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)
            plan.add_param(name, len(value), range(plan.num_sources, plan.num_sources + len(value)))
            plan.add_argument(name, len(value))
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


def _flatten_results(result):
    if result is None:
        return []
    items = result if isinstance(result, tuple) else (result,)
    out = []
    for r in items:
        if not isinstance(r, (Numeric, int, float, bool)):
            raise DSLUserCodeError(f"a jit function called from Python can only return numeric values, got "
                                   f"{type(r)}", code="CALL_UNSUPPORTED_RETURN")
        out.append(as_numeric(r))
    return out


# What cute.compile returns; bound in C++ (see cpp/src/bindings) so calls skip Python frames.
CompiledFunction = _core.JitCompiledFunction


class _DecoratedFunction:
    """What @jit and @kernel share: the wrapped function, its signature, its lazily
    preprocessed body, method binding and the symbol-name prefix."""

    def __init__(self, fn, preprocess=True):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._preprocess = preprocess
        self._traced = None
        self._sig = inspect.signature(fn)
        self._name_prefix = ""

    def _body(self):
        if self._traced is None:
            self._traced = _preprocess(self._fn, rt) if self._preprocess else self._fn
        return self._traced

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def set_name_prefix(self, name, *, remove_cutlass_symbol=False, keep_mangled_name=True):
        if not isinstance(name, str):
            raise TypeError("name prefix must be a str")
        self._name_prefix = name


_trace_count_lock = threading.Lock()


class JitFunction(_DecoratedFunction):
    def __init__(self, fn, preprocess=True):
        super().__init__(fn, preprocess)
        self._cache = {}
        # Compiled functions by argument specialisation, reused without tracing while the
        # Python state their trace read is unchanged (direct_call.py); made on the first call.
        self._direct = None
        self._direct_made = False
        self._trace_count = 0

    def __call__(self, *args, no_cache=False, **kwargs):
        if context.current() is not None:
            return self._body()(*args, **kwargs)  # jit -> jit inlines
        direct = self._direct
        if direct is not None and not no_cache:
            result = direct.call(args, kwargs)
            if result is not NotImplemented:
                return result
        return self._traced_call(args, kwargs, no_cache)

    def _traced_call(self, args, kwargs, no_cache):
        if not self._direct_made:
            self._direct_made = True
            self._direct = _direct_call.make_cache(self)
        record = not no_cache and self._direct is not None and _direct_call.can_record()
        recorder = _core.TraceRecorder() if record else None
        info = {"runtime_positions": [], "static_values": []}
        try:
            compiled, runtime_values = self._trace_and_compile(args, kwargs, CompileOptions(),
                                                               use_cache=not no_cache, use_disk_cache=not no_cache,
                                                               recorder=recorder, info=info)
            if record and not recorder.printed:
                try:
                    guard = _trace_key.direct_guard(self, info["trace_key"]) if "trace_key" in info else \
                        _direct_call.build_guard(self, recorder.executed, info["static_values"])[0]
                    self._direct.record(args, kwargs, compiled, info["runtime_positions"], guard)
                except _direct_call.Unkeyable as e:
                    if _core.log_enabled(10):
                        _core.log(10, f"{self._fn.__name__}: calls are traced every time ({e})")
        finally:
            if recorder is not None:
                recorder.clear()  # it holds the globals of every module the trace ran code of
        return compiled(*runtime_values)

    @property
    def direct_call_stats(self):
        """How often this function was traced ("traced": calls from Python that traced, and
        cute.compile) and how many calls ran the compiled function of an earlier trace without
        tracing ("direct")."""
        return {"traced": self._trace_count, "direct": self._direct.hits if self._direct is not None else 0}

    def _trace_and_compile(self, args, kwargs, options, use_cache, use_disk_cache=True, recorder=None, info=None):
        # A call keyed without tracing (trace_key.py) may find its program stored on disk.
        info = info if info is not None else {"runtime_positions": [], "static_values": []}
        warm = _trace_key.compute(self, args, kwargs, options) if use_disk_cache else None
        own_recorder = None
        if warm is not None:
            hit = _trace_key.load(self, warm, args, kwargs, info, self._cache if use_cache else None)
            if hit is not None:
                return hit
            if recorder is None and _direct_call.can_record():
                recorder = own_recorder = _core.TraceRecorder()  # the store checks what the trace ran
        import time
        t0 = time.perf_counter()
        with _trace_count_lock:  # traces may run on several threads at once
            self._trace_count += 1
        # The toolchain libraries load while the function is traced (once per process).
        _core.preload_toolchain()
        tracer = _core.Tracer()
        arch = _arch_for_compile(options)  # once: it may ask the driver
        tracer.set_assertions_enabled(bool(options["enable_assertions"]) or _env_flag("CUTE_DSL_ENABLE_ASSERTIONS"))
        plan = _ArgPlan(tracer)
        line_info = bool(options["generate_line_info"]) or _env_flag("CUTE_DSL_LINEINFO")
        with context.Trace(tracer) as trace, (track_source_lines(tracer) if line_info else contextlib.nullcontext()):
            trace.arch = arch  # shared-memory capacity checks while tracing
            if recorder is not None:
                recorder.start()
            try:
                tracer.begin_function(self._fn.__name__, False)
                call, runtime_values = _classify(self._fn, self._sig, args, kwargs, plan,
                                                 static_shapes=not options["enable_tvm_ffi"], info=info)
                result = self._body()(**call)
                results = _flatten_results(result)
                tracer.end_function([r._n for r in results])
            finally:
                if recorder is not None:
                    recorder.stop()
        trace_ms = (time.perf_counter() - t0) * 1e3
        target = resolve_target(options)
        key = None
        if use_cache:
            key = (tracer.module_text(), options.key(), arch, target, VERSION, line_info)
            hit = self._cache.get(key)
            if hit is not None:
                return hit, runtime_values
        compiled = _core.compile_traced(tracer, {
            "arch": arch,
            "opt_level": options["opt_level"],
            "generate_line_info": line_info,
            "ptxas_options": options["ptxas_options"],
            "use_disk_cache": use_disk_cache,
            "version": VERSION,
            "function_name": self._fn.__name__,
            "keep_ptx": bool(options["keep_ptx"]),
            "keep_cubin": bool(options["keep_cubin"]),
            "dump_dir": options["dump_dir"],
            "target": target,
        }, plan.contract, [r.dtype.mlir_type for r in results])
        compiled.function_name = self._fn.__name__
        compiled.trace_ms = trace_ms
        if plan.none_positions:
            compiled._none_arguments = (plan.none_positions, plan.none_names)
        if _core.log_enabled(10):
            _core.log(10, f"traced {self._fn.__name__} in {trace_ms:.2f} ms; compile timings {compiled.timings_ms}")
        if _env_flag("CUTE_DSL_PRINT_IR"):
            print(compiled.__mlir__, flush=True)
        if warm is not None:
            _trace_key.store(self, warm, compiled, recorder, info["runtime_positions"])
            if own_recorder is not None:
                own_recorder.clear()  # it holds the globals of every module the trace ran code of
        if options["enable_tvm_ffi"]:
            from . import tvm_ffi
            compiled = tvm_ffi.make_function(compiled, plan, self._fn, self._sig)
        if key is not None:
            self._cache[key] = compiled
        return compiled, runtime_values


class KernelFunction(_DecoratedFunction):
    def __call__(self, *args, **kwargs):
        ctx = context.current()
        if ctx is None:
            raise DSLUserCodeRuntimeError(
                f"@cute.kernel function '{self._fn.__name__}' can only be launched from inside a @cute.jit function",
                code="LAUNCH_OUTSIDE_JIT")
        if ctx.kernel_depth > 0:
            raise DSLUserCodeError(f"a @cute.kernel ('{self._fn.__name__}') cannot be called from another kernel; "
                                   "call a @cute.jit function instead", code="CALL_KERNEL_FROM_KERNEL")
        try:
            bound = self._sig.bind(*args, **kwargs)
        except TypeError as e:
            raise DSLUserCodeError(f"cannot bind arguments to kernel {self._fn.__name__}: {e}",
                                   code="ARG_BIND_FAILED") from None
        bound.apply_defaults()
        return KernelLauncher(self, bound)


def _dims(value, what):
    if value is None:
        value = [1, 1, 1]
    if isinstance(value, (int, Numeric)):
        value = [value]
    value = list(value)
    if len(value) > 3:
        raise DSLUserCodeError(f"{what} has {len(value)} dimensions; at most 3 are allowed",
                               code="LAUNCH_INVALID_GRID")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, Numeric)) or (isinstance(v, Numeric) and type(v).is_float):
            raise DSLUserCodeError(f"{what} dimensions must be integers, got {v!r}", code="LAUNCH_INVALID_DIMENSION")
        if isinstance(v, int) and v < 1:
            raise DSLUserCodeError(f"{what} dimensions must be positive, got {v}", code="LAUNCH_INVALID_DIMENSION")
    return value + [1] * (3 - len(value))


# A cluster has at most 16 CTAs on sm_90 (8 portably; the launch allows the non-portable sizes).
_MAX_CLUSTER_SIZE = 16


def _check_cluster(cluster, grid):
    """Static cluster shapes: at most 16 CTAs, and each dividing the grid's dimension where known."""
    static = [c.value if isinstance(c, Numeric) and c.is_static() else c for c in cluster]
    if all(isinstance(c, int) for c in static):
        size = static[0] * static[1] * static[2]
        if size > _MAX_CLUSTER_SIZE:
            raise DSLUserCodeError(f"cluster {tuple(static)} has {size} CTAs; a cluster has at most "
                                   f"{_MAX_CLUSTER_SIZE} (8 portably)", code="LAUNCH_INVALID_CLUSTER")
    for d, (c, g) in enumerate(zip(static, grid)):
        g = g.value if isinstance(g, Numeric) and g.is_static() else g
        if isinstance(c, int) and isinstance(g, int) and g % c:
            raise DSLUserCodeError(f"cluster {tuple(static)} does not divide the grid {tuple(grid)}: grid dimension "
                                   f"{d} ({g}) is not a multiple of the cluster's ({c})", code="LAUNCH_INVALID_CLUSTER")


def _kernel_value(tracer, pname, value, host_values):
    """The kernel-side stand-in for a structured launch argument: static parts stay Python
    values, each dynamic leaf becomes a kernel parameter (its host value goes to host_values)."""
    from ..cute.layout import ComposedLayout, Layout, Swizzle, _wrap_int
    value = adapt_jit_arg(value)
    if isinstance(value, (bool, int, float, str, Swizzle)) or value is None:
        return value
    if isinstance(value, ComposedLayout):  # swizzled smem layouts are static (checked when used)
        return value
    if isinstance(value, Numeric):
        if value.is_static():
            return value
        host_values.append(value._n)
        return _wrap_int(tracer.add_argument(type(value).mlir_type), getattr(value, "_div", 1))
    if isinstance(value, (tuple, list)):
        items = [_kernel_value(tracer, pname, v, host_values) for v in value]
        return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)
    if isinstance(value, Layout):
        if value.is_static():
            return value
        vals = _core.cute.layout_dynamic_values(value)
        host_values.extend(vals)
        return _core.cute.layout_with_values(value, [tracer.add_argument(v.ir_type) for v in vals])
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and \
            not hasattr(value, "__extract_mlir_values__"):
        # A dataclass (frozen or not) of tensors and static values: each field as its own value.
        copied = copy.copy(value)
        for field in dataclasses.fields(value):
            object.__setattr__(copied, field.name, _kernel_value(tracer, f"{pname}.{field.name}",
                                                                 getattr(value, field.name), host_values))
        return copied
    if hasattr(value, "__extract_mlir_values__"):
        vals = value.__extract_mlir_values__()
        if any(isinstance(v, (list, tuple)) for v in vals):  # one list per part: the parts rebuilt
            def params(group):
                host_values.extend(group)
                return [tracer.add_argument(v.ir_type) for v in group]
            return value.__new_from_mlir_values__(rebuild_parts(vals, params))
        host_values.extend(vals)
        return value.__new_from_mlir_values__([tracer.add_argument(v.ir_type) for v in vals])
    raise DSLUserCodeError(f"kernel argument '{pname}' of type {type(value)} is not supported",
                           code="ARG_UNSUPPORTED_TYPE")


class _KernelSmemUsage:
    """Bytes of dynamic shared memory the kernel being traced allocated (cutlass.utils.SmemAllocator)."""

    def __init__(self):
        self.bytes = 0
        self.static_bytes = 0  # cute.arch.alloc_smem arrays, placed before the dynamic memory


def _launch_smem(smem, allocated, kernel_name, static_bytes=0):
    """The launch's dynamic shared-memory bytes: what the kernel allocated when `smem` is None."""
    if smem is None:
        return allocated
    if isinstance(smem, int) and not isinstance(smem, bool):
        from .. import _core
        ctx = context.current()
        arch = getattr(ctx, "arch", None)
        if arch and smem + static_bytes > _core.smem.capacity_in_bytes(arch):
            raise DSLUserCodeError(f"launch of {kernel_name} asks for {smem} bytes of dynamic shared memory (and the "
                                   f"kernel has {static_bytes} static), more than the "
                                   f"{_core.smem.capacity_in_bytes(arch)} bytes a block may use on {arch}",
                                   code="SMEM_CAPACITY_EXCEEDED")
        if smem < allocated:
            import warnings
            warnings.warn(f"launch of {kernel_name}: smem={smem} bytes is less than the {allocated} bytes the kernel "
                          f"allocates with SmemAllocator", stacklevel=3)
    return smem


class KernelLauncher:
    def __init__(self, kernel, bound):
        self._kernel = kernel
        self._bound = bound

    def __call__(self, **config):
        return self.launch(**config)

    def launch(self, grid=None, block=None, cluster=None, smem=None, stream=None, *, cooperative=False,
               use_pdl=False, launch_completion_event=None, launch_completion_event_flags=0,
               programmatic_event=None, programmatic_event_flags=0, programmatic_event_trigger_at_block_start=0,
               **other):
        flags, events, event_attrs = _launch_attributes(
            cooperative, use_pdl, launch_completion_event, launch_completion_event_flags, programmatic_event,
            programmatic_event_flags, programmatic_event_trigger_at_block_start)
        ctx = context.current()
        tracer = ctx.tracer
        grid3, block3 = _dims(grid, "grid"), _dims(block, "block")
        if cluster is not None:
            cluster = list(cluster)
            if len(cluster) != 3:
                raise DSLUserCodeError(f"cluster must have exactly 3 dimensions, got {len(cluster)}",
                                       code="LAUNCH_INVALID_CLUSTER")
            cluster = _dims(cluster, "cluster")
            _check_cluster(cluster, grid3)
        min_blocks = _compile_time_int(other.pop("min_blocks_per_mp", 0) or 0, "min_blocks_per_mp")
        if min_blocks < 0:
            raise DSLUserCodeError(f"launch: min_blocks_per_mp must not be negative, got {min_blocks}",
                                   code="LAUNCH_INVALID_ATTRIBUTE")
        fn = self._kernel._fn
        name = tracer.unique_kernel_name(fn.__name__)
        if self._kernel._name_prefix:
            name = self._kernel._name_prefix + "_" + name
        sig = self._kernel._sig
        host_values, call = [], {}
        # Scalars converted to their annotated type in the host function, before the kernel's
        # region opens (a conversion inside it would use a host value in the kernel).
        converted = {}
        for pname, value in self._bound.arguments.items():
            ann = sig.parameters[pname].annotation
            if isinstance(value, (Numeric, int, float, bool)) and isinstance(ann, NumericMeta) and \
                    ann is not Numeric and not _is_constexpr_annotation(ann):
                n = as_numeric(value)
                cls = annotated_class(ann, n)
                converted[pname] = cls(n) if type(n) is not cls else n
        tracer.begin_function(name, True)
        try:
            for index, (pname, value) in enumerate(self._bound.arguments.items()):
                ann = sig.parameters[pname].annotation
                if (_is_constexpr_annotation(ann) or (index == 0 and pname in ("self", "cls")) or value is None
                        or isinstance(value, type) or (callable(value) and not hasattr(value, "__extract_mlir_values__")
                                                       and not isinstance(value, Numeric))):
                    call[pname] = value
                elif isinstance(value, (Numeric, int, float, bool)):
                    n = converted.get(pname)
                    if n is None:
                        n = as_numeric(value)
                    host_values.append(n._n)
                    call[pname] = wrap(tracer.add_argument(type(n).mlir_type))
                else:
                    call[pname] = _kernel_value(tracer, pname, value, host_values)
            if all(isinstance(b, int) for b in block3):
                tracer.set_reqntid(*block3)
            if min_blocks:
                from .. import _core
                _core.sm90_warp.set_minctasm(min_blocks)
            ctx.kernel_depth += 1
            outer_smem, ctx.kernel_smem = getattr(ctx, "kernel_smem", None), _KernelSmemUsage()
            try:
                self._kernel._body()(**call)
                allocated, static_bytes = ctx.kernel_smem.bytes, ctx.kernel_smem.static_bytes
            finally:
                ctx.kernel_depth -= 1
                ctx.kernel_smem = outer_smem
        finally:
            tracer.end_function([])
        smem = _launch_smem(smem, allocated, name, static_bytes)
        smem_n = as_numeric(0 if smem is None else smem)._n
        stream_n = as_numeric(0 if stream is None else stream)._n
        tracer.launch(name, [as_numeric(g)._n for g in grid3], [as_numeric(b)._n for b in block3], smem_n, stream_n,
                      [] if cluster is None else [as_numeric(c)._n for c in cluster], host_values, flags, events,
                      event_attrs)


# Launch op flags (ir.h LaunchFlags).
_LAUNCH_COOPERATIVE, _LAUNCH_PDL, _LAUNCH_COMPLETION_EVENT, _LAUNCH_PROGRAMMATIC_EVENT = 2, 4, 8, 16


def _compile_time_int(value, what):
    if isinstance(value, Numeric):
        if not value.is_static():
            raise DSLUserCodeError(f"launch: {what} must be known at compile time", code="LAUNCH_INVALID_ATTRIBUTE")
        value = value.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise DSLUserCodeError(f"launch: {what} must be an int, got {type(value).__name__}",
                               code="LAUNCH_INVALID_ATTRIBUTE")
    return value


def _event_handle(event, what):
    """The traced Int64 handle of a cudaEvent_t / CUevent jit argument."""
    n = event if isinstance(event, Numeric) else None
    if n is None or type(n).__name__ not in ("Int64", "Uint64"):
        raise DSLUserCodeError(f"launch: {what} must be a cudaEvent_t or CUevent argument of the jit function, got "
                               f"{type(event).__name__}", code="LAUNCH_INVALID_ATTRIBUTE")
    return n._n


def _launch_attributes(cooperative, use_pdl, completion_event, completion_flags, programmatic_event,
                       programmatic_flags, trigger_at_block_start):
    """(flags, event handles, event attributes) of a launch: cooperative and PDL are compile-time
    switches; each event is a runtime handle with compile-time flags."""
    flags = 0
    for value, bit, what in ((cooperative, _LAUNCH_COOPERATIVE, "cooperative"), (use_pdl, _LAUNCH_PDL, "use_pdl")):
        if isinstance(value, Numeric) and not value.is_static():
            raise DSLUserCodeError(f"launch: {what} must be known at compile time", code="LAUNCH_INVALID_ATTRIBUTE")
        if bool(value.value if isinstance(value, Numeric) else value):
            flags |= bit
    events, attrs = [], [0, 0, 0]
    if completion_event is not None:
        flags |= _LAUNCH_COMPLETION_EVENT
        events.append(_event_handle(completion_event, "launch_completion_event"))
        attrs[0] = _compile_time_int(completion_flags, "launch_completion_event_flags")
    if programmatic_event is not None:
        flags |= _LAUNCH_PROGRAMMATIC_EVENT
        events.append(_event_handle(programmatic_event, "programmatic_event"))
        attrs[1] = _compile_time_int(programmatic_flags, "programmatic_event_flags")
        trigger = _compile_time_int(trigger_at_block_start, "programmatic_event_trigger_at_block_start")
        if trigger not in (0, 1):
            raise DSLUserCodeError(f"launch: programmatic_event_trigger_at_block_start must be 0 or 1, got {trigger}",
                                   code="LAUNCH_INVALID_ATTRIBUTE")
        attrs[2] = trigger
    return flags, events, attrs


def jit(fn=None, *, preprocess=True, is_experimental=False):
    if fn is None:
        return lambda f: JitFunction(f, preprocess=preprocess)
    return JitFunction(fn, preprocess=preprocess)


def kernel(fn=None, *, preprocess=True, is_experimental=False, attributes=None):
    if fn is None:
        return lambda f: KernelFunction(f, preprocess=preprocess)
    return KernelFunction(fn, preprocess=preprocess)


class _Compile:
    def __init__(self, opts=()):
        self._opts = tuple(opts)

    def __getitem__(self, opts):
        if not isinstance(opts, tuple):
            opts = (opts,)
        flat = []
        for o in opts:
            flat.extend(o if isinstance(o, (tuple, list)) else (o,))
        options = CompileOptions()
        for o in flat:
            options.apply(o)  # validates eagerly
        return _Compile(self._opts + tuple(flat))

    def __call__(self, fn, *args, options=None, **kwargs):
        opts = CompileOptions()
        for o in self._opts:
            opts.apply(o)
        opts.parse(options)
        if _env_flag("CUTE_DSL_ENABLE_TVM_FFI"):
            opts.apply(EnableTVMFFI(True))
        if opts["enable_tvm_ffi"]:
            from .tvm_ffi import import_tvm_ffi
            import_tvm_ffi()  # before tracing: a missing package is a clear error
        if isinstance(fn, functools.partial) and isinstance(getattr(fn.func, "__self__", None), JitFunction):
            jf, args = fn.func.__self__, fn.args + args
        elif isinstance(fn, JitFunction):
            jf = fn
        elif isinstance(getattr(fn, "__cute_jit_function__", None), JitFunction):  # testing.autotune_jit
            jf = fn.__cute_jit_function__
        elif isinstance(_class_attribute(type(fn), "__call__"), JitFunction):  # own or inherited (quack's GEMMs)
            jf, args = _class_attribute(type(fn), "__call__"), (fn,) + args
        elif isinstance(fn, KernelFunction):
            raise DSLUserCodeError("cute.compile takes a @cute.jit function; a @cute.kernel must be launched from one",
                                   code="CALL_MISSING_JIT_DECORATOR")
        elif callable(fn):
            raise DSLUserCodeError(f"{getattr(fn, '__name__', fn)!r} is not decorated with @cute.jit",
                                   code="CALL_MISSING_JIT_DECORATOR")
        else:
            raise DSLUserCodeError(f"{fn!r} is not callable", code="CALL_NOT_CALLABLE")
        compiled, _ = jf._trace_and_compile(args, kwargs, opts, use_cache=False, use_disk_cache=True)
        return compiled


compile = _Compile()


def _class_attribute(cls, name):
    """`name` as the class defines it or inherits it, without binding (None when absent)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


_trace_key.attach_front_end(sys.modules[__name__])  # the classification a trace key mirrors
