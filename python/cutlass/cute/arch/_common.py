"""Helpers the `cute.arch` modules share: the IR value of a DSL pointer, memory-order names, and
the user's source line that the emulator names in its reports."""
import sys

from ..._dsl.errors import user_location
from ..._dsl.numeric import as_numeric, num_of
from ..._dsl.source_lines import _is_user_code


def _pointer_value(ptr):
    """The IR pointer value of a DSL pointer: a raw pointer value (`tensor.iterator`, the result of
    get_dyn_smem / alloc_smem) or a pointer object carrying one."""
    if hasattr(ptr, "__extract_mlir_values__") and not hasattr(ptr, "_n"):
        values = ptr.__extract_mlir_values__()
        if len(values) == 1:
            return values[0]
    return num_of(ptr)


def _memory_name(v):
    """sem / scope given as a string or an enum member (by its name)."""
    if v is None:
        return ""
    return (v if isinstance(v, str) else getattr(v, "name", str(v))).lower()


def _where():
    """(file, line) of the user's call, for the emulator's deadlock reports."""
    file, line = user_location()
    return (file or "", int(line or 0))


def _peer_rank(rank):
    return None if rank is None else num_of(as_numeric(rank))


def _user_line():
    """(file, line) of the innermost caller outside the cutlass package: the emulator names it
    when a wait never completes."""
    f = sys._getframe(2)
    while f is not None and not _is_user_code(f.f_code.co_filename):
        f = f.f_back
    return ("", 0) if f is None else (f.f_code.co_filename, f.f_lineno)
