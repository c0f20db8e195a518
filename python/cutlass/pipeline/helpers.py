"""The building blocks of cutlass.pipeline: who takes part (Agent, CooperativeGroup), the
circular-buffer cursor (PipelineState), arrays of mbarriers (MbarrierArray) and the
initialisation handshake (pipeline_init_arrive / pipeline_init_wait). Library code written with
the DSL's ops, as NVIDIA's is; the semantics follow CUTLASS's sm90_pipeline.hpp."""
import enum

from .. import _core
from .._dsl.numeric import Boolean, Int32, Int64, Numeric, as_numeric, wrap
from .._dsl.carry import extract_mlir_values, new_from_mlir_values
from ..cute import arch as _cute_arch
from ..cute.nvgpu import tcgen05 as _tcgen05
from ..cute.layout import size as _layout_size
from .named_barrier import NamedBarrier


class Agent(enum.Enum):
    """The unit that arrives at a pipeline barrier."""
    Thread = enum.auto()
    Warp = enum.auto()
    ThreadBlock = enum.auto()
    ThreadBlockCluster = enum.auto()


class CooperativeGroup:
    """`size` agents taking part in one side of a pipeline: a barrier of the pipeline completes a
    phase when `size` arrivals were made (one per thread for Agent.Thread, one per warp for
    Agent.Warp)."""

    def __init__(self, agent, size=1, alignment=None):
        if not isinstance(agent, Agent):
            raise TypeError(f"CooperativeGroup: agent must be a pipeline.Agent, got {agent!r}")
        if isinstance(size, Numeric):
            if not size.is_static():
                raise ValueError("CooperativeGroup: size must be known at compile time")
            size = size.value
        # A whole-number float counts (fmha.py passes 128 / 32, a true division).
        if isinstance(size, float) and size.is_integer():
            size = int(size)
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError(f"CooperativeGroup: size must be a positive int, got {size!r}")
        if alignment is not None:
            import warnings
            warnings.warn("CooperativeGroup: alignment is deprecated and ignored", DeprecationWarning, stacklevel=2)
        self.agent = agent
        self.size = size

    def __repr__(self):
        return f"CooperativeGroup({self.agent.name}, {self.size})"


class PipelineUserType(enum.Enum):
    Producer = enum.auto()
    Consumer = enum.auto()
    ProducerConsumer = enum.auto()


def _select(cond, a, b):
    return wrap(_core.select(as_numeric(cond)._n, as_numeric(a)._n, as_numeric(b)._n))


class PipelineState:
    """The cursor of a circular buffer of `stages` slots: `index` (the slot), `phase` (flips each
    time the index wraps) and `count` (slots passed). Carried through dynamic loops."""

    def __init__(self, stages, count, index, phase):
        # 0 stages is a placeholder state that is never advanced (quack's non-persistent tile
        # scheduler carries one).
        if not isinstance(stages, int) or stages < 0:
            raise ValueError(f"PipelineState: stages must be a non-negative int, got {stages!r}")
        self._stages = stages
        self._count = Int32(count)
        self._index = Int32(index)
        self._phase = Int32(phase)

    @property
    def stages(self):
        return self._stages

    @property
    def index(self):
        return self._index

    @property
    def count(self):
        return self._count

    @property
    def phase(self):
        return self._phase

    def clone(self):
        return PipelineState(self._stages, self._count, self._index, self._phase)

    def reset_count(self):
        self._count = Int32(0)

    def advance(self):
        """The next slot: index + 1, wrapping to 0 with the phase flipped."""
        self._count = self._count + 1
        nxt = self._index + 1
        wrapped = nxt == self._stages
        self._index = Int32(_select(wrapped, Int32(0), nxt))
        self._phase = Int32(_select(wrapped, self._phase ^ 1, self._phase))

    def reverse(self):
        """The previous slot: index - 1, wrapping to stages - 1 with the phase flipped."""
        self._count = self._count - 1
        prv = self._index - 1
        wrapped = prv == -1
        self._index = Int32(_select(wrapped, Int32(self._stages - 1), prv))
        self._phase = Int32(_select(wrapped, self._phase ^ 1, self._phase))

    def __extract_mlir_values__(self):
        return [self._count, self._index, self._phase]

    def __new_from_mlir_values__(self, values):
        count, index, phase = (wrap(v) for v in values)
        return PipelineState(self._stages, count, index, phase)

    def __repr__(self):
        return f"PipelineState(stages={self._stages}, count={self._count}, index={self._index}, phase={self._phase})"


def make_pipeline_state(type, stages):  # noqa: A002 - NVIDIA's parameter name
    """A producer starts at phase 1 (its first wait on an empty buffer passes at once), a consumer
    at phase 0 (it waits for the first fill)."""
    if type in (PipelineUserType.Producer, PipelineUserType.ProducerConsumer):
        return PipelineState(stages, 0, 0, 1)
    if type is PipelineUserType.Consumer:
        return PipelineState(stages, 0, 0, 0)
    raise ValueError(f"make_pipeline_state: unknown PipelineUserType {type!r}")


def _arch():
    return _cute_arch


def _warp_idx():
    a = _arch()
    return a.make_warp_uniform(a.warp_idx())


class PipelineOp(enum.Enum):
    """What completes a pipeline barrier's phase: thread arrivals (AsyncThread), a TMA load's
    bytes (TmaLoad: the arrival also expects the stage's transaction bytes), Blackwell's tcgen05
    MMA commits (TCGen05Mma: the arrival is a tcgen05.commit, made when the MMAs issued before it
    completed) and cluster launch control responses (ClcLoad: like TmaLoad, the response's 16
    bytes complete the transaction)."""
    AsyncThread = enum.auto()
    TCGen05Mma = enum.auto()
    TmaLoad = enum.auto()
    ClcLoad = enum.auto()
    TmaStore = enum.auto()
    Composite = enum.auto()
    AsyncLoad = enum.auto()


class MbarrierArray:
    """`num_stages` mbarriers (Int64 each) in shared memory from `barrier_storage`, each counting
    `group.size` arrivals per phase (plus `tx_count` bytes for a TmaLoad barrier). `agent` is
    (PipelineOp, CooperativeGroup), or a CooperativeGroup alone (thread arrivals). Warp 0
    initialises the barriers when the array is made (mbarrier_init)."""

    def __init__(self, barrier_storage, num_stages, agent, tx_count=0):
        self.op_type, self.cg = agent if isinstance(agent, tuple) else (PipelineOp.AsyncThread, agent)
        if not isinstance(self.op_type, PipelineOp) or not isinstance(self.cg, CooperativeGroup):
            raise TypeError(f"MbarrierArray: agent must be (PipelineOp, CooperativeGroup), got {agent!r}")
        if self.op_type not in (PipelineOp.AsyncThread, PipelineOp.TmaLoad, PipelineOp.TCGen05Mma,
                                PipelineOp.ClcLoad):
            raise NotImplementedError(f"MbarrierArray: {self.op_type} barriers are not available (the pipelines "
                                      "use AsyncThread, TmaLoad, TCGen05Mma and ClcLoad)")
        self.barrier_storage = barrier_storage
        self.mbarrier_base = barrier_storage
        self.num_stages = num_stages
        self.arrive_count = self.cg.size
        self.tx_count = tx_count
        if self.num_stages <= 0:
            raise ValueError("MbarrierArray: num_stages must be positive")
        if self.op_type in (PipelineOp.TmaLoad, PipelineOp.ClcLoad) and self.tx_count < 0:
            raise ValueError("MbarrierArray: tx_count must not be negative for a TMA barrier")
        self.mbarrier_init()

    @property
    def agent(self):
        return self.cg.agent

    def mbarrier_init(self):
        """Warp 0 initialises every barrier (one elected lane)."""
        a = _arch()
        with a._if_region(_warp_idx() == 0):
            with a.elect_one():
                for i in range(self.num_stages):
                    a.mbarrier_init(self.get_barrier(i), self.arrive_count)

    def get_barrier(self, index):
        return self.mbarrier_base + index

    def arrive(self, index, dst_rank=None, cta_group=None):
        """One arrival per agent: every calling thread (Agent.Thread), or one lane of each calling
        warp (Agent.Warp); with `dst_rank`, at the same barrier of that CTA of the cluster. A
        TmaLoad barrier's arrival (one elected lane) also expects tx_count bytes. A TCGen05Mma
        barrier's arrival is a tcgen05.commit: `dst_rank` is then the multicast mask of the CTAs
        whose barrier it arrives at (None: this CTA's), `cta_group` the MMAs' CtaGroup."""
        a = _arch()
        if self.op_type is PipelineOp.TCGen05Mma:
            # The MMA warp releases as a whole: tcgen05.commit is issued by one elected lane.
            _tcgen05.commit(self.get_barrier(index), dst_rank, _tcgen05.CtaGroup.ONE if cta_group is None else cta_group)
        elif self.op_type in (PipelineOp.TmaLoad, PipelineOp.ClcLoad):
            self.arrive_and_expect_tx(index, self.tx_count)
        elif self.agent is Agent.Warp:
            with a.elect_one():
                self.arrive_mbarrier(index, dst_rank)
        else:
            self.arrive_mbarrier(index, dst_rank)

    def arrive_mbarrier(self, index, dst_rank=None):
        """One thread arrival at barrier `index` (of CTA `dst_rank` of the cluster, else this CTA's),
        whatever completes the barrier otherwise (CUTLASS's ClusterBarrier::arrive(cta_id)): a
        2-CTA MMA's peer forwards its own producers' completion to the leader CTA this way."""
        _arch().mbarrier_arrive(self.get_barrier(index), dst_rank)

    def arrive_and_expect_tx(self, index, tx_count=None):
        a = _arch()
        with a.elect_one():
            a.mbarrier_arrive_and_expect_tx(self.get_barrier(index), self.tx_count if tx_count is None else tx_count)

    def wait(self, index, phase):
        _arch().mbarrier_wait(self.get_barrier(index), phase)

    def try_wait(self, index, phase):
        return _arch().mbarrier_try_wait(self.get_barrier(index), phase)

    # Carried through kernels and dynamic control flow by its base pointer.
    def __extract_mlir_values__(self):
        return extract_mlir_values(self.barrier_storage)

    def __new_from_mlir_values__(self, values):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.barrier_storage = new.mbarrier_base = new_from_mlir_values(self.barrier_storage, values)
        return new


def _cluster_size(cluster_shape_mn):
    """The CTAs of a cluster given as (m, n) extents or as the cluster's layout (cta_layout_vmnk)."""
    if cluster_shape_mn is None:
        return 1
    if hasattr(cluster_shape_mn, "shape"):
        return _layout_size(cluster_shape_mn)
    n = 1
    for c in cluster_shape_mn:
        n *= c
    return n


def pipeline_init_arrive(cluster_shape_mn=None, is_relaxed=False):
    """After the barriers' initialisation: make it visible, and in a cluster arrive at the cluster
    barrier (the matching pipeline_init_wait waits) so that no CTA uses a peer's barrier early."""
    a = _arch()
    a.mbarrier_init_fence()
    if _cluster_size(cluster_shape_mn) > 1:
        if is_relaxed:
            a.cluster_arrive_relaxed()
        else:
            a.cluster_arrive()


def pipeline_init_wait(cluster_shape_mn=None):
    a = _arch()
    if _cluster_size(cluster_shape_mn) > 1:
        a.cluster_wait()
    else:
        a.sync_threads()


def agent_sync(group, is_relaxed=False):
    """Every member of `group` meets: the CTA (Agent.Thread / Warp / ThreadBlock) or the cluster."""
    a = _arch()
    if group.agent is Agent.ThreadBlockCluster:
        if is_relaxed:
            a.cluster_arrive_relaxed()
        else:
            a.cluster_arrive()
        a.cluster_wait()
    else:
        a.sync_threads()


def sync(barrier_id=0):
    """A barrier over the whole CTA (`bar.sync barrier_id`)."""
    a = _arch()
    if isinstance(barrier_id, int) and barrier_id == 0:
        a.sync_threads()
    else:
        x, y, z = a.block_dim()
        NamedBarrier(barrier_id, x * y * z).arrive_and_wait()


def arrive(barrier_id, num_threads):
    NamedBarrier(barrier_id, num_threads).arrive()


arrive_unaligned = arrive


def arrive_and_wait(barrier_id, num_threads):
    NamedBarrier(barrier_id, num_threads).arrive_and_wait()


def wait(barrier_id=0, num_threads=None):
    if num_threads is None:
        sync(barrier_id)
    else:
        arrive_and_wait(barrier_id, num_threads)


wait_unaligned = wait
