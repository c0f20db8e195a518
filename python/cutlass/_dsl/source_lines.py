"""Source locations for the IR while tracing with line info (--generate-line-info or
CUTE_DSL_LINEINFO=1): each op records the user's file and line, which the NVVM lowering turns
into PTX `.loc` directives for profilers and compute-sanitizer.

A line-event tracer (sys.settrace) is only installed for such traces, so ordinary tracing pays
nothing for it. Frames inside the cutlass package are skipped: an op made by a library helper
carries the line of the user code that called it."""
import os
import sys
import sysconfig
from contextlib import contextmanager

_SKIPPED_DIRS = tuple({os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
                       os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep})


def _is_user_code(filename):
    return not filename.startswith(_SKIPPED_DIRS) and not filename.startswith("<")


@contextmanager
def track_source_lines(tracer):
    def locate(frame):
        try:
            tracer.set_location(frame.f_code.co_filename, frame.f_lineno)
        except RuntimeError:
            pass  # between functions: nothing to attach a location to

    def local(frame, event, arg):
        if event == "line":
            locate(frame)
        elif event == "return":
            caller = frame.f_back
            if caller is not None and _is_user_code(caller.f_code.co_filename):
                locate(caller)
        return local

    def on_call(frame, event, arg):
        if _is_user_code(frame.f_code.co_filename):
            locate(frame)
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        yield
    finally:
        sys.settrace(previous)
