"""`cutlass.utils.StaticPersistentRuntimeTileScheduler`: persistent tile scheduling where the number
of tiles along one mode is only known as the kernel runs (a grouped GEMM whose groups' extents
along N are run-time data, each padded to whole tiles). Library code over DSL integer operations.

Cluster `c` of `P` persistent clusters takes the work units c, c + P, c + 2P, ... of a linear
order in which the *inner* mode (M for inner_mode 0, N for 1) varies fastest over its extent in
clusters (from PersistentTileSchedulerParams) and the other mode counts up without bound; L is 0.
A work tile's `tile_idx` is the cluster's coordinate (m, n, l) in clusters of tiles, and every
work tile is valid: the kernel ends its loop when the run-time data say the tiles are used up.
The grid is (cluster_m, cluster_n, persistent clusters), as StaticPersistentTileScheduler's."""
from .._dsl.carry import extract_mlir_values, new_from_mlir_values
from .._dsl.errors import DSLUserCodeError
from .._dsl.numeric import Boolean, Int32
from .static_persistent_tile_scheduler import WorkTileInfo, _persistent_clusters, _PersistentWorkCursor


class StaticPersistentRuntimeTileScheduler(_PersistentWorkCursor):
    """Iterates one cluster's work tiles: `initial_work_tile_info()`, then `advance_to_next_work()`
    / `get_current_work()` for as long as the kernel has work."""

    def __init__(self, params, inner_mode, num_persistent_clusters, current_work_linear_idx, num_tiles_executed):
        self.params = params
        self.inner_mode = inner_mode
        self.num_persistent_clusters = num_persistent_clusters
        self._current_work_linear_idx = current_work_linear_idx
        self._num_tiles_executed = num_tiles_executed

    @staticmethod
    def create(params, block_idx, grid_dim, inner_mode=0, *, loc=None, ip=None):
        """The scheduler of the calling block (`block_idx`, `grid_dim` from cute.arch)."""
        num_persistent_clusters, cluster_linear_idx, _, _ = _persistent_clusters(params, block_idx, grid_dim)
        if inner_mode not in (0, 1):
            raise DSLUserCodeError(f"inner_mode must be 0 (M) or 1 (N), got {inner_mode!r}", code="VALUE_INVALID")
        return StaticPersistentRuntimeTileScheduler(params, inner_mode, num_persistent_clusters, cluster_linear_idx,
                                                    Int32(0))

    def get_current_work(self, *, loc=None, ip=None):
        inner_extent = self.params.problem_shape_ncluster_mnl[self.inner_mode]
        idx = self._current_work_linear_idx
        inner, outer = Int32(idx % inner_extent), Int32(idx // inner_extent)
        m, n = (inner, outer) if self.inner_mode == 0 else (outer, inner)
        return WorkTileInfo((m, n, Int32(0)), Boolean(True))

    def _fields(self):
        return (self.params, self.num_persistent_clusters, self._current_work_linear_idx, self._num_tiles_executed)

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._fields())

    def __new_from_mlir_values__(self, values):
        params, clusters, idx, executed = new_from_mlir_values(self._fields(), values)
        return StaticPersistentRuntimeTileScheduler(params, self.inner_mode, clusters, idx, executed)
