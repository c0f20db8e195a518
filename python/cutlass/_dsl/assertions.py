"""Runtime assertions: `cute.testing.assert_(cond, msg)` and Python's `assert` on a dynamic
condition inside jit code (the preprocessor rewrites `assert` into `check_assert`).

A dynamic condition becomes an Assert op of the IR (built in C++), kept only when the compilation
enables assertions (EnableAssertions, --enable-assertions or CUTE_DSL_ENABLE_ASSERTIONS); without,
nothing is emitted, as with C's NDEBUG. A failing assertion stops the kernel: on the GPU through
CUDA's __assertfail, on the CPU emulator and in host code with a DSLRuntimeError at the user's
file and line."""
import linecache

from . import context
from .errors import user_location
from .numeric import as_numeric, is_dynamic


def _emit(cond, message, filename, line):
    context.tracer().assertion(as_numeric(cond)._n, message, filename or "<unknown>", line or 0)


def assert_(cond, msg=None, *, loc=None, ip=None):
    """Asserts `cond` at run time (device or host code of a jit function)."""
    filename, line = user_location()
    if context.current() is None:  # plain Python: nothing to compile
        if not cond:
            raise AssertionError(msg)
        return
    if msg is None:
        msg = linecache.getline(filename or "", line or 0).strip() or "assertion failed"
    _emit(cond, str(msg), filename, line)


def check_assert(cond, msg_thunk, source, loc):
    """`assert cond, msg` in jit code: a Python assert when `cond` is known while tracing, a
    runtime assertion otherwise (its message is `msg`, or the condition's source text)."""
    if not is_dynamic(cond):
        if __debug__ and not cond:  # `python -O` drops static asserts, as it does Python's own
            raise AssertionError(msg_thunk()) if msg_thunk is not None else AssertionError()
        return
    message = str(msg_thunk()) if msg_thunk is not None else source
    _emit(cond, message, *loc)
