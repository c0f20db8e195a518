"""cutlass.pipeline.NamedBarrier: one of the 16 hardware barriers of a CTA, counting a fixed
number of threads (`bar.sync id, count` / `bar.arrive id, count`)."""
import warnings
from dataclasses import dataclass

from .._dsl import context
from .._dsl.numeric import Numeric, as_numeric


@dataclass(frozen=True)
class NamedBarrier:
    barrier_id: int
    num_threads: int

    def __post_init__(self):
        if isinstance(self.barrier_id, int) and not 0 <= self.barrier_id <= 15:
            raise ValueError(f"NamedBarrier: barrier_id must be in [0, 15], got {self.barrier_id}")

    def _emit(self, arrive_only):
        id_ = self.barrier_id if isinstance(self.barrier_id, Numeric) else as_numeric(self.barrier_id)
        n = self.num_threads if isinstance(self.num_threads, Numeric) else as_numeric(self.num_threads)
        context.tracer().named_barrier(id_._n, n._n, arrive_only)

    def arrive_and_wait(self, *, loc=None, ip=None):
        """`bar.sync id, num_threads`: arrive, then wait until num_threads threads arrived."""
        self._emit(False)

    sync = arrive_and_wait

    def arrive(self, *, loc=None, ip=None):
        """`bar.arrive id, num_threads`: count this warp's arrival without waiting."""
        self._emit(True)

    def arrive_unaligned(self, *, loc=None, ip=None):
        self._emit(True)

    def wait(self, *, loc=None, ip=None):
        """A named barrier has no wait-only form: waits by arriving and waiting (as the CuTe DSL does)."""
        warnings.warn("NamedBarrier.wait() arrives and waits (bar.sync); use arrive_and_wait()", stacklevel=2)
        self._emit(False)

    def get_barrier(self):
        return self.barrier_id
