"""Warp shuffles, votes and reductions."""
import operator

from ..._dsl import context
from ..._dsl.errors import DSLUserCodeError
from ..._dsl.numeric import as_numeric, num_of, wrap
from ..._dsl.rt import max as _dsl_max
from ._threads import FULL_MASK, WARP_SIZE


# ---- warp shuffles and votes ------------------------------------------------------------------
# PTX shfl.sync semantics: `mask_and_clamp` is the instruction's `c` operand (clamp in bits 0-4,
# segment mask in bits 8-12); a source lane outside the clamp gives the lane its own value.

def _shuffle(kind, value, offset, mask, mask_and_clamp):
    return wrap(context.tracer().shuffle(kind, num_of(as_numeric(value)), num_of(offset), num_of(mask),
                                         num_of(mask_and_clamp)))


def shuffle_sync(value, offset, mask=FULL_MASK, mask_and_clamp=31, *, loc=None, ip=None):
    """The value of lane `offset` (an indexed shuffle)."""
    return _shuffle("idx", value, offset, mask, mask_and_clamp)


def shuffle_sync_up(value, offset, mask=FULL_MASK, mask_and_clamp=0, *, loc=None, ip=None):
    """The value of lane `lane_idx - offset`."""
    return _shuffle("up", value, offset, mask, mask_and_clamp)


def shuffle_sync_down(value, offset, mask=FULL_MASK, mask_and_clamp=31, *, loc=None, ip=None):
    """The value of lane `lane_idx + offset`."""
    return _shuffle("down", value, offset, mask, mask_and_clamp)


def shuffle_sync_bfly(value, offset, mask=FULL_MASK, mask_and_clamp=31, *, loc=None, ip=None):
    """The value of lane `lane_idx ^ offset`."""
    return _shuffle("bfly", value, offset, mask, mask_and_clamp)


def shuffle_sync_op(value, offset, mask=FULL_MASK, mask_and_clamp=31, kind="idx", *, loc=None, ip=None):
    """A shuffle of any kind ("idx", "up", "down", "bfly", or an enum member with that name)."""
    k = kind if isinstance(kind, str) else getattr(kind, "name", str(kind))
    return _shuffle(k.lower(), value, offset, mask, mask_and_clamp)


def warp_reduction(val, op, *, threads_in_group=32, loc=None, ip=None):
    """Reduces `val` over each aligned group of `threads_in_group` lanes with the binary `op`, by
    butterfly shuffles; every lane of a group receives the group's result."""
    if not isinstance(threads_in_group, int) or not 1 <= threads_in_group <= WARP_SIZE or \
            threads_in_group & (threads_in_group - 1):
        raise ValueError(f"threads_in_group must be a power of two in [1, 32], got {threads_in_group!r}")
    offset = threads_in_group // 2
    while offset > 0:
        val = op(val, shuffle_sync_bfly(val, offset))
        offset //= 2
    return val


def warp_reduction_sum(val, *, threads_in_group=32, loc=None, ip=None):
    return warp_reduction(val, operator.add, threads_in_group=threads_in_group)


def warp_reduction_max(val, *, threads_in_group=32, loc=None, ip=None):
    return warp_reduction(val, _dsl_max, threads_in_group=threads_in_group)


def vote_ballot_sync(pred, mask=FULL_MASK, *, loc=None, ip=None):
    """An Int32 whose bit i is the predicate of lane i (lanes in `mask` that are active)."""
    return wrap(context.tracer().vote("ballot", num_of(as_numeric(pred)), num_of(mask)))


def vote_any_sync(pred, mask=FULL_MASK, *, loc=None, ip=None):
    return wrap(context.tracer().vote("any", num_of(as_numeric(pred)), num_of(mask)))


def vote_all_sync(pred, mask=FULL_MASK, *, loc=None, ip=None):
    return wrap(context.tracer().vote("all", num_of(as_numeric(pred)), num_of(mask)))


def vote_uni_sync(pred, mask=FULL_MASK, *, loc=None, ip=None):
    return wrap(context.tracer().vote("uni", num_of(as_numeric(pred)), num_of(mask)))


_REDUX_KINDS = {"add": "add", "min": "min", "max": "max", "and": "and", "or": "or", "xor": "xor",
                "fmin": "min", "fmax": "max"}


def warp_redux_sync(value, kind, mask_and_clamp=FULL_MASK, *, abs=False, nan=False, loc=None, ip=None):  # noqa: A002
    """redux.sync: the reduction of `value` over the lanes of `mask_and_clamp`, in each of them.
    `kind`: "add", "min", "max", "and", "or", "xor" for Int32 / Uint32 values; "fmin" / "fmax" (or
    "min" / "max") for Float32 ones, of |value| with abs=True, NaN-propagating with nan=True (sm_100a)."""
    name = getattr(kind, "name", kind)
    name = name.lower() if isinstance(name, str) else name
    if name not in _REDUX_KINDS:
        raise DSLUserCodeError(f"warp_redux_sync: kind must be one of {', '.join(_REDUX_KINDS)}, got {kind!r}",
                               code="INVALID_VALUE")
    return wrap(context.tracer().warp_redux(_REDUX_KINDS[name], num_of(as_numeric(value)), num_of(mask_and_clamp),
                                            bool(abs), bool(nan)))
