"""mbarriers (SM90 transaction barriers).
An mbarrier is an 8-byte object in shared memory (a Pointer to Int64): mbarrier_init gives it
the number of arrivals that complete a phase; a phase completes when that many arrivals were
counted and every expected transaction byte (TMA copies) landed. Waits name the phase by its
parity (0 or 1). Each call emits one typed IR op (cpp/src/dsl/mbarrier.cpp)."""
from ... import _core
from ..._dsl.numeric import as_numeric, num_of, wrap
from ._common import _peer_rank, _pointer_value, _user_line


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
