"""What @jit and @kernel functions share, and what the call path asks of any annotation or
argument before it knows which call path takes it: `Constexpr` (a compile-time parameter), CUDA
streams, and the decorated function's lazily preprocessed body."""
import functools
import inspect

from . import rt
from .preprocess import preprocess as _preprocess


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
