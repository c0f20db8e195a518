"""Thread, block and warp indices, CTA and named barriers, elect_one, and the register budget of
warp-specialised kernels."""
import operator

from ... import _core
from ..._dsl import context
from ..._dsl.numeric import Int32, Int64, Uint64, as_numeric, num_of, wrap


WARP_SIZE = 32
WARPS_PER_WARPGROUP = 4
THREADS_PER_WARPGROUP = 128
FULL_MASK = 0xFFFFFFFF


def _xyz(what):
    t = context.tracer()
    return tuple(wrap(t.special(what, d)) for d in range(3))


def thread_idx(*, loc=None, ip=None):
    return _xyz("thread_idx")


def block_idx(*, loc=None, ip=None):
    return _xyz("block_idx")


def block_dim(*, loc=None, ip=None):
    return _xyz("block_dim")


def grid_dim(*, loc=None, ip=None):
    return _xyz("grid_dim")


def lane_idx(*, loc=None, ip=None):
    return wrap(context.tracer().special("lane_idx", 0))


def warp_idx(*, loc=None, ip=None):
    return wrap(context.tracer().special("warp_idx", 0))


def make_warp_uniform(value, *, loc=None, ip=None):
    """`value` (an integer the same in every lane of the warp) as an Int32 the compiler may keep in a
    uniform register. The emulator checks that the lanes agree. A 64-bit integer stays 64-bit: it
    may be an address (`ptr.toint()` of a shared-memory pointer is the 64-bit host address on the
    emulator, where the GPU's is a 32-bit shared-window offset), which must survive the round trip
    back through make_ptr."""
    n = as_numeric(value)
    wide = isinstance(n, (Int64, Uint64))
    if n.is_static():
        return n if wide else Int32(n)
    return wrap(_core.sm90_warp.warp_uniform(num_of(n if wide else Int32(n))))


def sync_threads(*, loc=None, ip=None):
    context.tracer().barrier()


def sync_warp(mask=FULL_MASK, *, loc=None, ip=None):
    """`__syncwarp(mask)` (bar.warp.sync): the lanes of `mask` meet before going on."""
    _core.sm90_warp.sync_warp(num_of(_u32(mask)))


def _u32(mask):
    """A member mask as an Int32 with the same bits (0xFFFFFFFF does not fit a signed Int32)."""
    if isinstance(mask, int):
        return Int32(mask - (1 << 32) if mask >= 1 << 31 else mask)
    return as_numeric(mask)


class _IfRegion:
    """A `with` block whose body is traced inside a dynamic `if pred:` (it yields no values: names
    assigned inside the body are not visible after it)."""

    def __init__(self, make_pred):
        self._make_pred = make_pred
        self._op = None

    def __enter__(self):
        t = context.tracer()
        self._op = t.if_begin(self._make_pred())
        t.enter_region(self._op, 0)
        return None

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        t = context.tracer()
        t.yield_([])
        t.enter_region(self._op, 1)
        t.yield_([])
        t.exit_to_parent(self._op)
        t.set_results(self._op, [])
        return False


def _if_region(pred):
    """`with _if_region(pred):` — a dynamic `if` for library code, which the preprocessor does not
    rewrite (a static pred becomes an `if` on a constant)."""
    return _IfRegion(lambda: num_of(as_numeric(pred)))


def elect_one(*, loc=None, ip=None):
    """A context manager whose body one lane of the (converged) warp executes: `with elect_one(): ...`.
    Values assigned inside the body are not visible after it."""
    return _IfRegion(lambda: _core.sm90_warp.elect_one(num_of(_u32(FULL_MASK))))


# ---- register allocation of warp-specialised kernels (sm_90a) --------------------------------------

def _reg_count(reg_count, what):
    try:
        return operator.index(reg_count)
    except TypeError:
        n = as_numeric(reg_count)
        if n.is_static():
            return int(n.value)
        raise TypeError(f"{what} needs a static int register count, got a dynamic value") from None


def setmaxregister_increase(reg_count, *, loc=None, ip=None):
    """setmaxnreg.inc: raise this warpgroup's per-thread register budget to `reg_count`."""
    _core.sm90_warp.setmaxnreg(_reg_count(reg_count, "setmaxregister_increase"), True)


def setmaxregister_decrease(reg_count, *, loc=None, ip=None):
    """setmaxnreg.dec: lower this warpgroup's per-thread register budget to `reg_count`."""
    _core.sm90_warp.setmaxnreg(_reg_count(reg_count, "setmaxregister_decrease"), False)


warpgroup_reg_alloc = setmaxregister_increase
warpgroup_reg_dealloc = setmaxregister_decrease


def prmt(src, src_reg_shifted, indices, *, loc=None, ip=None):
    """PTX prmt.b32 (`__byte_perm`): byte k of the result is byte `(indices >> 4k) & 7` of the
    8 bytes {src_reg_shifted, src} (src the low four); the result has the type of `src`."""
    a = as_numeric(src)
    r = wrap(_core.sm90_warp.prmt(num_of(a), num_of(as_numeric(src_reg_shifted)), num_of(as_numeric(indices))))
    return r if type(r) is type(a) or not hasattr(type(a), "mlir_type") else type(a)(r)


def barrier(*, barrier_id=None, number_of_threads=None, loc=None, ip=None):
    """`bar.sync barrier_id, number_of_threads`: with no arguments the whole CTA's barrier 0
    (`__syncthreads`); with an id (0-15) and a thread count, that named barrier."""
    if barrier_id is None and number_of_threads is None:
        context.tracer().barrier()
        return
    _named_barrier(barrier_id, number_of_threads, arrive_only=False)


def barrier_arrive(*, barrier_id=None, number_of_threads=None, loc=None, ip=None):
    """`bar.arrive barrier_id, number_of_threads`: count this warp's arrival at the named barrier
    without waiting (the threads that wait use `barrier` with the same count)."""
    if number_of_threads is None:
        raise ValueError("cute.arch.barrier_arrive needs number_of_threads (bar.arrive has no whole-CTA form)")
    _named_barrier(barrier_id, number_of_threads, arrive_only=True)


def _named_barrier(barrier_id, number_of_threads, arrive_only):
    ident = Int32(0 if barrier_id is None else barrier_id)
    if number_of_threads is None:
        count = Int32(block_dim()[0] * block_dim()[1] * block_dim()[2])
    else:
        count = Int32(number_of_threads)
    if ident.is_static() and not 0 <= ident.value <= 15:
        raise ValueError(f"cute.arch.barrier: barrier_id must be in [0, 15], got {ident.value}")
    context.tracer().named_barrier(ident._n, count._n, arrive_only)
