"""Float32 fast paths, the packed f32x2 arithmetic of sm_100, and bit counting."""
from ... import _core
from ..._dsl.errors import DSLUserCodeError
from ..._dsl.numeric import MAX, MIN, Float32, Int32, Uint32, as_numeric, num_of, wrap


# ---- Float32 fast paths ---------------------------------------------------------------------

def _f32(x):
    return Float32(x)._n


def fmax(a, b, *, abs=False, nan=False, ftz=False, loc=None, ip=None):  # noqa: A002 - the DSL's keyword
    """PTX max.f32 of two Float32 values (a NaN operand is ignored, as fmaxf does)."""
    if abs or nan:
        raise NotImplementedError("cute.arch.fmax: the abs and nan variants are not supported yet")
    return wrap(_core.binary(MAX, _f32(a), _f32(b)))


def fmin(a, b, *, abs=False, nan=False, ftz=False, loc=None, ip=None):  # noqa: A002
    """PTX min.f32 of two Float32 values."""
    if abs or nan:
        raise NotImplementedError("cute.arch.fmin: the abs and nan variants are not supported yet")
    return wrap(_core.binary(MIN, _f32(a), _f32(b)))


def rcp_approx(a, *, loc=None, ip=None):
    """PTX rcp.approx.ftz.f32: an approximate 1/a (Float32)."""
    return wrap(_core.math("rcp_approx", [_f32(a)]))


def exp2(a, *, loc=None, ip=None):
    """PTX ex2.approx.ftz.f32: an approximate 2**a (Float32)."""
    return wrap(_core.math("exp2_approx", [_f32(a)]))


# ---- packed f32x2 arithmetic ------------------------------------------------------------------
# PTX `fma/mul/add/sub.rnd.f32x2` exist only on sm_100+. Each operates on a pair of Float32 lane-
# wise, so here the pair is two scalar f32 operations. Rounded to nearest even (RN) they are the
# DSL's scalar operations (fma rounds once: OpCode::Fma); rounded toward zero (RZ, the default),
# minus infinity (RM) or plus infinity (RP) they are the C++ core's directed-rounding functions
# (ir/directed_rounding.h: the exact result rounded once in that direction, subnormals flushed
# with ftz; PTX add/mul/fma.rz.ftz.f32 on the GPU). a - b is a + (-b), exactly.

def _rounding(rnd, what):
    """None for round-to-nearest-even, else the directed mode's suffix ("rz", "rm", "rp")."""
    name = getattr(rnd, "name", rnd)
    mode = str(name).upper() if name is not None else "RN"
    if mode in ("RN", "RNI", "NEAREST", "NONE"):
        return None
    if mode in ("RZ", "RM", "RP"):
        return mode.lower()
    raise DSLUserCodeError(f"cute.arch.{what}: rounding mode {name!r} is not supported; pass one of RN, RZ, RM, RP "
                           "(nvvm.RoundingModeKind)", code="NOT_SUPPORTED")


def _pair(x, what):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise TypeError(f"cute.arch.{what}: each operand is a pair of Float32, got {x!r}")
    return Float32(x[0]), Float32(x[1])


def _directed(arith, mode, ftz, *operands):
    fn = f"{arith}_{mode}" + ("_ftz" if ftz else "")
    return wrap(_core.math(fn, [num_of(x) for x in operands]))


def fma_packed_f32x2(src_a, src_b, src_c, *, rnd="RZ", ftz=True, loc=None, ip=None):
    """(a0*b0+c0, a1*b1+c1) on a pair of Float32, each rounded once."""
    mode = _rounding(rnd, "fma_packed_f32x2")
    a, b, c = _pair(src_a, "fma_packed_f32x2"), _pair(src_b, "fma_packed_f32x2"), _pair(src_c, "fma_packed_f32x2")
    if mode is not None:
        return tuple(_directed("fma", mode, ftz, a[k], b[k], c[k]) for k in range(2))
    return tuple(wrap(_core.fma(num_of(a[k]), num_of(b[k]), num_of(c[k]))) for k in range(2))


def mul_packed_f32x2(src_a, src_b, *, rnd="RZ", ftz=True, loc=None, ip=None):
    """(a0*b0, a1*b1) on a pair of Float32."""
    mode = _rounding(rnd, "mul_packed_f32x2")
    a, b = _pair(src_a, "mul_packed_f32x2"), _pair(src_b, "mul_packed_f32x2")
    if mode is not None:
        return tuple(_directed("mul", mode, ftz, a[k], b[k]) for k in range(2))
    return (a[0] * b[0], a[1] * b[1])


def add_packed_f32x2(src_a, src_b, *, rnd="RZ", ftz=True, loc=None, ip=None):
    """(a0+b0, a1+b1) on a pair of Float32."""
    mode = _rounding(rnd, "add_packed_f32x2")
    a, b = _pair(src_a, "add_packed_f32x2"), _pair(src_b, "add_packed_f32x2")
    if mode is not None:
        return tuple(_directed("add", mode, ftz, a[k], b[k]) for k in range(2))
    return (a[0] + b[0], a[1] + b[1])


def sub_packed_f32x2(src_a, src_b, *, rnd="RZ", ftz=True, loc=None, ip=None):
    """(a0-b0, a1-b1) on a pair of Float32."""
    mode = _rounding(rnd, "sub_packed_f32x2")
    a, b = _pair(src_a, "sub_packed_f32x2"), _pair(src_b, "sub_packed_f32x2")
    if mode is not None:
        return tuple(_directed("add", mode, ftz, a[k], -b[k]) for k in range(2))
    return (a[0] - b[0], a[1] - b[1])


def calc_packed_f32x2_op(src_a, src_b, src_c=None, calc_func=None, *, rnd="RZ", ftz=True, loc=None, ip=None):
    """The packed operation `calc_func` (nvvm.{fma,mul,add,sub}_packed_f32x2 or the cute.arch
    ones) on pairs of Float32: with src_c the three-operand form."""
    if calc_func is None:
        raise TypeError("cute.arch.calc_packed_f32x2_op needs calc_func")
    if src_c is None:
        return calc_func(src_a, src_b, rnd=rnd, ftz=ftz)
    return calc_func(src_a, src_b, src_c, rnd=rnd, ftz=ftz)


# ---- bit counting ------------------------------------------------------------------------------

def popc(value, *, loc=None, ip=None):
    """The number of set bits of a 32-bit integer (PTX popc.b32), as an Int32. Composed of shifts,
    masks and adds (the SWAR count), which give popc's result for every input."""
    x = Uint32(as_numeric(value))
    x = x - ((x >> 1) & Uint32(0x55555555))
    x = (x & Uint32(0x33333333)) + ((x >> 2) & Uint32(0x33333333))
    x = (x + (x >> 4)) & Uint32(0x0F0F0F0F)
    return Int32((x * Uint32(0x01010101)) >> 24)
