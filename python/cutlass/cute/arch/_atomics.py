"""Atomic read-modify-write operations on global and shared memory."""
from ..._dsl import context
from ..._dsl.numeric import as_numeric, num_of, wrap
from ._common import _memory_name, _pointer_value


def _atomic(kind, ptr, val, cmp, sem, scope):
    t = context.tracer()
    return wrap(t.atomic(kind, _pointer_value(ptr), num_of(as_numeric(val)),
                         [] if cmp is None else [num_of(as_numeric(cmp))], _memory_name(sem), _memory_name(scope)))


def atomic_add(ptr, val, *, sem=None, scope=None, loc=None, ip=None):
    """`*ptr += val` atomically; returns the previous value."""
    return _atomic("add", ptr, val, None, sem, scope)


def atomic_and(ptr, val, *, sem=None, scope=None, loc=None, ip=None):
    return _atomic("and", ptr, val, None, sem, scope)


def atomic_or(ptr, val, *, sem=None, scope=None, loc=None, ip=None):
    return _atomic("or", ptr, val, None, sem, scope)


def atomic_xor(ptr, val, *, sem=None, scope=None, loc=None, ip=None):
    return _atomic("xor", ptr, val, None, sem, scope)


def atomic_max(ptr, val, *, sem=None, scope=None, loc=None, ip=None):
    return _atomic("max", ptr, val, None, sem, scope)


def atomic_min(ptr, val, *, sem=None, scope=None, loc=None, ip=None):
    return _atomic("min", ptr, val, None, sem, scope)


def atomic_fmax(ptr, val, *, sign_bit=True, sem=None, scope=None, loc=None, ip=None):
    """`*ptr = max(*ptr, val)` for Float32 atomically; returns the previous value. sign_bit=False
    promises both are non-negative (an amax of |x|)."""
    t = context.tracer()
    return wrap(t.atomic_fmax(_pointer_value(ptr), num_of(as_numeric(val)), bool(sign_bit), _memory_name(sem),
                              _memory_name(scope)))


def atomic_exch(ptr, val, *, sem=None, scope=None, loc=None, ip=None):
    return _atomic("exch", ptr, val, None, sem, scope)


def atomic_cas(ptr, *, cmp, val, sem=None, scope=None, loc=None, ip=None):
    """Stores `val` when `*ptr == cmp` (bitwise); returns the previous value either way."""
    return _atomic("cas", ptr, val, cmp, sem, scope)
