"""cute.math on scalars: each function forwards to the C++ `math` op (libdevice on the GPU,
the same definitions in the emulators). Element-wise math on TensorSSA values comes with the
tensor issue; the `fastmath`/`approx`/`ftz` variants are accepted and not yet specialised."""
from .. import _core
from .._dsl.numeric import as_numeric, wrap


def _unary(name):
    def fn(x, *, fastmath=False, approx=False, ftz=False, rounding=None):
        return wrap(_core.math(name, [as_numeric(x)._n]))
    fn.__name__ = name
    fn.__doc__ = f"Element-wise {name} of a DSL float (or Python float, taken as Float32)."
    return fn


def _binary(name):
    def fn(x, y, *, fastmath=False):
        return wrap(_core.math(name, [as_numeric(x)._n, as_numeric(y)._n]))
    fn.__name__ = name
    return fn


exp, exp2, log, log2, log10, sqrt, rsqrt = (_unary(n) for n in ("exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt"))
sin, cos, tan, asin, acos, atan = (_unary(n) for n in ("sin", "cos", "tan", "asin", "acos", "atan"))
sinh, cosh, tanh, erf, log1p, expm1 = (_unary(n) for n in ("sinh", "cosh", "tanh", "erf", "log1p", "expm1"))
floor, ceil, trunc = (_unary(n) for n in ("floor", "ceil", "trunc"))
atan2, copysign = _binary("atan2"), _binary("copysign")

__all__ = ["exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan",
           "sinh", "cosh", "tanh", "erf", "log1p", "expm1", "floor", "ceil", "trunc", "atan2", "copysign"]
