"""`cutlass_call`: a `@cute.jit` launcher as an XLA FFI custom call inside `jax.jit`.

When JAX traces the call, the launcher is traced with fake tensors standing for the JAX arrays
(dynamic layouts by default, static with `use_static_tensors` / `TensorSpec(static=True)`) and
compiled; the compiled function is registered with OpenCuTe's C++ FFI handler
(`cpp/src/bindings/xla_ffi_call.cpp`) and the call becomes `jax.ffi.ffi_call` of one target,
naming the compiled function by attributes (and carrying it, as export_to_c's blob, for a
serialized jax.export run in another process). XLA calls the handler with the buffers and its
stream; no Python runs per call. Compilations are cached per shape signature.
"""
import threading

from .. import _core
from .._dsl.errors import DSLUserCodeError
from .._dsl.jit import JitFunction, compile as cute_compile
from ..cute.runtime import make_fake_stream, make_fake_tensor, sym_int
from .errors import import_jax
from .spec import TensorSpec
from .dtypes import jax_to_cutlass_dtype

CUSTOM_CALL_TARGET = "opencute_cutlass_call"

# The custom call's attributes (read by the C++ handler): the registered call and this
# process's token; and, for a computation deserialized in another process (jax.export), the
# compiled function as export_to_c's blob in base64 and its buffers, to rebuild it from there.
_CALL_ATTR = "opencute_call"
_PROCESS_ATTR = "opencute_process"
_PROGRAM_ATTR = "opencute_program"
_BUFFERS_ATTR = "opencute_buffers"

# Bytes the compiled code may assume of every buffer's address: XLA aligns the buffers it hands
# a custom call to at least this much; the handler checks it on every call.
BUFFER_ALIGNMENT = 16

_lock = threading.Lock()
_registered_platforms = set()
_cache = {}  # compile signature -> attributes of the registered call


def _register_targets(jax):
    """Registers the FFI handler for the CPU and CUDA platforms (once each)."""
    with _lock:
        for platform, handler in (("cpu", "cpu"), ("CUDA", "gpu")):
            if platform in _registered_platforms:
                continue
            try:
                jax.ffi.register_ffi_target(CUSTOM_CALL_TARGET, _core.xla_ffi_handler(handler), platform=platform,
                                            api_version=1)
            except Exception:  # a JAX without that platform: its computations never reach us
                if platform == "cpu":
                    raise
                continue
            _registered_platforms.add(platform)


def get_export_disabled_safety_checks():
    """What `jax.export.export(..., disabled_checks=...)` needs for functions holding a
    `cutlass_call`: its custom-call target is not on JAX's list of stable targets."""
    jax = import_jax()
    return [jax.export.DisabledSafetyCheck.custom_call(CUSTOM_CALL_TARGET)]


def _error(message, code="JAX_CALL_INVALID"):
    return DSLUserCodeError(message, code=code)


def _flatten_specs(jax, spec, count, what):
    """One TensorSpec (or None) per array: a single spec applies to all of them."""
    if spec is None or isinstance(spec, TensorSpec):
        return [spec] * count
    leaves = jax.tree.leaves(spec, is_leaf=lambda s: s is None or isinstance(s, TensorSpec))
    if len(leaves) != count:
        raise _error(f"{what} has {len(leaves)} entries but the call has {count} arrays")
    for s in leaves:
        if s is not None and not isinstance(s, TensorSpec):
            raise _error(f"{what} entries must be TensorSpec or None, got {s!r}")
    return leaves


def _is_concrete(dim):
    """An int extent (not one of jax.export's symbolic dimensions)."""
    try:
        int(dim)
        return True
    except Exception:
        return False


class _ArrayDesc:
    """What one array of the call is for the kernel: shape, dtype and how it is presented."""

    def __init__(self, label, is_result, index, shape, dtype, spec, static_default):
        self.label = label
        self.is_result = is_result
        self.index = index
        self.shape = tuple(shape)
        self.dtype = dtype
        rank = len(self.shape)
        spec = spec or TensorSpec()
        self.mode = spec.mode if spec.mode is not None else tuple(range(rank))
        if len(self.mode) != rank:
            raise _error(f"{label}: TensorSpec mode {self.mode} does not match the array's rank {rank}")
        self.static = static_default if spec.static is None else spec.static
        div = spec.divisibility
        if div is None:
            div = (1,) * rank
        elif isinstance(div, int):
            div = (div,) * rank
        elif len(div) != rank:
            raise _error(f"{label}: TensorSpec divisibility {div} does not match the array's rank {rank}")
        self.divisibility = tuple(div)
        if self.static:
            bad = [d for d in self.shape if not _is_concrete(d)]
            if bad:
                raise _error(f"{label}: a static tensor needs concrete extents, but its shape {self.shape} is "
                             "symbolic; leave it dynamic (use_static_tensors=False / TensorSpec(static=False))")
            self.shape = tuple(int(d) for d in self.shape)
            for i, m in enumerate(self.mode):
                if self.shape[m] % self.divisibility[i]:
                    raise _error(f"{label}: extent {self.shape[m]} of kernel mode {i} is not divisible by "
                                 f"{self.divisibility[i]} (TensorSpec divisibility)")

    def key(self):
        shape = self.shape if self.static else len(self.shape)
        return (self.is_result, self.index, tuple(str(d) for d in shape) if self.static else shape, str(self.dtype),
                self.mode, self.static, self.divisibility)

    def fake_tensor(self):
        element = jax_to_cutlass_dtype(self.dtype)
        rank = len(self.shape)
        if self.static:
            strides, running = [0] * rank, 1
            for d in reversed(range(rank)):
                strides[d] = running
                running *= self.shape[d]
            shape = [self.shape[m] for m in self.mode]
            stride = [strides[m] for m in self.mode]
        else:
            # The divisibility of each array dimension, from the kernel modes that read it.
            dim_div = [1] * rank
            for i, m in enumerate(self.mode):
                dim_div[m] = self.divisibility[i]
            strides, running = [None] * rank, 1
            for d in reversed(range(rank)):
                strides[d] = 1 if d == rank - 1 else sym_int(64, divisibility=running)
                running *= dim_div[d]
            shape = [sym_int(32, divisibility=self.divisibility[i]) for i in range(rank)]
            stride = [strides[m] for m in self.mode]
        return make_fake_tensor(element, shape, stride, assumed_align=BUFFER_ALIGNMENT)


def _target_option(jax):
    """Kernels of a CPU computation run on OpenCuTe's CPU emulator; others on the GPU. The
    platform is the default device's (jax.default_device) or else the default backend's."""
    device = jax.config.jax_default_device
    platform = device if isinstance(device, str) else getattr(device, "platform", None)
    return "--target cpu" if (platform or jax.default_backend()) == "cpu" else None


def _compile(fn, kwargs, in_tree, num_inputs, descs, options, name):
    jax = import_jax()

    def entry(stream, tensors):
        inputs = jax.tree.unflatten(in_tree, list(tensors[:num_inputs]))
        fn(stream, *inputs, *tensors[num_inputs:], **kwargs)

    entry.__name__ = entry.__qualname__ = name
    jit_entry = JitFunction(entry, preprocess=False)
    compiled = cute_compile(jit_entry, make_fake_stream(), [d.fake_tensor() for d in descs], options=options)
    buffers = [(d.is_result, d.index, list(d.mode), d.label) for d in descs]
    return compiled, buffers


def _register(compiled, name, buffers, num_args, num_rets):
    """Registers a compiled function with the C++ handler; returns the custom call's attributes."""
    import base64
    import numpy as np
    index = _core.xla_ffi_register_call(compiled, name, 0, buffers, num_args, num_rets)
    blob = compiled._export_blob(name)
    described = "|".join(f"{int(r)}:{i}:{'.'.join(str(m) for m in mode)}:{label}" for r, i, mode, label in buffers)
    return {_CALL_ATTR: np.int64(index), _PROCESS_ATTR: np.int64(_core.xla_ffi_process_token()),
            _PROGRAM_ATTR: base64.b64encode(blob).decode("ascii"), _BUFFERS_ATTR: described}


def cutlass_call(fn, *, output_shape_dtype, input_spec=None, output_spec=None, input_output_aliases=None,
                 use_static_tensors=False, compile_options=None, **kwargs):
    """Wraps `fn(stream, *inputs, *outputs, **kwargs)` (a `@cute.jit` function, or a callable
    calling one) as a JAX operation; returns `call(*inputs)`, which gives the outputs.

    output_shape_dtype: a `jax.ShapeDtypeStruct` (or anything with shape and dtype, or a pytree
        of them) per output. A single one gives a single array, a tuple gives a tuple.
    input_spec / output_spec: a TensorSpec (or None) per input / output array, or one for all.
    input_output_aliases: {input index: output index}: the output is written in place into the
        input's buffer (donate the input to reuse it); aliased outputs are not passed to `fn`.
    use_static_tensors: compile every tensor's shape and strides as constants (by default they
        are dynamic: one compilation serves every shape of the same rank).
    compile_options: `cute.compile` options (e.g. "--generate-line-info").
    kwargs: compile-time values passed to `fn` by keyword (hashable values share compilations).
    """
    jax = import_jax()
    _register_targets(jax)
    out_leaves, out_tree = jax.tree.flatten(output_shape_dtype, is_leaf=lambda o: hasattr(o, "shape") and
                                            hasattr(o, "dtype"))
    for o in out_leaves:
        if not (hasattr(o, "shape") and hasattr(o, "dtype")):
            raise _error(f"output_shape_dtype entries need a shape and a dtype, got {o!r}")
    aliases = dict(input_output_aliases or {})
    if len(set(aliases.values())) != len(aliases):
        raise _error(f"input_output_aliases {aliases} maps two inputs to one output")
    name = getattr(fn, "__name__", "cutlass_call")
    if name == "<lambda>":
        name = "cutlass_call_lambda"

    def call(*args):
        in_leaves, in_tree = jax.tree.flatten(args)
        for i, a in enumerate(in_leaves):
            if not (hasattr(a, "shape") and hasattr(a, "dtype")):
                raise _error(f"cutlass_call input {i} must be an array, got {type(a).__name__}")
        n_in, n_out = len(in_leaves), len(out_leaves)
        for i, j in aliases.items():
            if not (0 <= i < n_in and 0 <= j < n_out):
                raise _error(f"input_output_aliases {{{i}: {j}}} is out of range ({n_in} inputs, {n_out} outputs)")
            a, o = in_leaves[i], out_leaves[j]
            if tuple(a.shape) != tuple(o.shape) or jax.numpy.dtype(a.dtype) != jax.numpy.dtype(o.dtype):
                raise _error(f"input_output_aliases {{{i}: {j}}}: input {a.shape} {a.dtype} and output "
                             f"{o.shape} {o.dtype} differ")
        in_specs = _flatten_specs(jax, input_spec, n_in, "input_spec")
        out_specs = _flatten_specs(jax, output_spec, n_out, "output_spec")
        descs = [_ArrayDesc(f"input {i}", False, i, a.shape, a.dtype, in_specs[i], use_static_tensors)
                 for i, a in enumerate(in_leaves)]
        descs += [_ArrayDesc(f"output {j}", True, j, o.shape, o.dtype, out_specs[j], use_static_tensors)
                  for j, o in enumerate(out_leaves) if j not in aliases.values()]
        options = compile_options
        target = _target_option(jax)
        if target:
            options = f"{options} {target}" if options else target
        key = (fn, in_tree, tuple(d.key() for d in descs), tuple(sorted(aliases.items())), options,
               tuple(sorted(kwargs.items())))
        try:
            attrs = _cache.get(key)  # the custom call's attributes
        except TypeError:  # an unhashable keyword value: compile for this trace only
            key, attrs = None, None
        if attrs is None:
            compiled, buffers = _compile(fn, kwargs, in_tree, n_in, descs, options, name)
            attrs = _register(compiled, name, buffers, n_in, n_out)
            if key is not None:
                _cache[key] = attrs
        result_types = [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in out_leaves]
        outs = jax.ffi.ffi_call(CUSTOM_CALL_TARGET, result_types, input_output_aliases=aliases or None)(
            *in_leaves, **attrs)
        return jax.tree.unflatten(out_tree, list(outs))

    return call
