"""`cute.FastDivmodDivisor`: a run-time divisor prepared once and used many times as the right
operand of `//`, `%` and `divmod` on 32-bit integers.

A dynamic divisor d (which must be positive, as in the CuTe DSL) is turned, where it is made
(host code or kernel), into a 32-bit multiplier m = ceil(2^(31+L) / d) and a shift L - 1, with
L = ceil(log2 d); a quotient is then a multiply-high and a shift instead of an integer division
(a float reciprocal and corrections on the GPU, on the critical path of FA4's tile schedulers).
That pair divides every n in [0, 2^31) exactly; a negative dividend goes through its complement
(floor(x / d) = ~floor(~x / d)), so `//` and `%` keep Python's floor semantics for every Int32.
A static divisor stays a constant division, which the code generator turns into the same kind of
multiply itself."""
from .._dsl.numeric import Int32, Numeric, Uint32, Uint64, as_numeric, wrap
from .. import _core
from .arch._arithmetic import popc


def _select(cond, a, b):
    return wrap(_core.select(as_numeric(cond)._n, as_numeric(a)._n, as_numeric(b)._n))


def _ceil_log2(d):
    """ceil(log2 d) of a Uint32 d >= 1, as a Uint32: the bits below d - 1's highest, counted."""
    v = d - Uint32(1)
    for s in (1, 2, 4, 8, 16):
        v = v | (v >> s)
    return Uint32(popc(v))


class FastDivmodDivisor:
    __dsl_elementwise__ = True  # Int32 // divisor hands over to __rfloordiv__ below

    def __init__(self, divisor, *, loc=None, ip=None):
        if isinstance(divisor, FastDivmodDivisor):
            divisor = divisor.divisor
        d = Int32(as_numeric(divisor))
        if d.is_static() and d.value <= 0:
            raise ValueError(f"FastDivmodDivisor: the divisor must be positive, got {d.value}")
        self.divisor = d
        self.multiplier = self.shift = None
        if not d.is_static():
            du = Uint32(d)
            log2 = _ceil_log2(du)
            power = Uint64(1) << Uint64(log2 + Uint32(31))
            self.multiplier = Uint32((power + Uint64(du) - Uint64(1)) // Uint64(du))
            self.shift = log2 - Uint32(1)  # d = 1 (shift all ones) is answered by a select below

    def _dividend(self, x):
        if not isinstance(x, (Numeric, int)) or isinstance(x, bool):
            return NotImplemented
        return Int32(as_numeric(x))

    def _quotient(self, x):
        if self.multiplier is None:
            return x // self.divisor
        sign = x >> 31  # 0, or all ones for a negative x, whose complement ~x is >= 0
        n = Uint32(x ^ sign)
        high = Uint32((Uint64(n) * Uint64(self.multiplier)) >> Uint64(32))
        q = Int32(high >> self.shift) ^ sign
        return _select(self.divisor == Int32(1), x, q)

    def __rfloordiv__(self, x):
        x = self._dividend(x)
        return x if x is NotImplemented else self._quotient(x)

    def __rmod__(self, x):
        x = self._dividend(x)
        return x if x is NotImplemented else x - self._quotient(x) * self.divisor

    def __rdivmod__(self, x):
        x = self._dividend(x)
        if x is NotImplemented:
            return x
        q = self._quotient(x)
        return q, x - q * self.divisor

    # The value protocol: it passes to kernels and through dynamic control flow as its divisor and,
    # when dynamic, its multiplier and shift.
    def __extract_mlir_values__(self):
        parts = [self.divisor] if self.multiplier is None else [self.divisor, self.multiplier, self.shift]
        return [p.ir_value() for p in parts]

    def __new_from_mlir_values__(self, values):
        new = FastDivmodDivisor.__new__(FastDivmodDivisor)
        as_num = lambda v, t: v if isinstance(v, Numeric) else t(wrap(v))  # noqa: E731
        new.divisor = as_num(values[0], Int32)
        new.multiplier = new.shift = None
        if len(values) == 3:
            new.multiplier, new.shift = as_num(values[1], Uint32), as_num(values[2], Uint32)
        return new

    def __repr__(self):
        return f"FastDivmodDivisor({self.divisor!r})"


def fast_divmod_create_divisor(divisor, *, loc=None, ip=None):
    """The FastDivmodDivisor of `divisor` (the CuTe DSL's functional spelling, NVIDIA's MLA helpers)."""
    return FastDivmodDivisor(divisor)
