"""Device intrinsics (`cute.arch`): thread and block indices, barriers, warp shuffles and votes,
atomics and shared memory. Each call forwards to a typed IR op built in C++ (cpp/src/dsl/arch_ops)."""
import enum as _enum
import operator

from .. import _core
from .._dsl import context
from .._dsl.errors import DSLUserCodeError, user_location
from .._dsl.numeric import MAX, MIN, Float32, Int32, Int64, Uint32, Uint64, as_numeric, num_of, wrap
from .._dsl.rt import max as _dsl_max
from ..base_dsl.arch import Arch  # noqa: F401 - NVIDIA's MLA decode imports it from here
from .._dsl.source_lines import _is_user_code

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


# ---- clusters (sm_90+) --------------------------------------------------------------------------
# A launch with cluster=(x, y, z) groups that many CTAs, which are scheduled together, can wait
# for each other at the cluster barrier and reach each other's shared memory.

def _cluster3(what):
    return tuple(wrap(_core.sm90_warp.cluster_sreg(what, d)) for d in range(3))


def cluster_idx(*, loc=None, ip=None):
    """The cluster's coordinates in the grid of clusters (%clusterid)."""
    return _cluster3("cluster_idx")


def cluster_dim(*, loc=None, ip=None):
    """Clusters in the grid in each dimension (%nclusterid)."""
    return _cluster3("cluster_dim")


def block_in_cluster_idx(*, loc=None, ip=None):
    """This CTA's coordinates inside its cluster (%cluster_ctaid)."""
    return _cluster3("block_in_cluster_idx")


def block_in_cluster_dim(*, loc=None, ip=None):
    """The cluster's shape in CTAs (%cluster_nctaid)."""
    return _cluster3("block_in_cluster_dim")


def block_idx_in_cluster(*, loc=None, ip=None):
    """This CTA's linear rank in its cluster, x fastest (%cluster_ctarank)."""
    return wrap(_core.sm90_warp.cluster_sreg("cta_rank", 0))


def cluster_size(*, loc=None, ip=None):
    """CTAs in the cluster (%cluster_nctarank)."""
    return wrap(_core.sm90_warp.cluster_sreg("cluster_size", 0))


def _where():
    """(file, line) of the user's call, for the emulator's deadlock reports."""
    file, line = user_location()
    return (file or "", int(line or 0))


def _aligned(aligned):
    return True if aligned is None else bool(aligned)


def cluster_arrive(*, aligned=None, loc=None, ip=None):
    """barrier.cluster.arrive: count this thread at the cluster barrier (release semantics).
    Aligned (the default): every thread of the warp executes it together."""
    _core.sm90_warp.cluster_barrier("arrive", _aligned(aligned), *_where())


def cluster_arrive_relaxed(*, aligned=None, loc=None, ip=None):
    """barrier.cluster.arrive.relaxed: as cluster_arrive, without ordering this thread's memory accesses."""
    _core.sm90_warp.cluster_barrier("arrive_relaxed", _aligned(aligned), *_where())


def cluster_wait(*, aligned=None, loc=None, ip=None):
    """barrier.cluster.wait: wait until every (non-exited) thread of the cluster arrived."""
    _core.sm90_warp.cluster_barrier("wait", _aligned(aligned), *_where())


def cluster_sync(*, loc=None, ip=None):
    cluster_arrive()
    cluster_wait()


def map_dsmem_ptr(smem_ptr, cta_rank, *, loc=None, ip=None):
    """A pointer to the same shared-memory offset as `smem_ptr` in the CTA of rank `cta_rank` of
    this cluster (mapa; distributed shared memory). Loads, stores and atomics through it reach that CTA."""
    return _core.cute.pointer_from_value(_core.sm90_warp.map_shared_rank(_pointer_value(smem_ptr),
                                                                    num_of(Int32(as_numeric(cta_rank)))))


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


# ---- programmatic dependent launch (sm_90+) ---------------------------------------------------
# With launch(use_pdl=True) the next kernel on the stream may start before this one finished:
# griddepcontrol_wait blocks until the grids this one depends on completed and their memory is
# visible; griddepcontrol_launch_dependents lets the dependent grid start now.

def griddepcontrol_wait(*, loc=None, ip=None):
    context.tracer().griddepcontrol(True)


def griddepcontrol_launch_dependents(*, loc=None, ip=None):
    context.tracer().griddepcontrol(False)


# ---- cluster launch control (sm_100+) ------------------------------------------------------------
# A persistent kernel launched over its whole problem asks, from one thread, to cancel the launch
# of a cluster that has not started yet (issue_clc_query) and does that cluster's work itself. The
# 16-byte answer lands in shared memory and completes 16 transaction bytes on the mbarrier, in
# every CTA of the cluster; clc_response reads it once the barrier's phase completed.

def issue_clc_query(mbar_ptr, clc_response_ptr, *, loc=None, ip=None):
    """clusterlaunchcontrol.try_cancel (multicast to the cluster): the response (16 bytes, 16-byte
    aligned shared memory) and 16 transaction bytes on `mbar_ptr`'s barrier, in every CTA of the cluster."""
    _core.clc.try_cancel(_pointer_value(clc_response_ptr), _pointer_value(mbar_ptr), True)


def clc_response(result_addr, *, loc=None, ip=None):
    """(x, y, z, valid), Int32 each: the ctaid of the first CTA of the cluster the query canceled, and
    1 when it canceled one (0: no cluster was left to take, x / y / z are then 0)."""
    x, y, z, canceled = _core.clc.query_cancel(_pointer_value(result_addr))
    return wrap(x), wrap(y), wrap(z), Int32(wrap(canceled))


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


# ---- atomics ----------------------------------------------------------------------------------

def _pointer_value(ptr):
    """The IR pointer value of a DSL pointer: a raw pointer value (`tensor.iterator`, the result of
    get_dyn_smem / alloc_smem) or a pointer object carrying one."""
    if hasattr(ptr, "__extract_mlir_values__") and not hasattr(ptr, "_n"):
        values = ptr.__extract_mlir_values__()
        if len(values) == 1:
            return values[0]
    return num_of(ptr)


def _memory_name(v):
    """sem / scope given as a string or an enum member (by its name)."""
    if v is None:
        return ""
    return (v if isinstance(v, str) else getattr(v, "name", str(v))).lower()


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


def atomic_exch(ptr, val, *, sem=None, scope=None, loc=None, ip=None):
    return _atomic("exch", ptr, val, None, sem, scope)


def atomic_cas(ptr, *, cmp, val, sem=None, scope=None, loc=None, ip=None):
    """Stores `val` when `*ptr == cmp` (bitwise); returns the previous value either way."""
    return _atomic("cas", ptr, val, cmp, sem, scope)


# ---- shared memory ----------------------------------------------------------------------------
# Pointers are returned as raw IR pointer values, like `Tensor.iterator` (the in-trace Pointer
# class wraps them when it lands).

def alloc_smem(element_type, size_in_elems, alignment=None, *, loc=None, ip=None):
    """A static shared-memory array of `size_in_elems` elements of the kernel."""
    if not isinstance(size_in_elems, int):
        raise TypeError(f"alloc_smem needs a static int size, got {type(size_in_elems).__name__}")
    ptr = _core.cute.pointer_from_value(context.tracer().smem_alloc(element_type.__name__, size_in_elems,
                                                                    alignment or 0))
    usage = getattr(context.current(), "kernel_smem", None)
    if usage is not None:  # static bytes count against the block's capacity too (SmemAllocator checks)
        usage.static_bytes = _core.smem.align_up(usage.static_bytes, ptr.alignment, "alloc_smem") + \
            size_in_elems * max(1, element_type.width // 8)
    return ptr


def get_dyn_smem(element_type, alignment=None, *, loc=None, ip=None):
    """The block's dynamic shared memory (the launch's `smem` bytes), after its static allocations."""
    return _core.cute.pointer_from_value(context.tracer().dyn_smem(element_type.__name__, alignment or 0))


def get_dyn_smem_size(*, loc=None, ip=None):
    """Bytes of dynamic shared memory the launch asked for (an Int32)."""
    return wrap(context.tracer().dyn_smem_size())


dynamic_smem_size = get_dyn_smem_size


# ---- cp.async groups (SM80) ---------------------------------------------------------------------
# A thread's cp.async copies form a group at each commit; wait_group(n) returns when at most n of
# the thread's committed groups are still in flight (the rest have landed in shared memory).

def cp_async_commit_group(*, loc=None, ip=None):
    _core.cute.cp_async_commit_group()


def cp_async_mbarrier_arrive_noinc(mbar_ptr, *, loc=None, ip=None):
    """Arrive on the mbarrier once all of this thread's earlier cp.async completed
    (cp.async.mbarrier.arrive.noinc): the arrival is one of the barrier's expected count."""
    _core.sm90.cp_async_mbarrier_arrive(_pointer_value(mbar_ptr), True, *_user_line())


def cp_async_mbarrier_arrive(mbar_ptr, *, loc=None, ip=None):
    """Make the mbarrier's current phase also wait for this thread's earlier cp.async
    (cp.async.mbarrier.arrive: the pending count is raised, then lowered when they complete)."""
    _core.sm90.cp_async_mbarrier_arrive(_pointer_value(mbar_ptr), False, *_user_line())


def cp_async_wait_group(n, *, loc=None, ip=None):
    try:
        count = operator.index(n)
    except TypeError:
        raise TypeError(f"cp_async_wait_group needs a static int number of groups, got {type(n).__name__}") from None
    _core.cute.cp_async_wait_group(count)
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


# NVIDIA's examples import warp constants from `cutlass.cute.arch.nvvm_wrappers`: the same names,
import sys as _sys  # noqa: E402

nvvm_wrappers = _sys.modules[__name__]
_sys.modules[__name__ + ".nvvm_wrappers"] = nvvm_wrappers
# ... and `cutlass.cute.arch.smem` (map_dsmem_ptr and the shared-memory allocations).
smem = nvvm_wrappers
_sys.modules[__name__ + ".smem"] = smem


# ---- mbarrier (SM90 transaction barriers) and fences -----------------------------------------
# An mbarrier is an 8-byte object in shared memory (a Pointer to Int64): mbarrier_init gives it
# the number of arrivals that complete a phase; a phase completes when that many arrivals were
# counted and every expected transaction byte (TMA copies) landed. Waits name the phase by its
# parity (0 or 1). Each call emits one typed IR op (cpp/src/dsl/mbarrier.cpp).

def _peer_rank(rank):
    return None if rank is None else num_of(as_numeric(rank))


def _user_line():
    """(file, line) of the innermost caller outside the cutlass package: the emulator names it
    when a wait never completes."""
    import sys
    f = sys._getframe(2)
    while f is not None and not _is_user_code(f.f_code.co_filename):
        f = f.f_back
    return ("", 0) if f is None else (f.f_code.co_filename, f.f_lineno)


def mbarrier_init(mbar_ptr, cnt, *, loc=None, ip=None):
    """Initialise the mbarrier: phase 0, `cnt` arrivals per phase (one thread should do it)."""
    _core.sm90.mbarrier_init(_pointer_value(mbar_ptr), num_of(as_numeric(cnt)), *_user_line())


def mbarrier_init_fence(*, loc=None, ip=None):
    """Make the mbarrier inits visible to the cluster (and the TMA unit) before they are used."""
    _core.sm90.fence("mbarrier_init")


def mbarrier_arrive(mbar_ptr, peer_cta_rank_in_cluster=None, arrive_count=1, *, scope=None, loc=None, ip=None):
    """Count `arrive_count` arrivals; with a peer rank, on the barrier at the same shared offset
    in that CTA of the cluster."""
    _core.sm90.mbarrier_arrive("arrive", _pointer_value(mbar_ptr), num_of(as_numeric(arrive_count)),
                               _peer_rank(peer_cta_rank_in_cluster), *_user_line())


def mbarrier_arrive_and_expect_tx(mbar_ptr, bytes, peer_cta_rank_in_cluster=None, relaxed=False, scope=None,  # noqa: A002
                                  *, loc=None, ip=None):
    """Expect `bytes` more transaction bytes in the current phase, then arrive once."""
    _core.sm90.mbarrier_arrive("arrive_expect_tx", _pointer_value(mbar_ptr), num_of(as_numeric(bytes)),
                               _peer_rank(peer_cta_rank_in_cluster), *_user_line())


def mbarrier_expect_tx(mbar_ptr, bytes, peer_cta_rank_in_cluster=None, *, scope=None, loc=None, ip=None):  # noqa: A002
    """Expect `bytes` more transaction bytes in the current phase (no arrival)."""
    _core.sm90.mbarrier_arrive("expect_tx", _pointer_value(mbar_ptr), num_of(as_numeric(bytes)),
                               _peer_rank(peer_cta_rank_in_cluster), *_user_line())


def mbarrier_wait(mbar_ptr, phase, *, loc=None, ip=None):
    """Block until the phase with parity `phase` of the mbarrier completed."""
    _core.sm90.mbarrier_wait("wait", _pointer_value(mbar_ptr), num_of(as_numeric(phase)), *_user_line())


def mbarrier_try_wait(mbar_ptr, phase, *, loc=None, ip=None):
    """Whether the phase with parity `phase` completed (may suspend the thread a while): a Boolean."""
    return wrap(_core.sm90.mbarrier_wait("try_wait", _pointer_value(mbar_ptr), num_of(as_numeric(phase)), *_user_line()))


def mbarrier_test_wait(mbar_ptr, phase, *, loc=None, ip=None):
    """Whether the phase with parity `phase` completed, without suspending: a Boolean."""
    return wrap(_core.sm90.mbarrier_wait("test_wait", _pointer_value(mbar_ptr), num_of(as_numeric(phase)), *_user_line()))


def mbarrier_conditional_try_wait(cond, mbar_ptr, phase, *, loc=None, ip=None):
    """try_wait when `cond` holds; True (nothing to wait for) when it does not, as CUTLASS's
    pipelines skip a wait. The barrier is not touched when `cond` is false."""
    return wrap(_core.sm90.mbarrier_conditional_try_wait(num_of(as_numeric(cond)), _pointer_value(mbar_ptr),
                                                         num_of(as_numeric(phase)), *_user_line()))


class ProxyKind(_enum.Enum):
    """The proxy of `fence_proxy` (the NVVM dialect's ProxyKind; `async` is `async_` in Python)."""
    alias = "alias"
    async_ = "async"
    async_global = "async.global"
    async_shared = "async.shared"
    tensormap_generic = "tensormap.generic"
    generic = "generic"


class SharedSpace(_enum.Enum):
    """The shared-memory window of an `async.shared` proxy fence (the NVVM dialect's SharedSpace)."""
    shared_cta = "cta"
    shared_cluster = "cluster"


_FENCE_PROXY_KINDS = {
    "alias": "proxy_alias",
    "async": "proxy_async",
    "async.global": "proxy_async_global",
    "async.shared": None,  # by space
}


def _kind_text(v):
    if v is None:
        return None
    if isinstance(v, str):
        return v
    name = getattr(v, "value", None)
    if isinstance(name, str):
        return name
    return getattr(v, "name", str(v)).replace("_", ".").lower()


def fence_proxy(kind, *, space=None, use_intrinsic=None, loc=None, ip=None):
    """A proxy fence: `kind` in "alias", "async", "async.global", "async.shared" (with
    space="cta" or "cluster"); orders generic-proxy accesses (ordinary loads and stores) with the
    async proxy (TMA, wgmma operands) before a barrier hands the data over."""
    k = _kind_text(kind)
    sp = _kind_text(space)
    if sp is not None:
        sp = sp.split("::")[-1].replace("shared.", "")
    if k == "async.shared" or k == "async.shared.cta" or k == "async.shared.cluster":
        if k != "async.shared":
            sp = k.rsplit(".", 1)[1]
        if sp not in (None, "cta", "cluster"):
            raise ValueError(f"fence_proxy: space must be 'cta' or 'cluster', got {space!r}")
        _core.sm90.fence("proxy_async_shared_cluster" if sp == "cluster" else "proxy_async_shared_cta")
        return
    if k not in _FENCE_PROXY_KINDS:
        raise ValueError(f"fence_proxy: unknown proxy kind {kind!r} (expected one of "
                         f"{', '.join(repr(x) for x in _FENCE_PROXY_KINDS)})")
    _core.sm90.fence(_FENCE_PROXY_KINDS[k])


def fence_view_async_shared(*, loc=None, ip=None):
    """fence.proxy.async.shared::cta: shared memory written by threads becomes visible to the
    async proxy (TMA stores, wgmma)."""
    _core.sm90.fence("proxy_async_shared_cta")


def fence_acq_rel_cta(*, loc=None, ip=None):
    _core.sm90.fence("acq_rel_cta")


def fence_acq_rel_cluster(*, loc=None, ip=None):
    _core.sm90.fence("acq_rel_cluster")


def fence_acq_rel_gpu(*, loc=None, ip=None):
    _core.sm90.fence("acq_rel_gpu")


def fence_acq_rel_sys(*, loc=None, ip=None):
    _core.sm90.fence("acq_rel_sys")


# ---- bulk (TMA store) groups --------------------------------------------------------------------

def cp_async_bulk_commit_group(*, loc=None, ip=None):
    """Close this thread's current group of TMA stores (cp.async.bulk.commit_group)."""
    _core.sm90.bulk_commit_group()


def cp_async_bulk_wait_group(group, *, read=None, loc=None, ip=None):
    """Wait until at most `group` of this thread's bulk groups are pending; with read=True only
    until their shared-memory reads are done (the buffer may be reused)."""
    try:
        n = operator.index(group)
    except TypeError:
        raise TypeError(f"cp_async_bulk_wait_group needs a static int number of groups, got {type(group).__name__}") \
            from None
    _core.sm90.bulk_wait_group(n, bool(read))


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


# ---- Blackwell tensor memory (cute/_arch_sm100.py) ----------------------------------------------
from ._arch_sm100 import (alloc_tmem, dealloc_tmem, fence_view_async_tmem_load,  # noqa: E402,F401
                          fence_view_async_tmem_store, get_max_tmem_alloc_cols, get_min_tmem_alloc_cols,
                          relinquish_tmem_alloc_permit, retrieve_tmem_ptr)
