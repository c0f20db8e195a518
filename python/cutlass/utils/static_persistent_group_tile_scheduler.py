"""The persistent tile scheduler of grouped GEMMs (`cutlass.utils.StaticPersistentGroupTileScheduler`):
StaticPersistentTileScheduler's linear order over the clusters of all groups (the params' third mode
counts them), each work unit mapped to its group and CTA tile by GroupedGemmTileSchedulerHelper.
Library code over DSL operations."""
from .._dsl.carry import extract_mlir_values, new_from_mlir_values
from .._dsl.numeric import Int32
from .grouped_gemm_tile_scheduler_helper import GroupedGemmTileSchedulerHelper
from .static_persistent_tile_scheduler import StaticPersistentTileScheduler, WorkTileInfo


class GroupedWorkTileInfo(WorkTileInfo):
    """A work tile of a grouped GEMM: the scheduler's (m, n, linear cluster) index, whether it is
    real work, and `group_search_result` (the group, the CTA tile in it and the group's extents)."""

    def __init__(self, tile_idx, is_valid_tile, group_search_result):
        super().__init__(tile_idx, is_valid_tile)
        self.group_search_result = group_search_result

    def __extract_mlir_values__(self):
        return super().__extract_mlir_values__() + extract_mlir_values(self.group_search_result)

    def __new_from_mlir_values__(self, values):
        n = len(super().__extract_mlir_values__())
        base = WorkTileInfo.__new_from_mlir_values__(self, values[:n])
        return GroupedWorkTileInfo(base.tile_idx, base.is_valid_tile,
                                   new_from_mlir_values(self.group_search_result, values[n:]))


class StaticPersistentGroupTileScheduler:
    """`create(params, block_idx, grid_dim, cluster_tile_shape_mnk, search_state, group_count,
    problem_sizes_mnkl)`, then `initial_work_tile_info()` / `advance_to_next_work()` /
    `get_current_work()` as for StaticPersistentTileScheduler; `problem_sizes_mnkl` is the Int32
    (group_count, 4) tensor of the groups' (M, N, K, L)."""

    def __init__(self, tile_sched, group_helper, problem_sizes_mnkl):
        self._tile_sched = tile_sched
        self._group_helper = group_helper
        self._problem_sizes_mnkl = problem_sizes_mnkl

    @staticmethod
    def create(params, block_idx, grid_dim, cluster_tile_shape_mnk, search_state, group_count, problem_sizes_mnkl, *,
               loc=None, ip=None):
        tile_sched = StaticPersistentTileScheduler.create(params, block_idx, grid_dim)
        helper = GroupedGemmTileSchedulerHelper(group_count, params, cluster_tile_shape_mnk, search_state)
        return StaticPersistentGroupTileScheduler(tile_sched, helper, problem_sizes_mnkl)

    @staticmethod
    def get_grid_shape(params, max_active_clusters, *, loc=None, ip=None):
        return StaticPersistentTileScheduler.get_grid_shape(params, max_active_clusters)

    def get_current_work(self, *, loc=None, ip=None):
        base = self._tile_sched.get_current_work()
        # Past the last cluster the group search would look beyond the last group: search for
        # cluster 0 instead; the result of an invalid tile is never read.
        z = Int32(base.tile_idx[2]) * Int32(base.is_valid_tile)
        result = self._group_helper.delinearize_z((base.tile_idx[0], base.tile_idx[1], z), self._problem_sizes_mnkl)
        return GroupedWorkTileInfo(base.tile_idx, base.is_valid_tile, result)

    def initial_work_tile_info(self, *, loc=None, ip=None):
        return self.get_current_work()

    def advance_to_next_work(self, *, advance_count=1, loc=None, ip=None):
        self._tile_sched.advance_to_next_work(advance_count=advance_count)

    @property
    def num_tiles_executed(self):
        return self._tile_sched.num_tiles_executed

    def __extract_mlir_values__(self):
        return extract_mlir_values((self._tile_sched, self._group_helper))

    def __new_from_mlir_values__(self, values):
        n = len(extract_mlir_values(self._tile_sched))
        return StaticPersistentGroupTileScheduler(new_from_mlir_values(self._tile_sched, values[:n]),
                                                  new_from_mlir_values(self._group_helper, values[n:]),
                                                  self._problem_sizes_mnkl)
