"""The trace in progress: the C++ tracer plus what the front end needs to know about it."""
import threading

from .errors import DSLUserCodeError

_state = threading.local()


def current():
    """The active trace, or None outside @jit tracing."""
    return getattr(_state, "trace", None)


class Trace:
    def __init__(self, tracer):
        self.tracer = tracer
        self.kernel_depth = 0

    def __enter__(self):
        self.previous = current()
        _state.trace = self
        self.tracer.activate()
        return self

    def __exit__(self, *exc):
        self.tracer.deactivate()
        _state.trace = self.previous
        return False

    @property
    def arch(self):
        """The architecture the traced program is compiled for ("" until set). The C++ tracer
        keeps it: arch-specific atoms and ops check it there, and shared-memory capacity here."""
        return self.tracer.target_arch

    @arch.setter
    def arch(self, name):
        self.tracer.set_target_arch(name)


def tracer():
    t = current()
    if t is None:
        raise DSLUserCodeError("this operation is only available while a @cute.jit function is traced",
                               code="PHASE_OUTSIDE_JIT")
    return t.tracer
