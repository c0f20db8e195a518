"""`cute.FastDivmodDivisor`: a run-time divisor prepared once and used many times as the right
operand of `//`, `%` and `divmod` on 32-bit integers.

On the GPU the CuTe DSL turns the divisor into a multiplier and a shift so that each division
is a multiply-high; the quotient and remainder are those of integer division either way, which
is what OpenCuTe computes (the code generator's integer division)."""
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

    def _dividend(self, x):
        if not isinstance(x, (Numeric, int)) or isinstance(x, bool):
            return NotImplemented
        return Int32(as_numeric(x))

    def __rfloordiv__(self, x):
        x = self._dividend(x)
        return x if x is NotImplemented else x // self.divisor

    def __rmod__(self, x):
        # The remainder that goes with `//`'s floor quotient (the same as divmod's), also for a
        # negative dividend, where Int32's own `%` would truncate.
        x = self._dividend(x)
        return x if x is NotImplemented else x - (x // self.divisor) * self.divisor

    def __rdivmod__(self, x):
        x = self._dividend(x)
        if x is NotImplemented:
            return x
        q = x // self.divisor
        return q, x - q * self.divisor

    # The value protocol: it passes to kernels and through dynamic control flow as its divisor.
    def __extract_mlir_values__(self):
        return [self.divisor.ir_value()]

    def __new_from_mlir_values__(self, values):
        new = FastDivmodDivisor.__new__(FastDivmodDivisor)
        new.divisor = wrap(values[0]) if not isinstance(values[0], Numeric) else values[0]
        return new

    def __repr__(self):
        return f"FastDivmodDivisor({self.divisor!r})"


def fast_divmod_create_divisor(divisor, *, loc=None, ip=None):
    """The FastDivmodDivisor of `divisor` (the CuTe DSL's functional spelling, NVIDIA's MLA helpers)."""
    return FastDivmodDivisor(divisor)
