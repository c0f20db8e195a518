"""Exception classes of the CuTe DSL, rendered with the user's file and line.

The message format follows the CuTe DSL: a headline ``error[CODE]: message`` and a
source frame ``--> file:line`` pointing at the first stack frame outside this package.
"""
import linecache
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_internal(filename):
    return os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)


def user_location(skip_internal=True):
    """(filename, lineno) of the innermost stack frame that belongs to user code."""
    frame = sys._getframe(1)
    while frame is not None:
        fname = frame.f_code.co_filename
        if not (skip_internal and _is_internal(fname)) and not fname.startswith("<"):
            return fname, frame.f_lineno
        frame = frame.f_back
    return None, None


class DSLBaseError(Exception):
    def __init__(self, message, line=None, snippet=None, filename=None, error_code=None,
                 context=None, suggestion=None, cause=None):
        self.message = message
        self.line = line
        self.filename = filename
        self.snippet = snippet
        self.error_code = error_code
        self.context = context
        self.suggestion = suggestion
        self.cause = cause
        super().__init__(self._render())

    @property
    def code(self):
        return self.error_code

    @property
    def lineno(self):
        return self.line

    def _render(self, leading_blank_line=True):
        head = f"error[{self.error_code}]: " if self.error_code else "error: "
        text = ("\n" if leading_blank_line else "") + head + str(self.message)
        if self.filename:
            text += f"\n  --> {self.filename}:{self.line}"
            src = linecache.getline(self.filename, self.line or 0).rstrip()
            if src:
                text += f"\n   |\n{self.line:>3} | {src}\n   |"
        if self.suggestion:
            text += f"\n  suggestion: {self.suggestion}"
        return text


class DSLRuntimeError(DSLBaseError):
    pass


def runtime_error_from_core(message, line=None, filename=None):
    """A running program's error (the CPU emulator's, the host interpreter's, a failed device
    assertion) as DSLRuntimeError. Its text starts with the error line itself: these messages are
    read in logs and test output as much as in tracebacks."""
    err = DSLRuntimeError(message, line=line, filename=filename)
    err.args = (err._render(leading_blank_line=False),)
    return err


class DSLUserCodeError(DSLRuntimeError):
    """A mistake in user code. Subclass of DSLRuntimeError so either name catches it."""

    def __init__(self, message, filename=None, lineno=None, code=None, suggestion=None, **kw):
        if filename is None:
            filename, lineno = user_location()
        super().__init__(message, line=lineno, filename=filename, error_code=code,
                         suggestion=suggestion, **kw)


class DSLUserCodeRuntimeError(DSLUserCodeError, RuntimeError):
    pass


class DSLUserCodeTypeError(DSLUserCodeError, TypeError):
    pass


class DSLUserCodeValueError(DSLUserCodeError, ValueError):
    pass


# A compiled function's argument that has the right type but the wrong layout, memory or
# alignment is a ValueError, as in the CuTe DSL's TVM-FFI calls.
_ARGUMENT_VALUE_CODES = ("ARG_LAYOUT_MISMATCH", "ARG_DEVICE_MISMATCH", "ARG_ALIGNMENT_MISMATCH")


def from_core(message, code=None):
    """The error for a C++ UserError: its code's family picks the Python base class too
    (TYPE_* errors are TypeErrors, VALUE_*/SHAPE_* ones ValueErrors)."""
    code = code or ""
    if code.startswith("TYPE_"):
        cls = DSLUserCodeTypeError
    elif code.startswith(("VALUE_", "SHAPE_")) or code in _ARGUMENT_VALUE_CODES:
        cls = DSLUserCodeValueError
    else:
        cls = DSLUserCodeError
    return cls(message, code=code)


class DSLNotImplemented(DSLBaseError):
    pass


class DSLCudaRuntimeError(DSLBaseError, RuntimeError):
    """A failed CUDA call. `error_code` is the `cuda.bindings.runtime.cudaError_t` member when
    cuda-python is installed (else the integer): a driver CUresult and the runtime error of the
    same failure share their number for the errors a launch reports (e.g. 720,
    cudaErrorCooperativeLaunchTooLarge)."""


def _cuda_error_code(code):
    try:
        from cuda.bindings import runtime
        return runtime.cudaError_t(code)
    except Exception:  # no cuda-python, or a number the runtime enum lacks
        return code


def cuda_error_from_core(message, code):
    """The error for a C++ CudaError (registered with _core at import)."""
    filename, lineno = user_location()
    return DSLCudaRuntimeError(message, line=lineno, filename=filename, error_code=_cuda_error_code(code))


class CompilerDiagnosticError(DSLBaseError):
    pass


def user_error(message, code=None, filename=None, lineno=None, cls=DSLUserCodeError, suggestion=None):
    """Build an error located at the given place, or at the innermost user frame."""
    if filename is None:
        filename, lineno = user_location()
    return cls(message, filename=filename, lineno=lineno, code=code, suggestion=suggestion)
