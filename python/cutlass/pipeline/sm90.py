"""The Hopper pipelines: PipelineAsync (any producer, any consumer, over full / empty mbarrier
pairs), PipelineTmaAsync (a TMA producer whose copies complete the full barrier's transaction
count; consumers release the slot to every CTA that multicast into it), PipelineTmaStore (TMA
stores throttled through bulk groups), and the handle API (PipelineProducer / PipelineConsumer).
Semantics follow CUTLASS's include/cutlass/pipeline/sm90_pipeline.hpp."""
import dataclasses
import enum
import itertools
from typing import Optional

from .. import _core
from .._dsl.numeric import Boolean, Int32, Int64, Numeric, as_numeric
from .. import cute
from ..utils.smem_allocator import SmemAllocator
from .helpers import (Agent, CooperativeGroup, MbarrierArray, PipelineOp, PipelineState, PipelineUserType, _arch,
                      _select, make_pipeline_state)


def _static_int(value, what):
    if isinstance(value, Numeric):
        if not value.is_static():
            raise ValueError(f"{what} must be known at compile time")
        value = value.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    return value


def _barrier_storage(barrier_storage, num_stages, name):
    """The Int64 slots of the pipeline's barriers: the caller's, or 2 * num_stages new ones."""
    if barrier_storage is not None:
        return barrier_storage
    return SmemAllocator().allocate_array(Int64, 2 * num_stages, byte_alignment=8)


def _sync_after_init(cluster_size):
    a = _arch()
    a.mbarrier_init_fence()
    if cluster_size > 1:
        a.cluster_arrive_relaxed()
        a.cluster_wait()
    else:
        a.sync_threads()


def _maybe(token, fn):
    """fn() unless `token` (a Boolean: the barrier was already seen ready) is true."""
    if token is None:
        fn()
        return
    t = Boolean(as_numeric(token))
    if t.is_static():
        if not bool(t.value):
            fn()
        return
    with _arch()._if_region(~t):
        fn()


@dataclasses.dataclass(frozen=True)
class PipelineAsync:
    """A pipeline of `num_stages` slots between a producer group and a consumer group: the
    producer waits until a slot is empty (producer_acquire), fills it and arrives at its full
    barrier (producer_commit); the consumer waits until it is full (consumer_wait), reads it and
    arrives at its empty barrier (consumer_release). Full barriers count producer_group.size
    arrivals, empty ones consumer_group.size. A frozen dataclass, as in the CuTe DSL, so that
    libraries derive pipelines from it with their own `create` and hooks."""

    sync_object_full: MbarrierArray
    sync_object_empty: MbarrierArray
    num_stages: int
    producer_mask: Optional[Int32] = None
    consumer_mask: Optional[Int32] = None

    @staticmethod
    def _make_sync_object(barrier_storage, num_stages, agent, tx_count=0):
        """The barriers of one side of a pipeline: `agent` is (PipelineOp, CooperativeGroup)."""
        return MbarrierArray(barrier_storage, num_stages, agent, tx_count)

    @classmethod
    def create(cls, *, num_stages, producer_group, consumer_group, barrier_storage=None, producer_mask=None,
               consumer_mask=None, defer_sync=False, name=""):
        num_stages = _static_int(num_stages, "PipelineAsync.create: num_stages")
        if num_stages <= 0:
            raise ValueError(f"PipelineAsync.create: num_stages must be positive, got {num_stages}")
        storage = _barrier_storage(barrier_storage, num_stages, name)
        full = cls._make_sync_object(storage, num_stages, (PipelineOp.AsyncThread, producer_group))
        empty = cls._make_sync_object(storage + num_stages, num_stages, (PipelineOp.AsyncThread, consumer_group))
        p = cls(full, empty, num_stages, producer_mask, consumer_mask)
        if not defer_sync:
            _sync_after_init(1)
        return p

    # -- producer --
    def producer_acquire(self, state, try_acquire_token=None):
        _maybe(try_acquire_token, lambda: self.sync_object_empty.wait(state.index, state.phase))

    def producer_try_acquire(self, state):
        return self.sync_object_empty.try_wait(state.index, state.phase)

    def producer_commit(self, state):
        self.sync_object_full.arrive(state.index, self.producer_mask)

    def producer_get_barrier(self, state):
        return self.sync_object_full.get_barrier(state.index)

    def producer_tail(self, state):
        """Waits until the consumers released every slot, so that no arrival is still on its way
        when the producer's CTA exits."""
        s = state.clone()
        for _ in range(self.num_stages):
            self.sync_object_empty.wait(s.index, s.phase)
            s.advance()

    # -- consumer --
    def consumer_wait(self, state, try_wait_token=None):
        _maybe(try_wait_token, lambda: self.sync_object_full.wait(state.index, state.phase))

    def consumer_try_wait(self, state):
        return self.sync_object_full.try_wait(state.index, state.phase)

    def consumer_release(self, state):
        self.sync_object_empty.arrive(state.index, self.consumer_mask)

    def consumer_get_barrier(self, state):
        return self.sync_object_empty.get_barrier(state.index)

    # -- handles --
    def make_producer(self):
        return PipelineProducer(self, make_pipeline_state(PipelineUserType.Producer, self.num_stages))

    def make_consumer(self):
        return PipelineConsumer(self, make_pipeline_state(PipelineUserType.Consumer, self.num_stages))

    def make_participants(self):
        return self.make_producer(), self.make_consumer()


@dataclasses.dataclass(frozen=True)
class PipelineTmaAsync(PipelineAsync):
    """The TMA mainloop pipeline: producer_acquire waits for an empty slot and (one elected thread)
    arrives at its full barrier expecting the stage's transaction bytes (the full barrier's
    tx_count), which the TMA copies (issued with producer_get_barrier's barrier) complete;
    producer_commit does nothing. With a cluster, the consumers of every CTA release a slot to
    each CTA whose TMA multicast writes into theirs (the CTAs of the same cluster row or column):
    lane r of each consumer warp arrives at CTA rank r's empty barrier, so consumer_group.size
    must count (CTAs multicasting to a CTA) x (consumer warps), as NVIDIA's examples compute it."""

    is_signalling_thread: Optional[Boolean] = None

    @staticmethod
    def init_empty_barrier_arrive_signal(cta_layout_vmnk, tidx, mcast_mode_mn=(1, 1)):
        """(the CTA rank this thread releases empty slots to, whether it is a signalling thread)."""
        signalling, dst = PipelineTmaAsync._signalling(cta_layout_vmnk, tidx, mcast_mode_mn)
        return dst, signalling

    @staticmethod
    def _signalling(cta_layout_vmnk, tidx, mcast_mode_mn):
        """(is this thread a signalling one, the CTA rank it releases to)."""
        a = _arch()
        cluster_size = cute.size(cta_layout_vmnk)
        lane = tidx % 32
        if cluster_size == 1:
            return lane == 0, None
        # The (m, n) coordinates of each rank, from the static layout (at most 16 CTAs).
        # (a 2-CTA MMA's V mode may be nested, ((2,), M, N, K): count its positions whole)
        shape = tuple(cute.size(e) for e in cta_layout_vmnk.shape)
        mn_of_rank = {}
        for coord in itertools.product(*(range(e) for e in shape)):
            # The CTA's M row in the cluster counts a 2-CTA MMA's pair (V) too: the two CTAs of a
            # pair are different rows, each loading (and releasing) its own half of the tile.
            mn_of_rank[int(cta_layout_vmnk(coord))] = (coord[0] + shape[0] * coord[1], coord[2])

        def coord_of(rank, mode):
            v = Int32(mn_of_rank[0][mode])
            for r in range(1, cluster_size):
                v = Int32(_select(rank == r, Int32(mn_of_rank[r][mode]), v))
            return v

        dst = lane
        me = a.make_warp_uniform(a.block_idx_in_cluster())
        same = Boolean(False)
        if mcast_mode_mn[0]:
            same = same | (coord_of(dst, 0) == coord_of(me, 0))
        if mcast_mode_mn[1]:
            same = same | (coord_of(dst, 1) == coord_of(me, 1))
        return (dst < cluster_size) & same, dst

    @classmethod
    def create(cls, *, num_stages, producer_group, consumer_group, tx_count, barrier_storage=None,
               cta_layout_vmnk=None, tidx=None, mcast_mode_mn=(1, 1), enable_multicast_signaling=False,
               defer_sync=False, name=""):
        num_stages = _static_int(num_stages, "PipelineTmaAsync.create: num_stages")
        if num_stages <= 0:
            raise ValueError(f"PipelineTmaAsync.create: num_stages must be positive, got {num_stages}")
        storage = _barrier_storage(barrier_storage, num_stages, name)
        if cta_layout_vmnk is None:
            cta_layout_vmnk = cute.make_layout((1, 1, 1, 1))
        cluster_size = _static_int(cute.size(cta_layout_vmnk), "PipelineTmaAsync.create: the cluster size")
        full = cls._make_sync_object(storage, num_stages, (PipelineOp.TmaLoad, producer_group), tx_count)
        empty = cls._make_sync_object(storage + num_stages, num_stages, (PipelineOp.AsyncThread, consumer_group))
        if tidx is None:
            tidx, _, _ = _arch().thread_idx()
        dst, signalling = cls.init_empty_barrier_arrive_signal(cta_layout_vmnk, tidx, mcast_mode_mn)
        p = cls(full, empty, num_stages, None, dst, signalling)
        if not defer_sync:
            _sync_after_init(cluster_size)
        return p

    def producer_acquire(self, state, try_acquire_token=None):
        _maybe(try_acquire_token, lambda: self.sync_object_empty.wait(state.index, state.phase))
        self.sync_object_full.arrive(state.index, self.producer_mask)

    def producer_commit(self, state):
        pass  # the TMA copies complete the full barrier's transactions

    def consumer_release(self, state):
        with _arch()._if_region(self.is_signalling_thread):
            self.sync_object_empty.arrive(state.index, self.consumer_mask)


class PipelineTmaStore:
    """Throttles an epilogue's TMA stores through bulk async-groups, without mbarriers:
    producer_commit closes a group of stores, producer_acquire waits until at most
    num_stages - 1 groups still read shared memory (so a buffer may be written again), and
    producer_tail waits for all of them."""

    def __init__(self, num_stages):
        self.num_stages = num_stages

    @classmethod
    def create(cls, *, num_stages, producer_group, **kwargs):
        num_stages = _static_int(num_stages, "PipelineTmaStore.create: num_stages")
        if num_stages <= 0:
            raise ValueError(f"PipelineTmaStore.create: num_stages must be positive, got {num_stages}")
        return cls(num_stages)

    def producer_acquire(self, state=None):
        _arch().cp_async_bulk_wait_group(self.num_stages - 1, read=True)

    def producer_commit(self, state=None):
        _arch().cp_async_bulk_commit_group()

    def producer_tail(self, state=None):
        _arch().cp_async_bulk_wait_group(0, read=True)


class PipelineOrder:
    """A fixed rotation of `group_count` groups through a resource (CUTLASS's OrderedSequenceBarrier):
    group g waits for its turn (wait), uses the resource, then hands it to group g + 1 (arrive).
    One mbarrier per (stage, group), counting `group_size` arrivals."""

    def __init__(self, barriers, depth, length, group_id, state):
        self.barriers = barriers
        self.depth = depth
        self.length = length
        self.group_id = group_id
        self.state = state

    @classmethod
    def create(cls, *, barrier_storage, depth, length, group_id, producer_group, defer_sync=False):
        depth = _static_int(depth, "PipelineOrder.create: depth")
        length = _static_int(length, "PipelineOrder.create: length")
        barriers = MbarrierArray(barrier_storage, depth * length, producer_group)
        if not defer_sync:
            _sync_after_init(1)
        # Group 0 goes first: it waits on phase 1 of its first barrier, which a fresh barrier has
        # completed already; the others wait for phase 0, completed by their predecessor's arrival.
        if isinstance(group_id, int):
            phase = 1 if group_id == 0 else 0
        else:
            phase = _select(as_numeric(group_id) == 0, Int32(1), Int32(0))
        return cls(barriers, depth, length, group_id, PipelineState(depth, 0, 0, phase))

    def get_barrier_for_current_stage_idx(self, group_id):
        return self.barriers.get_barrier(self.state.index * self.length + group_id)

    def arrive(self, state=None):
        """Hands the current stage to the next group and moves on. With a `state` (the explicit form
        NVIDIA's GeForce ping-pong GEMMs use: `state = order.arrive(state)`), that state's stage is
        handed on and the next state returned; without, the barrier's own state moves."""
        nxt = (self.group_id + 1) % self.length
        if state is None:
            self.barriers.arrive(self.state.index * self.length + nxt)
            self.state.advance()
            return None
        self.barriers.arrive(state.index * self.length + nxt)
        following = state.clone()
        following.advance()
        return following

    def wait(self, state=None):
        """Waits for this group's turn at the stage of `state` (the barrier's own state when none)."""
        state = self.state if state is None else state
        self.barriers.wait(state.index * self.length + self.group_id, state.phase)

    # Carried through dynamic loops by its state (the barriers and the group are fixed).
    def __extract_mlir_values__(self):
        return self.state.__extract_mlir_values__()

    def __new_from_mlir_values__(self, values):
        return PipelineOrder(self.barriers, self.depth, self.length, self.group_id,
                             self.state.__new_from_mlir_values__(values))


class _OnPipelineState:
    """A pipeline and one PipelineState over it; carried through dynamic loops by the state."""

    def __init__(self, pipeline, state):
        self._pipeline = pipeline
        self._state = state

    @property
    def index(self):
        return self._state.index

    @property
    def count(self):
        return self._state.count

    def __extract_mlir_values__(self):
        return self._state.__extract_mlir_values__()

    def __new_from_mlir_values__(self, values):
        return type(self)(self._pipeline, self._state.__new_from_mlir_values__(values))


class _PipelineRole(_OnPipelineState):
    """The common part of the producer's and the consumer's handles on a pipeline."""
    _user_type = None

    @property
    def state(self):
        return self._state

    def reset(self):
        """Restarts `count` (the handles' `count` numbers the slots of one work tile) and keeps the
        slot index and phase: the barriers keep counting phases across tiles, so a cursor moved back
        to slot 0 would wait on a slot and parity that no longer match them."""
        self._state.reset_count()

    def advance(self):
        self._state.advance()

    def clone(self):
        """A second handle on the same pipeline starting at this one's slot and phase, moving on
        its own (NVIDIA's mixed-input prefill releases slots through a clone of the consumer that
        waited on them)."""
        return type(self)(self._pipeline, self._state.clone())


class PipelineProducer(_PipelineRole):
    """The producer's handle on a pipeline, with its own PipelineState."""
    _user_type = PipelineUserType.Producer

    class ImmutableResourceHandle(_OnPipelineState):
        def get_barrier(self):
            return self._pipeline.producer_get_barrier(self._state)

        @property
        def barrier(self):
            """The full barrier of the slot (the `tma_bar_ptr` of the TMA copies that fill it)."""
            return self.get_barrier()

        def commit(self):
            self._pipeline.producer_commit(self._state)

    def acquire(self, try_acquire_token=None):
        self._pipeline.producer_acquire(self._state, try_acquire_token)
        return self.ImmutableResourceHandle(self._pipeline, self._state.clone())

    def try_acquire(self):
        return self._pipeline.producer_try_acquire(self._state)

    def acquire_and_advance(self, try_acquire_token=None):
        handle = self.acquire(try_acquire_token)
        self._state.advance()
        return handle

    def commit(self, handle=None):
        self._pipeline.producer_commit(handle._state if handle is not None else self._state)

    def tail(self):
        self._pipeline.producer_tail(self._state)

    # NVIDIA's Blackwell fmha.py reads the handle's own PipelineState by the private name NVIDIA's
    # class gives it (a double-underscore attribute, name-mangled): it is `state`.
    _PipelineProducer__state = _PipelineRole.state


class PipelineConsumer(_PipelineRole):
    """The consumer's handle on a pipeline, with its own PipelineState."""
    _user_type = PipelineUserType.Consumer

    class ImmutableResourceHandle(_OnPipelineState):
        def release(self):
            self._pipeline.consumer_release(self._state)

    def wait(self, try_wait_token=None):
        self._pipeline.consumer_wait(self._state, try_wait_token)
        return self.ImmutableResourceHandle(self._pipeline, self._state.clone())

    def try_wait(self):
        return self._pipeline.consumer_try_wait(self._state)

    def wait_and_advance(self, try_wait_token=None):
        handle = self.wait(try_wait_token)
        self._state.advance()
        return handle

    def release(self, handle=None):
        self._pipeline.consumer_release(handle._state if handle is not None else self._state)

    _PipelineConsumer__state = _PipelineRole.state  # as PipelineProducer's
