"""`cutlass._mlir.dialects.llvm`: `inline_asm`, user PTX as one opaque IR op.

On the GPU it lowers to LLVM inline assembly with the user's constraint string (a Boolean operand
or result bound to an "r" register travels as a 32-bit 0/1). The CPU emulator cannot run PTX: a
kernel using it raises DSLRuntimeError naming the line that called inline_asm."""
import enum

from ... import _core
from ..._dsl import context
from ..._dsl.errors import DSLUserCodeError, user_location
from ..._dsl.carry import extract_mlir_values, new_from_mlir_values
from ..._dsl import c_struct as _c_struct
from ..._dsl.c_struct import PointerType, StructType, _leaf_count, flatten_type, rebuild_value  # noqa: F401
from ..._dsl.numeric import Numeric, wrap
from ..ir import Value, as_type


class AsmDialect(enum.IntEnum):
    AD_ATT = 0
    AD_Intel = 1


def _operand(x):
    if isinstance(x, Numeric):
        return x._n
    if isinstance(x, _core.cute._Pointer):
        # `ptr.llvm_ptr` as an asm operand ("l"): its 64-bit address (FA4's cp.reduce.async.bulk)
        return _operand(x.toint())
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


# ---- C structures as values (ffi/jit_argument.py) ------------------------------------------------
# A jit argument may describe itself (__get_mlir_types__) as an LLVM struct read from the C memory
# its __c_pointers__ entry points at. OpenCuTe has no aggregate IR type: a struct is laid out as C
# does (natural alignment), its scalar leaves become separate values, and extractvalue picks them
# out while tracing. The types and their C layout are the front end's (cutlass._dsl.c_struct), which
# argument binding uses.

class StructValue(Value):
    """A struct value while tracing: its type and its leaf values (DSL numbers)."""

    def __init__(self, struct_type, leaves):
        super().__init__(None)
        self.type = struct_type
        self.leaves = list(leaves)

    def __extract_mlir_values__(self):
        return extract_mlir_values(tuple(self.leaves))

    def __new_from_mlir_values__(self, values):
        return StructValue(self.type, new_from_mlir_values(tuple(self.leaves), values))


_c_struct.set_struct_value_class(StructValue)


def _struct_of(container):
    while isinstance(container, Value) and not isinstance(container, StructValue):
        container = container._v
    if not isinstance(container, StructValue):
        raise DSLUserCodeError(f"llvm.extractvalue needs a struct value, got {type(container).__name__}",
                               code="TYPE_MISMATCH")
    return container


def extractvalue(res, container, position, *, loc=None, ip=None):
    """Field `position` (a list of indices, outermost first) of a struct value."""
    s = _struct_of(container)
    t, leaves = s.type, s.leaves
    for index in position:
        if not isinstance(t, StructType) or not 0 <= index < len(t.fields):
            raise DSLUserCodeError(f"llvm.extractvalue: no field {index} in {t!r}", code="VALUE_INVALID")
        start = sum(_leaf_count(f) for f in t.fields[:index])
        t = t.fields[index]
        leaves = leaves[start:start + _leaf_count(t)]
    if res is not None and not isinstance(res, (StructType, PointerType)) and not isinstance(t, (StructType,
                                                                                                PointerType)):
        if res != t:
            raise DSLUserCodeError(f"llvm.extractvalue: the field is {t!r}, not {res!r}", code="TYPE_MISMATCH")
    return rebuild_value(t, leaves)


# ---- grouped_gemm.py (gg): address-space casts of pointers -----------------------------------------

def addrspacecast(res, arg, *, loc=None, ip=None):
    """`arg` (a pointer value: `Pointer.llvm_ptr`, or a traced pointer) as a pointer into the
    address space of the PointerType `res` (generic <-> one specific space). Returns the IR value."""
    if not isinstance(res, PointerType):
        raise DSLUserCodeError(f"llvm.addrspacecast: the result type must be an llvm.PointerType, got {res!r}", code="TYPE_MISMATCH")
    if isinstance(arg, _core.cute._Pointer):
        arg = arg._value
    return _core.sm90_tensormap.address_space_cast(arg, res.address_space)
