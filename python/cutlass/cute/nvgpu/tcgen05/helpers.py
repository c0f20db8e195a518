"""tcgen05 ops that are not atoms: the commit that signals an mbarrier once the MMAs issued
before it completed, and the tcgen05 fences around thread synchronisation."""
from .... import _core
from ...._dsl.numeric import as_numeric, num_of
from ..._arch_sm100 import _value
from .mma import CtaGroup


def commit(mbar_ptr, mask=None, cta_group=CtaGroup.ONE, *, loc=None, ip=None):
    """tcgen05.commit: the mbarrier at `mbar_ptr` gets one arrival once every tcgen05.mma (and
    tcgen05.cp) issued before it by this thread has completed; with `mask` (an Int16 of CTA
    ranks), the mbarrier at the same shared-memory offset in each CTA of the mask (multicast).
    One elected lane of the warp that executes it issues it."""
    if not isinstance(cta_group, CtaGroup):
        raise TypeError(f"commit: cta_group must be a tcgen05.CtaGroup, got {cta_group!r}")
    m = None if mask is None else num_of(as_numeric(mask))
    _core.sm100.commit(_value(mbar_ptr), m, cta_group.value)


def fence_before_thread_sync(*, loc=None, ip=None):
    """tcgen05.fence::before_thread_sync: the thread's earlier tcgen05 ops are ordered before a
    following barrier or mbarrier synchronisation."""
    _core.sm100.fence(after=False)


def fence_after_thread_sync(*, loc=None, ip=None):
    """tcgen05.fence::after_thread_sync: the thread's later tcgen05 ops are ordered after the
    barrier or mbarrier synchronisation before it."""
    _core.sm100.fence(after=True)
