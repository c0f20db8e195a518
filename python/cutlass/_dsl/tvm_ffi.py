"""`--enable-tvm-ffi`: a compiled @jit function as a `tvm_ffi.Function`.

The call itself is C++ (`cpp/src/bindings/tvm_ffi_function.cpp`): the class's call slot reads
tensors offering DLPack's C exchange table (torch), scalars, None and tuples of those itself and
calls the safe call directly; other arguments (numpy/JAX arrays, opaque pointers, streams, tvm-ffi
objects) are packed by tvm-ffi. Our safe call checks and runs them either way. This module describes the compiled signature for that callback and
wraps the resulting function object so that keyword arguments and defaults work.
"""
import inspect
import threading

from .. import _core
from .errors import DSLUserCodeError
from .numeric import Numeric

_INSTALL_HINT = "pip install apache-tvm-ffi  (or: pip install opencute[tvm-ffi])"


class TVMFFINotAvailableError(DSLUserCodeError, ImportError):
    """`--enable-tvm-ffi` without the apache-tvm-ffi package."""


def import_tvm_ffi():
    try:
        import tvm_ffi
    except ImportError as e:
        raise TVMFFINotAvailableError(
            f"TVM-FFI was requested (--enable-tvm-ffi, cute.EnableTVMFFI, CUTE_DSL_ENABLE_TVM_FFI or "
            f"enable_tvm_ffi=True) but the apache-tvm-ffi package cannot be imported ({e}); {_INSTALL_HINT}",
            code="CONFIG_TVM_FFI_NOT_INSTALLED") from None
    return tvm_ffi


def available():
    try:
        import tvm_ffi  # noqa: F401
    except ImportError:
        return False
    return True


_factory = None
_function_class = None
_factory_lock = threading.Lock()  # first compiles may run on several threads at once

# Leaf kinds (LeafKind in tvm_ffi_function.cpp) and the arity of a parameter compiled with None.
LEAF_TENSOR, LEAF_SCALAR, LEAF_STREAM, LEAF_POINTER = (
    _core.tvm_ffi_leaf_kinds[name] for name in ("Tensor", "Scalar", "Stream", "Pointer"))
NONE_PARAM_ARITY = _core.tvm_ffi_none_param_arity


def _factory_function():
    """A tvm_ffi.Function that turns a prepared C++ state into a new TVM-FFI function object."""
    global _factory, _function_class
    if _factory is None:
        with _factory_lock:
            if _factory is None:
                tvm_ffi = import_tvm_ffi()
                _core.tvm_ffi_load(tvm_ffi.libinfo.find_libtvm_ffi())
                _function_class = _make_function_class(tvm_ffi)  # before _factory: others read it once that is set
                _factory = tvm_ffi.Function.__from_extern_c__(_core.tvm_ffi_factory_address())
    return _factory


def _make_function_class(tvm_ffi):
    ffi_call = tvm_ffi.Function.__call__

    class TVMFFIJitCompiledFunction(tvm_ffi.Function):
        """A compiled @jit function with the TVM-FFI ABI: a tvm_ffi.Function taking torch/JAX/numpy
        tensors (any DLPack tensor), Python scalars, tuples, pointers and streams; keyword arguments
        and defaults are bound here, positional calls go straight to the C++ callback."""

        def __call__(self, *args, **kwargs):
            # Replaced by a C call slot (tvm_ffi_install_call_slot): positional calls, trailing
            # defaults included, go to the C++ call (or tvm_ffi.Function's); keyword calls bind first.
            if kwargs:
                args = self._bind(args, kwargs)
            return ffi_call(self, *args)

        def _bind(self, args, kwargs):
            names = self._param_names
            if len(args) > len(names):
                return args  # the callback reports the count with the signature
            values = list(args) + [_MISSING] * (len(names) - len(args))
            for key, value in kwargs.items():
                if key not in names:
                    raise TypeError(f"{self.__name__}() got an unexpected keyword argument '{key}'")
                i = names.index(key)
                if values[i] is not _MISSING:
                    raise TypeError(f"{self.__name__}() got multiple values for argument '{key}'")
                values[i] = value
            for i, v in enumerate(values):
                if v is _MISSING:
                    if names[i] not in self._defaults:
                        raise TypeError(f"{self.__name__}() missing required argument '{names[i]}' when calling: "
                                        f"`{self._signature}`")
                    values[i] = self._defaults[names[i]]
            return tuple(values)

        def __getattr__(self, name):
            # __mlir__, __ptx__, timings_ms ... of the compiled program
            if name.startswith("_") and not name.startswith("__"):
                raise AttributeError(name)
            return getattr(self.__dict__["_compiled"], name)

        @property
        def signature(self):
            return self._signature

        def __repr__(self):
            return f"<TVMFFIJitCompiledFunction {self._signature}>"

    _core.tvm_ffi_install_call_slot(TVMFFIJitCompiledFunction)
    return TVMFFIJitCompiledFunction


class _Missing:
    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()


def _python_default(value):
    """A default as the Python value the TVM-FFI call takes."""
    if isinstance(value, Numeric):
        return value.value
    return value


def make_function(compiled, plan, fn, sig):
    """The tvm_ffi.Function for `compiled` (a JitCompiledFunction traced with `plan`)."""
    factory = _factory_function()
    visible = [p for p in plan.params_info if not p["env"]]
    index_of = {p["name"]: i for i, p in enumerate(visible)}
    sources = [None] * plan.num_sources
    for p in plan.params_info:
        for j, leaf in enumerate(p["leaves"]):
            source, kind, type_name = leaf
            param = -1 if p["env"] else index_of[p["name"]]
            item = j if p["arity"] >= 0 else -1
            label = p["name"] if item < 0 else f"{p['name']}[{item}]"
            expected = "Tensor" if kind == LEAF_TENSOR else type_name  # what a type error names
            sources[source] = (label, kind, expected, param, item, bool(p["env"]))
    params = [(p["arity"], p["type"]) for p in visible]
    signature = f"{fn.__name__}(" + ", ".join(f"{p['name']}: {p['type']}" for p in visible) + ")"

    class Description:
        pass

    defaults = {}
    for i, p in enumerate(visible):
        param = sig.parameters.get(p["name"])
        if param is not None and param.default is not inspect.Parameter.empty:
            defaults[p["name"]] = _python_default(param.default)
        elif p["arity"] == NONE_PARAM_ARITY:  # compiled with None: None is all it takes, so it may be left out
            defaults[p["name"]] = None
    d = Description()
    d.signature, d.params, d.sources = signature, params, sources
    d.defaults = [(i, defaults[p["name"]]) for i, p in enumerate(visible) if p["name"] in defaults]
    state = _core.tvm_ffi_function_state(compiled, d)
    base = factory(state)  # the factory owns `state` from here on
    f = _function_class.__new__(_function_class)
    f.__move_handle_from__(base)
    f._compiled = compiled
    # The callback state's address: the call slot reads Python arguments straight into it
    # (tvm_ffi_function.cpp fast_call); without it, calls take tvm-ffi's own conversion.
    f._opencute_state = state
    f._tvm_ffi_description = d  # for exporters: the same callback state via tvm_ffi_function_state
    f._signature = signature
    f._param_names = [p["name"] for p in visible]
    f._num_params = len(visible)
    f._defaults = defaults
    f.__name__ = fn.__name__
    f.function_name = fn.__name__
    return f
