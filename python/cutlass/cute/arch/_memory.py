"""Shared-memory allocations, and the groups of asynchronous copies (cp.async, TMA stores) a
thread waits for; the TMA descriptor prefetch."""
import operator

from ... import _core
from ..._dsl import context
from ..._dsl.errors import DSLUserCodeError
from ..._dsl.numeric import wrap
from ._common import _pointer_value, _user_line


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



def prefetch(ptr, *, tensormap=False, loc=None, ip=None):
    """prefetch.tensormap: bring the TMA descriptor at `ptr` (a global or generic pointer to a
    128-byte slot) into the descriptor cache (NVIDIA's MoE GEMMs prefetch per-expert descriptors
    through `nvvm_wrappers.prefetch`). Only the tensor-map form is provided."""
    if not tensormap:
        raise DSLUserCodeError("cute.arch.prefetch: only the TMA descriptor form (tensormap=True) is supported",
                               code="VALUE_INVALID")
    _core.sm90.tma_descriptor_op(_pointer_value(ptr), True)
