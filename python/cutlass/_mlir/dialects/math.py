"""`cutlass._mlir.dialects.math`: elementwise math on DSL numbers (the DSL's own math ops)."""
from ... import _core
from ...cute import math as _m


def _unary(name):
    def op(x, *, fastmath=None, loc=None, ip=None):
        return getattr(_m, name)(x)
    op.__name__ = name
    return op


exp = _unary("exp")
exp2 = _unary("exp2")
log = _unary("log")
log2 = _unary("log2")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sin = _unary("sin")
cos = _unary("cos")


def _abs(name):
    def op(x, *, fastmath=None, loc=None, ip=None):
        """|x|, element-wise: of a DSL number or TensorSSA (abs()), or of the IR value of one
        (`ssa.ir_value()`, which the amax example passes)."""
        if isinstance(x, _core.TensorSSA):
            return _core.ssa_absolute(x)
        if hasattr(x, "__abs__") and not isinstance(x, _core.Num):
            return abs(x)
        return _core.absolute(x)
    op.__name__ = name
    return op


absi = _abs("absi")
absf = _abs("absf")
