"""`cutlass.cutlass_dsl`: the names NVIDIA's helper code imports from the DSL core. The value
protocol helpers flatten any DSL value to its IR values and rebuild it (cutlass/_dsl/carry.py);
the MLIR-level API (T, BaseDSL, if_generate ...) has no counterpart here."""
from . import dsl_user_op  # noqa: F401
from ._dsl.carry import extract_mlir_values, new_from_mlir_values  # noqa: F401
from ._dsl.numeric import (Boolean, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float16,  # noqa: F401
                           BFloat16, Float32, Float64, Float8E4M3FN, Float8E5M2, Numeric)
from ._dsl.rt import max, min, not_  # noqa: F401,A004
