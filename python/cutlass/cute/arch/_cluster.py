"""Thread-block clusters (sm_90+): coordinates, the cluster barrier and distributed shared memory.
A launch with cluster=(x, y, z) groups that many CTAs, which are scheduled together, can wait
for each other at the cluster barrier and reach each other's shared memory."""
from ... import _core
from ..._dsl.numeric import Int32, as_numeric, num_of, wrap
from ._common import _pointer_value, _where


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
