"""`cutlass.base_dsl.typing`: the JIT-argument protocol base class and the DSL's numeric types.

A class deriving from JitArgument passes to a `@cute.jit` function as the IR values its
`__get_mlir_types__` names (its host values come from `__c_pointers__`) and is rebuilt inside the
function by `__new_from_mlir_values__`."""
from .._dsl.jit import Constexpr  # noqa: F401
from .._dsl.numeric import (Boolean, Float, Integer, Numeric, NumericMeta, Int8, Int16, Int32, Int64,  # noqa: F401
                            Uint8, Uint16, Uint32, Uint64, Float16, BFloat16, Float32, Float64, Float8E4M3FN,
                            Float8E5M2, Float4E2M1FN, Float8E8M0FNU, Float6E2M3FN,
                            Float6E3M2FN)


class JitArgument:
    """Base of user classes that pass to jit functions through the argument protocol."""

    def __c_pointers__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __c_pointers__")

    def __get_mlir_types__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __get_mlir_types__")

    def __new_from_mlir_values__(self, values):
        raise NotImplementedError(f"{type(self).__name__} must define __new_from_mlir_values__")
