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


def absf(x, *, fastmath=None, loc=None, ip=None):
    """|x| of a float value: a DSL number's IR value or a TensorSSA's (`ssa.ir_value()`), element-wise."""
    if isinstance(x, _core.TensorSSA):
        return _core.ssa_absolute(x)
    return _core.absolute(x)
