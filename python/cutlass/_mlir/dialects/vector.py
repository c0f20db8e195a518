"""`cutlass._mlir.dialects.vector`: element access on a register vector (a TensorSSA here)."""
from ..._dsl.errors import DSLUserCodeError


def extract(vector, dynamic_position, static_position, *, loc=None, ip=None):
    """The element at `static_position` (one index into a 1-D vector)."""
    if list(dynamic_position or []) or len(static_position) != 1:
        raise DSLUserCodeError("vector.extract takes one static index into a 1-D vector",
                               code="VALUE_INVALID")
    return vector[int(static_position[0])]
