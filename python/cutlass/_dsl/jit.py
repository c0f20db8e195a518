"""@jit and @kernel: tracing, compilation, caching and launch (arguments are classified in
argument_plan.py)."""
import atexit
import contextlib
import copy
import dataclasses
import functools
import threading

from .. import _core
from . import context, tvm_ffi
from . import direct_call as _direct_call
from . import trace_key as _trace_key
from .argument_plan import _ArgPlan, _classify, _traced_tensor  # noqa: F401 - _traced_tensor kept here
from .decorated_function import (  # noqa: F401 - Constexpr and the predicates keep their old home too
    Constexpr, ConstexprMeta, _DecoratedFunction, _is_constexpr_annotation, _is_stream)
from .errors import DSLUserCodeError, DSLUserCodeRuntimeError, DSLRuntimeError
from .extracted_values import rebuild_parts
from .generate import if_generate
from .jit_arg_adapter import adapt as adapt_jit_arg
from .numeric import Boolean, Int64, Numeric, NumericMeta, _wrap_int, annotated_class, as_numeric, wrap
from .options import (  # noqa: F401 - _arch_for_compile keeps its old home
    ENV_ASSERTIONS, ENV_LINE_INFO, VERSION, CompileOptions, EnableTVMFFI, _arch_for_compile, resolve_target)
from .source_lines import track_source_lines

# The toolchain's loading thread (preload_toolchain) must be done before the process tears down.
atexit.register(_core.wait_for_toolchain_preload)

_env_flag = _core.env_flag


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
        tracer.set_assertions_enabled(bool(options["enable_assertions"]) or _env_flag(ENV_ASSERTIONS))
        plan = _ArgPlan(tracer)
        line_info = bool(options["generate_line_info"]) or _env_flag(ENV_LINE_INFO)
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
    value = adapt_jit_arg(value)
    if isinstance(value, (bool, int, float, str, _core.layout.Swizzle)) or value is None:
        return value
    if isinstance(value, _core.layout.ComposedLayout):  # swizzled smem layouts are static (checked when used)
        return value
    if isinstance(value, Numeric):
        if value.is_static():
            return value
        host_values.append(value._n)
        return _wrap_int(tracer.add_argument(type(value).mlir_type), getattr(value, "_div", 1))
    if isinstance(value, (tuple, list)):
        items = [_kernel_value(tracer, pname, v, host_values) for v in value]
        return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)
    if isinstance(value, _core.layout.Layout):
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
        # launch(smem_merge_branch_allocs=True): the two paths of a dynamic `if` (only one runs)
        # allocate from the same offset, and the kernel needs the larger of the two.
        self.merge_branch_allocs = False


def _launch_smem(smem, allocated, kernel_name, static_bytes=0):
    """The launch's dynamic shared-memory bytes: what the kernel allocated when `smem` is None."""
    if smem is None:
        return allocated
    if isinstance(smem, int) and not isinstance(smem, bool):
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
        # use_pdl may be a run-time Boolean (a jit argument): the kernel is traced once and
        # launched from an if on it, with and without programmatic stream serialization.
        pdl_at_run_time = isinstance(use_pdl, Numeric) and not use_pdl.is_static()
        flags, events, event_attrs = _launch_attributes(
            cooperative, False if pdl_at_run_time else use_pdl, launch_completion_event, launch_completion_event_flags, programmatic_event,
            programmatic_event_flags, programmatic_event_trigger_at_block_start)
        ctx = context.current()
        tracer = ctx.tracer
        grid3, block3 = _dims(grid, "grid"), _dims(block, "block")
        fallback_cluster = other.pop("fallback_cluster", None)
        if fallback_cluster is not None:
            # `cluster` is the preferred shape, a hint the driver may decline for the fallback one;
            # OpenCuTe does not pass the hint yet, so every cluster has the fallback shape (the
            # kernel's branch for fallback clusters runs, as it may on a GPU).
            if cluster is None:
                raise DSLUserCodeError("launch: fallback_cluster needs cluster= (the preferred cluster shape)",
                                       code="LAUNCH_INVALID_CLUSTER")
            cluster = fallback_cluster
        merge_branch_allocs = other.pop("smem_merge_branch_allocs", False)
        if cluster is not None:
            cluster = list(cluster)
            if len(cluster) != 3:
                raise DSLUserCodeError(f"cluster must have exactly 3 dimensions, got {len(cluster)}",
                                       code="LAUNCH_INVALID_CLUSTER")
            cluster = _dims(cluster, "cluster")
            _check_cluster(cluster, grid3)
        max_threads = other.pop("max_number_threads", None)
        if max_threads is not None:
            # A hint (the kernel's largest block); OpenCuTe states the exact block shape instead
            # when it is static, so the hint is only checked.
            max3 = _dims(max_threads, "max_number_threads")
            if all(isinstance(v, int) for v in (*max3, *block3)) and \
                    max3[0] * max3[1] * max3[2] < block3[0] * block3[1] * block3[2]:
                raise DSLUserCodeError(f"launch: max_number_threads={list(max3)} is smaller than the block "
                                       f"{list(block3)}", code="LAUNCH_INVALID_ATTRIBUTE")
        min_blocks = _compile_time_int(other.pop("min_blocks_per_mp", 0) or 0, "min_blocks_per_mp")
        if other:
            raise DSLUserCodeError(
                f"launch: unknown argument(s) {', '.join(sorted(other))}; launch takes grid, block, cluster, smem, "
                "stream, min_blocks_per_mp, max_number_threads, fallback_cluster, smem_merge_branch_allocs, "
                "cooperative, use_pdl and the launch-event arguments", code="LAUNCH_INVALID_ATTRIBUTE")
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
                _core.sm90_warp.set_minctasm(min_blocks)
            ctx.kernel_depth += 1
            outer_smem, ctx.kernel_smem = getattr(ctx, "kernel_smem", None), _KernelSmemUsage()
            ctx.kernel_smem.merge_branch_allocs = bool(merge_branch_allocs)
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
        def launch_with(launch_flags):
            tracer.launch(name, [as_numeric(g)._n for g in grid3], [as_numeric(b)._n for b in block3], smem_n,
                          stream_n, [] if cluster is None else [as_numeric(c)._n for c in cluster], host_values,
                          launch_flags, events, event_attrs)

        if pdl_at_run_time:
            if_generate(Boolean(use_pdl), lambda: launch_with(flags | _LAUNCH_PDL), lambda: launch_with(flags))
        else:
            launch_with(flags)


# Launch op flags (ir.h LaunchFlags).
_LAUNCH_COOPERATIVE, _LAUNCH_PDL, _LAUNCH_COMPLETION_EVENT, _LAUNCH_PROGRAMMATIC_EVENT = (
    int(_core.LaunchFlags.Cooperative), int(_core.LaunchFlags.Pdl), int(_core.LaunchFlags.CompletionEvent),
    int(_core.LaunchFlags.ProgrammaticEvent))


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
    """(flags, event handles, event attributes) of a launch: cooperative is a compile-time switch
    (PDL too here: the caller resolves a run-time use_pdl first); each event is a runtime handle
    with compile-time flags."""
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
            tvm_ffi.import_tvm_ffi()  # before tracing: a missing package is a clear error
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

