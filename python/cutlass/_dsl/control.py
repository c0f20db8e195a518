"""Meta-programming helpers of the `cutlass` namespace."""
import builtins
import warnings

from .errors import DSLUserCodeError
from .numeric import Numeric, is_dynamic
from .rt import DynamicRange, max as _dsl_max, min as _dsl_min


def const_expr(value):
    """Forces trace-time evaluation; a dynamic value is an error."""
    if is_dynamic(value):
        raise DSLUserCodeError("cutlass.const_expr got a dynamic value; it needs a value known at compile time",
                               code="PHASE_REQUIRES_CONSTANT")
    if isinstance(value, Numeric):
        return value.value
    return value


def dynamic_expr(value):
    return value


def range(*args, unroll=0, unroll_full=False, prefetch_stages=None, vectorize=None, at_least_once=False):  # noqa: A001
    return DynamicRange(*args, unroll=unroll, unroll_full=unroll_full, prefetch_stages=prefetch_stages,
                        vectorize=vectorize, at_least_once=at_least_once)


def range_dynamic(*args, **kwargs):
    warnings.warn("cutlass.range_dynamic is deprecated; use cutlass.range", DeprecationWarning, stacklevel=2)
    return range(*args, **kwargs)


def range_constexpr(*args):
    for a in args:
        if is_dynamic(a):
            raise DSLUserCodeError("cutlass.range_constexpr needs compile-time bounds but got a dynamic value; use "
                                   "range(...) for a loop with dynamic bounds", code="PHASE_REQUIRES_CONSTANT")
    return builtins.range(*(int(a) for a in args))


def min(*args, **kwargs):  # noqa: A001
    return _dsl_min(*args, **kwargs)


def max(*args, **kwargs):  # noqa: A001
    return _dsl_max(*args, **kwargs)
