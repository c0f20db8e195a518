"""The Blackwell (sm_100) pipelines, whose barriers tcgen05 MMAs and cluster launch control complete:

- PipelineTmaUmma: TMA producer, tcgen05 MMA consumer (the GEMM mainloop).
- PipelineUmmaAsync: tcgen05 MMA producer (the accumulator in tensor memory), thread consumers (the epilogue).
- PipelineAsyncUmma: thread producers, tcgen05 MMA consumer.
- PipelineTmaMultiConsumersAsync: TMA producer, an MMA consumer and thread consumers of the same stage.
- PipelineClcFetchAsync: the scheduler warp's cluster launch control queries, read by every warp of the cluster.
- PipelineCpAsync: cp.async producers (their copies land before the arrival), thread consumers.

An MMA side arrives with tcgen05.commit, which completes the arrival once the MMAs issued before
it finished. With 2-CTA MMAs (cta_group::2) the CTA pair's leader (V coordinate 0 of the cluster
layout `cta_layout_vmnk`) issues the MMAs of both CTAs: its commits arrive at the barriers of both
CTAs of the pair (a multicast commit), TMA loads of both CTAs signal the leader's full barrier (so
only the leader expects the stage's bytes), and the epilogue of both CTAs releases the accumulator
to the leader. Semantics follow CUTLASS's include/cutlass/pipeline/sm100_pipeline.hpp."""
import dataclasses
import itertools
from typing import Optional

from .._dsl.numeric import Boolean, Int32
from .. import cute
from ..cute.nvgpu.tcgen05 import CtaGroup
from .helpers import PipelineOp, _arch, _select, _tcgen05
from .sm90 import PipelineAsync, _barrier_storage, _maybe, _static_int, _sync_after_init


# ---- the cluster layout (V: CTAs of an MMA, M, N, K) ----------------------------------------------

def _cluster_layout(cta_layout_vmnk):
    return cute.make_layout((1, 1, 1, 1)) if cta_layout_vmnk is None else cta_layout_vmnk


def _coords_by_rank(cta_layout_vmnk):
    """{rank: (v, m, n, k)} of the static cluster layout (a hierarchical mode, as tiled_divide makes
    the V mode, is indexed by one linear coordinate)."""
    modes = cute.rank(cta_layout_vmnk)
    extents = tuple(_static_int(cute.size(cta_layout_vmnk, mode=[i]), "the cluster layout's extent")
                    for i in range(modes))
    out = {}
    for coord in itertools.product(*(range(e) for e in extents)):
        out[int(cta_layout_vmnk(coord))] = coord + (0,) * (4 - modes)
    return out


def _rank():
    a = _arch()
    return a.make_warp_uniform(a.block_idx_in_cluster())


def _per_rank(values, rank):
    """values[rank] for the dynamic `rank`: a static int when every rank has the same value."""
    first = values[0]
    if all(v == first for v in values):
        return first
    out = Int32(first)
    for r in range(1, len(values)):
        out = Int32(_select(rank == r, Int32(values[r]), out))
    return out


def _cta_group_of(cta_layout_vmnk):
    v = _static_int(cute.size(cta_layout_vmnk, mode=[0]), "the cluster layout's V extent")
    if v not in (1, 2):
        raise ValueError(f"cta_layout_vmnk: the V mode (CTAs of one MMA) must be 1 or 2, got {v}")
    return CtaGroup.TWO if v == 2 else CtaGroup.ONE


def _is_leader_cta(coords, rank):
    """Whether this CTA is its pair's leader (V coordinate 0): a static True without 2-CTA MMAs."""
    flags = [int(coords[r][0] == 0) for r in range(len(coords))]
    v = _per_rank(flags, rank)
    return Boolean(v != 0) if not isinstance(v, int) else bool(v)


def multicast_mask_by_rank(cta_layout_vmnk, mcast_mode_mn=(1, 1)):
    """For each rank, the mask of the CTAs that receive its MMA's release of a TMA stage: those of
    the same M coordinate (they share its B tile, mcast_mode_mn[0]) or of the same N coordinate (they
    share its A tile, mcast_mode_mn[1]), both CTAs of every pair included (CUTLASS's
    calculate_multicast_mask)."""
    coords = _coords_by_rank(cta_layout_vmnk)
    masks = []
    for me in range(len(coords)):
        _, m, n, k = coords[me]
        mask = 0
        for r, (_, rm, rn, rk) in coords.items():
            if rk == k and ((mcast_mode_mn[0] and rm == m) or (mcast_mode_mn[1] and rn == n)):
                mask |= 1 << r
        masks.append(mask)
    return masks


def peer_mask_by_rank(cta_layout_vmnk):
    """For each rank, the mask of the CTAs of its MMA pair (same M, N, K coordinates)."""
    coords = _coords_by_rank(cta_layout_vmnk)
    return [sum(1 << r for r, c in coords.items() if c[1:] == coords[me][1:]) for me in range(len(coords))]


def leader_rank_by_rank(cta_layout_vmnk):
    """For each rank, the rank of its pair's leader CTA (V coordinate 0)."""
    coords = _coords_by_rank(cta_layout_vmnk)
    leader = {c[1:]: r for r, c in coords.items() if c[0] == 0}
    return [leader[coords[me][1:]] for me in range(len(coords))]


def _cluster_values(cta_layout_vmnk, table):
    """table[my rank] (dynamic unless all ranks agree), or None for a cluster of one CTA."""
    if _static_int(cute.size(cta_layout_vmnk), "the cluster size") == 1:
        return None
    return _per_rank(table, _rank())


def _check_create(cls, num_stages):
    num_stages = _static_int(num_stages, f"{cls.__name__}.create: num_stages")
    if num_stages <= 0:
        raise ValueError(f"{cls.__name__}.create: num_stages must be positive, got {num_stages}")
    return num_stages


# ---- TMA -> UMMA --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PipelineTmaUmma(PipelineAsync):
    """TMA producer, tcgen05 MMA consumer (the Blackwell GEMM mainloop). producer_acquire waits for
    an empty stage and, in the leader CTA of the MMA, arrives at its full barrier expecting tx_count
    bytes (those of both CTAs with 2-CTA MMAs); the TMA loads complete them; producer_commit does
    nothing. consumer_release commits the MMA warp's MMAs to the empty barriers of every CTA whose
    TMA multicast fed them (consumer_mask), so consumer_group.size counts those CTAs' releases."""

    is_leader_cta: Optional[Boolean] = None
    cta_group: Optional[CtaGroup] = None

    @classmethod
    def create(cls, *, num_stages, producer_group, consumer_group, tx_count, barrier_storage=None,
               cta_layout_vmnk=None, mcast_mode_mn=(1, 1), defer_sync=False, name=""):
        num_stages = _check_create(cls, num_stages)
        layout = _cluster_layout(cta_layout_vmnk)
        storage = _barrier_storage(barrier_storage, num_stages, name)
        full = cls._make_sync_object(storage, num_stages, (PipelineOp.TmaLoad, producer_group), tx_count)
        empty = cls._make_sync_object(storage + num_stages, num_stages, (PipelineOp.TCGen05Mma, consumer_group))
        cluster_size = _static_int(cute.size(layout), f"{cls.__name__}.create: the cluster size")
        mask = _cluster_values(layout, multicast_mask_by_rank(layout, mcast_mode_mn))
        leader = True if cluster_size == 1 else _is_leader_cta(_coords_by_rank(layout), _rank())
        p = cls(full, empty, num_stages, None, mask, leader, _cta_group_of(layout))
        if not defer_sync:
            _sync_after_init(cluster_size)
        return p

    @staticmethod
    def _compute_mcast_arrival_mask(cta_layout_vmnk, mcast_mode_mn=(1, 1)):
        """This CTA's mask of the CTAs its MMA releases a stage to (libraries that build their own
        TMA -> UMMA pipelines call it, as quack does)."""
        layout = _cluster_layout(cta_layout_vmnk)
        return _per_rank(multicast_mask_by_rank(layout, mcast_mode_mn), _rank())

    @staticmethod
    def _compute_is_leader_cta(cta_layout_vmnk):
        """Whether this CTA leads its MMA pair (V coordinate 0 of the cluster layout)."""
        return _is_leader_cta(_coords_by_rank(_cluster_layout(cta_layout_vmnk)), _rank())

    def producer_acquire(self, state, try_acquire_token=None):
        _maybe(try_acquire_token, lambda: self.sync_object_empty.wait(state.index, state.phase))
        if self.is_leader_cta is True:
            self.sync_object_full.arrive(state.index)
        else:
            with _arch()._if_region(self.is_leader_cta):
                self.sync_object_full.arrive(state.index)

    def producer_commit(self, state):
        pass  # the TMA loads complete the full barrier's transactions

    def consumer_release(self, state):
        self.sync_object_empty.arrive(state.index, self.consumer_mask, self.cta_group)


# ---- UMMA <-> threads: the barriers both directions share ---------------------------------------

@dataclasses.dataclass(frozen=True)
class _UmmaThreadBarriers:
    """The full/empty barriers of a pipeline between an MMA warp and threads, and its masks. With
    2-CTA MMAs the MMA side signals the barriers of both CTAs of the pair (mma_side_mask: a commit
    multicast to the pair) and the thread side arrives at the pair's leader CTA, whose MMA warp
    waits (thread_side_mask: the leader's rank); with one CTA both are None (this CTA)."""
    full: object
    empty: object
    num_stages: int
    layout: object
    cta_group: CtaGroup
    cluster_size: int
    mma_side_mask: object
    thread_side_mask: object

    @staticmethod
    def make(pipeline_cls, num_stages, barrier_storage, cta_layout_vmnk, name, full_agent, empty_agent):
        num_stages = _check_create(pipeline_cls, num_stages)
        layout = _cluster_layout(cta_layout_vmnk)
        storage = _barrier_storage(barrier_storage, num_stages, name)
        full = pipeline_cls._make_sync_object(storage, num_stages, full_agent)
        empty = pipeline_cls._make_sync_object(storage + num_stages, num_stages, empty_agent)
        cta_group = _cta_group_of(layout)
        cluster_size = _static_int(cute.size(layout), f"{pipeline_cls.__name__}.create: the cluster size")
        mma_side = thread_side = None
        if cta_group is CtaGroup.TWO:
            mma_side = _cluster_values(layout, peer_mask_by_rank(layout))
            thread_side = _cluster_values(layout, leader_rank_by_rank(layout))
        return _UmmaThreadBarriers(full, empty, num_stages, layout, cta_group, cluster_size, mma_side, thread_side)


# ---- UMMA -> threads ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PipelineUmmaAsync(PipelineAsync):
    """tcgen05 MMA producer (an accumulator stage in tensor memory), thread consumers. producer_commit
    commits the MMAs to the full barrier (of both CTAs of the pair with 2-CTA MMAs: producer_mask);
    consumer_release arrives at the empty barrier of the pair's leader CTA, whose MMA warp waits for
    it (consumer_mask). producer_tail waits only in the leader CTA, the one whose barrier is released."""

    is_leader_cta: Optional[Boolean] = None
    cta_group: Optional[CtaGroup] = None

    @classmethod
    def create(cls, *, num_stages, producer_group, consumer_group, barrier_storage=None, cta_layout_vmnk=None,
               defer_sync=False, name=""):
        b = _UmmaThreadBarriers.make(cls, num_stages, barrier_storage, cta_layout_vmnk, name,
                                     (PipelineOp.TCGen05Mma, producer_group), (PipelineOp.AsyncThread, consumer_group))
        leader = True if b.cta_group is not CtaGroup.TWO else _is_leader_cta(_coords_by_rank(b.layout), _rank())
        p = cls(b.full, b.empty, b.num_stages, b.mma_side_mask, b.thread_side_mask, leader, b.cta_group)
        if not defer_sync:
            _sync_after_init(b.cluster_size)
        return p

    def producer_commit(self, state):
        self.sync_object_full.arrive(state.index, self.producer_mask, self.cta_group)

    def producer_tail(self, state):
        if self.is_leader_cta is True:
            PipelineAsync.producer_tail(self, state)
        else:
            with _arch()._if_region(self.is_leader_cta):
                PipelineAsync.producer_tail(self, state)


# ---- threads -> UMMA ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PipelineAsyncUmma(PipelineAsync):
    """Thread producers, tcgen05 MMA consumer. producer_commit arrives at the full barrier of the
    pair's leader CTA (which issues the MMAs; producer_mask); consumer_release commits the MMAs to
    the empty barriers of both CTAs of the pair (consumer_mask)."""

    cta_group: Optional[CtaGroup] = None

    @classmethod
    def create(cls, *, num_stages, producer_group, consumer_group, barrier_storage=None, cta_layout_vmnk=None,
               defer_sync=False, name=""):
        b = _UmmaThreadBarriers.make(cls, num_stages, barrier_storage, cta_layout_vmnk, name,
                                     (PipelineOp.AsyncThread, producer_group), (PipelineOp.TCGen05Mma, consumer_group))
        p = cls(b.full, b.empty, b.num_stages, b.thread_side_mask, b.mma_side_mask, b.cta_group)
        if not defer_sync:
            _sync_after_init(b.cluster_size)
        return p

    def consumer_release(self, state):
        self.sync_object_empty.arrive(state.index, self.consumer_mask, self.cta_group)


# ---- TMA -> UMMA and threads --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PipelineTmaMultiConsumersAsync(PipelineAsync):
    """TMA producer whose stage an MMA consumer and thread consumers both read: the empty barrier
    counts consumer_group_umma.size + consumer_group_async.size arrivals, and consumer_release says
    which side releases (PipelineOp.TCGen05Mma: a commit of the MMA warp; PipelineOp.AsyncThread, the
    default: a thread arrival). Single-CTA (no cluster)."""

    cta_group: Optional[CtaGroup] = None

    @classmethod
    def create(cls, *, num_stages, producer_group, consumer_group_umma, consumer_group_async, tx_count,
               barrier_storage=None, cta_layout_vmnk=None, defer_sync=False, name=""):
        num_stages = _check_create(cls, num_stages)
        layout = _cluster_layout(cta_layout_vmnk)
        if _static_int(cute.size(layout), f"{cls.__name__}.create: the cluster size") != 1:
            raise ValueError(f"{cls.__name__}.create: only a cluster of one CTA is supported")
        storage = _barrier_storage(barrier_storage, num_stages, name)
        full = cls._make_sync_object(storage, num_stages, (PipelineOp.TmaLoad, producer_group), tx_count)
        both = type(consumer_group_umma)(consumer_group_umma.agent,
                                         consumer_group_umma.size + consumer_group_async.size)
        empty = cls._make_sync_object(storage + num_stages, num_stages, (PipelineOp.AsyncThread, both))
        p = cls(full, empty, num_stages, None, None, _cta_group_of(layout))
        if not defer_sync:
            _sync_after_init(1)
        return p

    def producer_acquire(self, state, try_acquire_token=None):
        _maybe(try_acquire_token, lambda: self.sync_object_empty.wait(state.index, state.phase))
        self.sync_object_full.arrive(state.index)

    def producer_commit(self, state):
        pass  # the TMA loads complete the full barrier's transactions

    def consumer_release(self, state, op_type=PipelineOp.AsyncThread):
        if op_type is PipelineOp.TCGen05Mma:
            _tcgen05.commit(self.sync_object_empty.get_barrier(state.index), None, self.cta_group)
        elif op_type is PipelineOp.AsyncThread:
            self.sync_object_empty.arrive(state.index)
        else:
            raise ValueError(f"{type(self).__name__}.consumer_release: op_type must be PipelineOp.TCGen05Mma or "
                             f"PipelineOp.AsyncThread, got {op_type!r}")


# ---- cluster launch control ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PipelineClcFetchAsync(PipelineAsync):
    """The cluster launch control queries of a dynamic persistent kernel. The scheduler warp of the
    cluster's first CTA acquires a stage (waits until every consumer of the cluster released it,
    then lane r arrives at CTA rank r's full barrier expecting tx_count bytes), and issues the query
    with producer_get_barrier's barrier (utils.ClcDynamicPersistentTileScheduler.advance_to_next_work):
    the response lands in every CTA and completes the bytes. Every consumer thread of the cluster
    waits for it and releases the stage to the first CTA's empty barrier."""

    cluster_size: int = 1

    @classmethod
    def create(cls, *, num_stages, producer_group, consumer_group, tx_count, barrier_storage=None,
               cta_layout_vmnk=None, defer_sync=False, name=""):
        num_stages = _check_create(cls, num_stages)
        layout = _cluster_layout(cta_layout_vmnk)
        storage = _barrier_storage(barrier_storage, num_stages, name)
        full = cls._make_sync_object(storage, num_stages, (PipelineOp.ClcLoad, producer_group), tx_count)
        empty = cls._make_sync_object(storage + num_stages, num_stages, (PipelineOp.AsyncThread, consumer_group))
        cluster_size = _static_int(cute.size(layout), f"{cls.__name__}.create: the cluster size")
        if cluster_size > 32:
            raise ValueError(f"{cls.__name__}.create: a cluster of at most 32 CTAs, got {cluster_size}")
        p = cls(full, empty, num_stages, None, 0 if cluster_size > 1 else None, cluster_size)
        if not defer_sync:
            _sync_after_init(cluster_size)
        return p

    def producer_acquire(self, state, try_acquire_token=None):
        _maybe(try_acquire_token, lambda: self.sync_object_empty.wait(state.index, state.phase))
        a = _arch()
        barrier = self.sync_object_full.get_barrier(state.index)
        tx = self.sync_object_full.tx_count
        if self.cluster_size == 1:
            with a.elect_one():
                a.mbarrier_arrive_and_expect_tx(barrier, tx)
            return
        lane = a.lane_idx()
        with a._if_region(lane < self.cluster_size):
            a.mbarrier_arrive_and_expect_tx(barrier, tx, lane)

    def producer_commit(self, state):
        pass  # the query's response completes the full barriers' transactions

    def producer_tail(self, state):
        s = state.clone()
        for _ in range(self.num_stages):
            self.sync_object_empty.wait(s.index, s.phase)
            s.advance()


# ---- cp.async -> threads ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PipelineCpAsync(PipelineAsync):
    """cp.async producers, thread consumers: producer_commit is cp.async.mbarrier.arrive.noinc, an
    arrival made once the thread's earlier cp.async copies landed (each producer thread arrives)."""

    def producer_commit(self, state):
        _arch().cp_async_mbarrier_arrive_noinc(self.sync_object_full.get_barrier(state.index))
