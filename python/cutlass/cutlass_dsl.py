"""`cutlass.cutlass_dsl`: the names NVIDIA's helper code imports from the DSL core. The value
protocol helpers flatten any DSL value to its IR values and rebuild it (cutlass/_dsl/carry.py);
`T` names IR types as MLIR's type constructors do; if_generate / while_generate / for_generate /
yield_out build structured control flow explicitly (cutlass/_dsl/generate.py)."""
from . import dsl_user_op  # noqa: F401
from ._dsl.carry import extract_mlir_values, new_from_mlir_values  # noqa: F401
from ._dsl.errors import (DSLBaseError, DSLCudaRuntimeError, DSLRuntimeError, DSLUserCodeError,  # noqa: F401
                          DSLNotImplemented)
from ._dsl.generate import for_generate, if_generate, while_generate, yield_out  # noqa: F401
from ._dsl.jit import Constexpr  # noqa: F401
from ._dsl.numeric import (Boolean, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float16,  # noqa: F401
                           BFloat16, Float32, Float64, Float8E4M3FN, Float8E5M2, Float4E2M1FN, Numeric, Integer, Float)
from ._dsl.numeric import Float8E8M0FNU, Float6E2M3FN, Float6E3M2FN  # noqa: F401
from ._dsl.rt import max, min, not_ as _not  # noqa: F401,A004
from ._dsl.numeric import NumericMeta, as_numeric  # noqa: F401
from ._dsl.control import const_expr, dynamic_expr  # noqa: F401
from . import _cuda_jit_executor as cuda_jit_executor  # noqa: F401
from .base_dsl.dsl import BaseDSL  # noqa: F401
from ._mlir.dialects.vector import VectorType


def not_(x, *, loc=None, ip=None):
    """Logical not of a Boolean (dynamic or static)."""
    return _not(x)


def _logical(values, static_op, dynamic_op, what):
    if not values:
        raise TypeError(f"cutlass_dsl.{what} needs at least one operand")
    operands = [v if hasattr(v, "_n") else as_numeric(v) for v in values]
    if all(o.is_static() for o in operands):
        return static_op(bool(o.value) for o in operands)
    result = Boolean(operands[0])
    for o in operands[1:]:
        result = dynamic_op(result, Boolean(o))
    return result


def and_(*values, loc=None, ip=None):
    """Logical and of Booleans (or values tested against zero); a Python bool when all are static."""
    return _logical(values, all, lambda a, b: a & b, "and_")


def or_(*values, loc=None, ip=None):
    """Logical or of Booleans (or values tested against zero); a Python bool when all are static."""
    return _logical(values, any, lambda a, b: a | b, "or_")


class T:
    """IR types by their MLIR names: T.i32() is cutlass.Int32.mlir_type, and so on."""

    @staticmethod
    def bool():  # noqa: A003 - MLIR's name
        return Boolean.mlir_type

    i1 = bool

    @staticmethod
    def i8():
        return Int8.mlir_type

    @staticmethod
    def i16():
        return Int16.mlir_type

    @staticmethod
    def i32():
        return Int32.mlir_type

    @staticmethod
    def i64():
        return Int64.mlir_type

    @staticmethod
    def f16():
        return Float16.mlir_type

    @staticmethod
    def bf16():
        return BFloat16.mlir_type

    @staticmethod
    def f32():
        return Float32.mlir_type

    @staticmethod
    def f64():
        return Float64.mlir_type

    @staticmethod
    def vector(count, element_type):
        """vector<count x element_type> (cutlass._mlir.dialects.vector's values)."""
        return VectorType(count, element_type)
