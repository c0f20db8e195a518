"""`cutlass._mlir.dialects.llvm`: `inline_asm`, user PTX as one opaque IR op.

On the GPU it lowers to LLVM inline assembly with the user's constraint string (a Boolean operand
or result bound to an "r" register travels as a 32-bit 0/1). The CPU emulator cannot run PTX: a
kernel using it raises DSLRuntimeError naming the line that called inline_asm."""
import enum

from ... import _core
from ..._dsl import context
from ..._dsl.errors import DSLUserCodeError, user_location
from ..._dsl.numeric import Numeric, wrap
from ..ir import Value, as_type


class AsmDialect(enum.IntEnum):
    AD_ATT = 0
    AD_Intel = 1


def _operand(x):
    if isinstance(x, Numeric):
        return x._n
    if isinstance(x, Value) and x._v is not None:
        return _operand(x._v)
    return x  # a Num (what .ir_value() returns) or a Python scalar


def inline_asm(res, operands_, asm_string, constraints, has_side_effects=False, is_align_stack=False,
               asm_dialect=None, operand_attrs=None, *, loc=None, ip=None):
    """Inline PTX `asm_string` with LLVM constraint string `constraints` ("=r,r,l" ...), `res`
    the result type (None for no result). Returns the result as a DSL number."""
    if asm_dialect not in (None, AsmDialect.AD_ATT, 0):
        raise DSLUserCodeError("llvm.inline_asm: PTX takes the AT&T dialect (AsmDialect.AD_ATT)",
                               code="VALUE_INVALID")
    if operand_attrs:
        raise DSLUserCodeError("llvm.inline_asm: operand_attrs are not supported", code="VALUE_INVALID")
    if "\0" in constraints:
        raise DSLUserCodeError("llvm.inline_asm: the constraint string contains a NUL byte", code="VALUE_INVALID")
    filename, lineno = user_location()
    result = context.tracer().inline_asm(None if res is None else as_type(res), [_operand(o) for o in operands_],
                                         asm_string, constraints, bool(has_side_effects), filename or "",
                                         lineno or 0)
    return None if result is None else wrap(result)
