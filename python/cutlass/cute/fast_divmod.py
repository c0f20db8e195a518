"""`cute.FastDivmodDivisor`: a run-time divisor prepared once and used many times as the right
operand of `//`, `%` and `divmod` on 32-bit integers.

The divisor is prepared where it is made (in the host program, for the schedulers of FA4 and
NVIDIA's examples) as a multiplier, so that each division is a multiply-high, an add and a shift
(C++: dsl/fast_divmod.h). The quotient and remainder are Python's floor division's for every
Int32 dividend; the divisor must be positive."""
from .. import _core
from .._dsl.numeric import Int32, Numeric, as_numeric, wrap


class FastDivmodDivisor:
    __dsl_elementwise__ = True  # Int32 // divisor hands over to __rfloordiv__ below

    def __init__(self, divisor, *, loc=None, ip=None):
        if isinstance(divisor, FastDivmodDivisor):
            divisor = divisor.divisor
        d = Int32(as_numeric(divisor))
        if d.is_static() and d.value <= 0:
            raise ValueError(f"FastDivmodDivisor: the divisor must be positive, got {d.value}")
        self.divisor = d
        self._prepared = wrap(_core.fast_divisor_prepare(d.ir_value()))

    def _dividend(self, x):
        if not isinstance(x, (Numeric, int)) or isinstance(x, bool):
            return NotImplemented
        return Int32(as_numeric(x))

    def _quotient(self, x):
        return wrap(_core.fast_floordiv(x.ir_value(), self._prepared.ir_value()))

    def __rfloordiv__(self, x):
        x = self._dividend(x)
        return x if x is NotImplemented else self._quotient(x)

    def __rmod__(self, x):
        # The remainder that goes with `//`'s floor quotient, also for a negative dividend, where
        # Int32's own `%` would truncate.
        qr = self.__rdivmod__(x)
        return qr if qr is NotImplemented else qr[1]

    def __rdivmod__(self, x):
        x = self._dividend(x)
        if x is NotImplemented:
            return x
        q = self._quotient(x)
        return q, x - q * self.divisor

    # The value protocol: it passes to kernels and through dynamic control flow as one value, its
    # prepared form (a Uint64 that holds the divisor too).
    def __extract_mlir_values__(self):
        return [self._prepared.ir_value()]

    def __new_from_mlir_values__(self, values):
        new = FastDivmodDivisor.__new__(FastDivmodDivisor)
        new._prepared = wrap(values[0]) if not isinstance(values[0], Numeric) else values[0]
        new.divisor = wrap(_core.fast_divisor_value(new._prepared.ir_value()))
        return new

    def __repr__(self):
        return f"FastDivmodDivisor({self.divisor!r})"


def fast_divmod_create_divisor(divisor, *, loc=None, ip=None):
    """The FastDivmodDivisor of `divisor` (the CuTe DSL's functional spelling, NVIDIA's MLA helpers)."""
    return FastDivmodDivisor(divisor)
