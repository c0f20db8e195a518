"""`cutlass._mlir.dialects.math`: elementwise math on DSL numbers (the DSL's own math ops)."""
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
    def op(x, *, loc=None, ip=None):
        # Numbers and TensorSSA values both define abs(); an integer's is math.absi, a float's math.absf.
        return abs(x)
    op.__name__ = name
    return op


absi = _abs("absi")
absf = _abs("absf")
