"""The dynamic persistent tile scheduler of Blackwell kernels (`cutlass.utils.ClcDynamicPersistentTileScheduler`,
`ClcDynamicPersistentTileSchedulerParams`), library code over cluster launch control.

The kernel is launched with one CTA per output tile (the grid covers the problem, rounded up to
whole clusters). Each cluster first does the tile of its own block index; then its scheduler warp
asks the hardware to cancel the launch of a cluster that has not started yet
(`advance_to_next_work(mbarrier)`: cute.arch.issue_clc_query) and every warp of the cluster reads
the answer (`get_current_work()`: cute.arch.clc_response), taking over the canceled cluster's
tile, until no cluster is left. A cluster that started does its own tile; one canceled never
starts; so every tile is done exactly once however many clusters run at a time. The tile index is
(m, n, l) in CTA tiles, as the static scheduler's: the canceled cluster's first ctaid plus this
CTA's coordinate in its cluster.

Which cluster a query takes is the hardware's (launch) order, so swizzle_size and raster_along_m
are kept for the static scheduler's interface and do not change the order."""
from .._dsl.carry import extract_mlir_values, new_from_mlir_values
from .._dsl.errors import DSLUserCodeError
from .._dsl.numeric import Boolean, Int32
from ..cute import arch as _arch
from .static_persistent_tile_scheduler import (PersistentTileSchedulerParams, WorkTileInfo, _as_index, _ceil_div,
                                               _static_int)


class ClcDynamicPersistentTileSchedulerParams(PersistentTileSchedulerParams):
    """The problem's extent in CTA tiles (m, n, l) and the cluster shape (k mode 1); swizzle_size
    and raster_along_m as for PersistentTileSchedulerParams (they do not change a dynamic order)."""

    def get_grid_shape(self, *args, loc=None, ip=None):
        return ClcDynamicPersistentTileScheduler.get_grid_shape(self)

    def __new_from_mlir_values__(self, values):
        new = super().__new_from_mlir_values__(values)
        new.__class__ = ClcDynamicPersistentTileSchedulerParams
        return new


class ClcDynamicPersistentTileScheduler:
    """One CTA's view of the dynamic schedule: `initial_work_tile_info()`, then per tile the
    scheduler warp's `advance_to_next_work(mbarrier)` and every warp's `get_current_work()` once the
    PipelineClcFetchAsync stage is full."""

    def __init__(self, params, clc_response_ptr, block_idx, cta_id_in_cluster, num_tiles_executed):
        self.params = params
        self.clc_response_ptr = clc_response_ptr
        self._block_idx = tuple(block_idx)
        self.cta_id_in_cluster = tuple(cta_id_in_cluster)
        self._num_tiles_executed = num_tiles_executed

    @staticmethod
    def get_grid_shape(params, *args, loc=None, ip=None):
        """One CTA per tile, rounded up to whole clusters: (m, n, l) CTAs."""
        if not isinstance(params, PersistentTileSchedulerParams):
            raise DSLUserCodeError(f"get_grid_shape takes ClcDynamicPersistentTileSchedulerParams, got "
                                   f"{type(params).__name__}", code="TYPE_MISMATCH")
        m, n, l = params.problem_shape_ntile_mnl
        cm, cn = params.cluster_shape_mn
        grid_m = _ceil_div(m, cm) * cm
        grid_n = _ceil_div(n, cn) * cn
        return (grid_m if _static_int(grid_m) else Int32(grid_m), grid_n if _static_int(grid_n) else Int32(grid_n),
                l if _static_int(l) else Int32(l))

    @staticmethod
    def create(params, block_idx, grid_dim, clc_response_ptr, *, loc=None, ip=None):
        """The scheduler of the calling block (`block_idx`, `grid_dim` from cute.arch); the queries'
        responses land at `clc_response_ptr` (16 bytes of shared memory, 16-byte aligned)."""
        if not isinstance(params, PersistentTileSchedulerParams):
            raise DSLUserCodeError(f"create takes ClcDynamicPersistentTileSchedulerParams, got {type(params).__name__}",
                                   code="TYPE_MISMATCH")
        cm, cn = params.cluster_shape_mn
        bx, by, bz = (_as_index(v) for v in block_idx)
        return ClcDynamicPersistentTileScheduler(params, clc_response_ptr, (Int32(bx), Int32(by), Int32(bz)),
                                                 (Int32(bx % cm), Int32(by % cn)), Int32(0))

    def initial_work_tile_info(self, *, loc=None, ip=None):
        """The tile of the block's own index (a launched cluster does its own tile first)."""
        return WorkTileInfo(self._block_idx, Boolean(True))

    def advance_to_next_work(self, mbarrier_addr, *, loc=None, ip=None):
        """The scheduler warp (of the cluster's first CTA) asks for the next cluster: one thread
        issues the query, whose response lands in every CTA of the cluster and completes the
        transaction bytes of `mbarrier_addr`'s barrier (PipelineClcFetchAsync.producer_get_barrier)."""
        with _arch.elect_one():
            _arch.issue_clc_query(mbarrier_addr, self.clc_response_ptr)

    def get_current_work(self, *, loc=None, ip=None):
        """The tile of the last response (after its barrier completed): the canceled cluster's tile,
        or an invalid tile when none was left."""
        x, y, z, valid = _arch.clc_response(self.clc_response_ptr)
        # The response is read by the generic proxy after the async proxy wrote it.
        _arch.fence_view_async_shared()
        self._num_tiles_executed = Int32(self._num_tiles_executed + 1)
        tile = (Int32(x + self.cta_id_in_cluster[0]), Int32(y + self.cta_id_in_cluster[1]), Int32(z))
        return WorkTileInfo(tile, Boolean(valid != 0))

    @property
    def num_tiles_executed(self):
        return self._num_tiles_executed

    def _fields(self):
        return (self.params, self.clc_response_ptr, self._block_idx, self.cta_id_in_cluster, self._num_tiles_executed)

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._fields())

    def __new_from_mlir_values__(self, values):
        return ClcDynamicPersistentTileScheduler(*new_from_mlir_values(self._fields(), values))
