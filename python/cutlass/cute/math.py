"""cute.math: each function forwards to the C++ `math` op (libdevice on the GPU, the same
definitions in the emulators). Arguments may be DSL scalars, Python scalars or TensorSSA values;
with a TensorSSA the function applies element-wise (operands broadcast) and returns a TensorSSA.
With `fastmath=True` on Float32 values, exp / log / log2 / log10 / sin / cos / tan use libdevice's
approximate functions (`__nv_fast_logf`, ...: lg2.approx, ex2.approx, sin.approx), as the CuTe
DSL's MLIR lowering does for the `afn` flag, and exp2 is ex2.approx.ftz.f32; other functions and
types take the exact one. `approx`/`ftz`/`rounding` are accepted."""
from .. import _core
from .._dsl.numeric import Float32, num_of, wrap
from .tensor_ssa import TensorSSA, apply_math


def _apply(name, args):
    if any(isinstance(a, TensorSSA) for a in args):
        return apply_math(name, args)
    # Python scalars go as they are: C++ types them against the DSL arguments.
    return wrap(_core.math(name, [num_of(a) for a in args]))


_FAST = ("exp", "log", "log2", "log10", "sin", "cos", "tan")


def _unary(name):
    def fn(x, *, fastmath=False, approx=False, ftz=False, rounding=None, loc=None, ip=None):
        if fastmath and name in _FAST and _is_f32(x):
            return _apply(name + "_fast", (x,))
        return _apply(name, (x,))
    fn.__name__ = name
    fn.__doc__ = f"Element-wise {name} of a DSL float, a Python float (Float32 unless it meets a DSL float) or a TensorSSA."
    return fn


def _binary(name):
    def fn(x, y, *, fastmath=False, loc=None, ip=None):
        return _apply(name, (x, y))
    fn.__name__ = name
    return fn


exp, exp2, log, log2, log10, sqrt, rsqrt = (_unary(n) for n in ("exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt"))
_exact_exp2 = exp2


def exp2(x, *, fastmath=False, approx=False, ftz=False, rounding=None, loc=None, ip=None):
    """Element-wise 2**x; with fastmath or approx on Float32 values it is PTX ex2.approx.ftz.f32
    (what FlashAttention's softmax relies on), otherwise the exact libdevice function."""
    if (fastmath or approx) and _is_f32(x):
        return _apply("exp2_approx", (x,))
    return _exact_exp2(x)


def _is_f32(x):
    if isinstance(x, TensorSSA):
        return x.dtype is Float32
    return isinstance(x, (Float32, float))
sin, cos, tan, asin, acos, atan = (_unary(n) for n in ("sin", "cos", "tan", "asin", "acos", "atan"))
sinh, cosh, tanh, erf, log1p, expm1 = (_unary(n) for n in ("sinh", "cosh", "tanh", "erf", "log1p", "expm1"))
floor, ceil, trunc = (_unary(n) for n in ("floor", "ceil", "trunc"))
atan2, copysign = _binary("atan2"), _binary("copysign")

__all__ = ["exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan",
           "sinh", "cosh", "tanh", "erf", "log1p", "expm1", "floor", "ceil", "trunc", "atan2", "copysign"]
