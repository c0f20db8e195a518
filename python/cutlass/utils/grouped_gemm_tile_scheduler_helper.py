"""Grouped GEMM tile scheduling (`cutlass.utils.GroupedGemmTileSchedulerHelper`,
`create_initial_search_state`), library code over DSL operations.

A grouped GEMM's persistent scheduler counts clusters of tiles over all groups in one linear
order: the clusters of group 0 (its M x N cluster tiles, in the scheduler's raster order), then
group 1's, and so on, as CUTLASS's grouped scheduler does (sm90_tile_scheduler_group.hpp). The
persistent scheduler hands a CTA the linear index in the tile coordinate's third mode (the
kernel's PersistentTileSchedulerParams have the shape (cluster_m, cluster_n, total clusters)).
`delinearize_z` finds the group holding that index and the CTA tile inside it. A CTA's linear
indices only grow, so the search resumes from where the previous one stopped (the search state)
instead of from group 0."""
from .. import cute
from .._dsl.carry import extract_mlir_values, new_from_mlir_values
from .._dsl.errors import DSLUserCodeError
from .._dsl.numeric import Int32
from .static_persistent_tile_scheduler import PersistentTileSchedulerParams


class GroupSearchState:
    """Where the last search stopped: a group and the clusters of all groups before it."""

    def __init__(self, group_idx, clusters_before_group):
        self.group_idx = group_idx
        self.clusters_before_group = clusters_before_group

    def __extract_mlir_values__(self):
        return extract_mlir_values((self.group_idx, self.clusters_before_group))

    def __new_from_mlir_values__(self, values):
        return GroupSearchState(*new_from_mlir_values((self.group_idx, self.clusters_before_group), values))


def create_initial_search_state():
    """The search state of a CTA that has not looked up any tile yet (group 0)."""
    return GroupSearchState(Int32(0), Int32(0))


class GroupSearchResult:
    """The group of a work tile and the tile inside it: the CTA tile's (m, n) index in the
    group's output, the group's problem extents and its number of k tiles."""

    _FIELDS = ("group_idx", "cta_tile_idx_m", "cta_tile_idx_n", "problem_shape_m", "problem_shape_n",
               "problem_shape_k", "cta_tile_count_k")

    def __init__(self, group_idx, cta_tile_idx_m, cta_tile_idx_n, problem_shape_m, problem_shape_n, problem_shape_k,
                 cta_tile_count_k):
        self.group_idx = group_idx
        self.cta_tile_idx_m = cta_tile_idx_m
        self.cta_tile_idx_n = cta_tile_idx_n
        self.problem_shape_m = problem_shape_m
        self.problem_shape_n = problem_shape_n
        self.problem_shape_k = problem_shape_k
        self.cta_tile_count_k = cta_tile_count_k

    def _values(self):
        return tuple(getattr(self, f) for f in self._FIELDS)

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._values())

    def __new_from_mlir_values__(self, values):
        return GroupSearchResult(*new_from_mlir_values(self._values(), values))


def _ceil_div(a, b):
    return (a + b - 1) // b


class GroupedGemmTileSchedulerHelper:
    """Maps the persistent scheduler's linear cluster index to (group, CTA tile) for `group_count`
    GEMMs whose (M, N, K, L) extents are the rows of an Int32 tensor of shape (group_count, 4)."""

    def __init__(self, group_count, tile_sched_params, cluster_tile_shape_mnk, search_state, *, loc=None, ip=None):
        if isinstance(group_count, bool) or not isinstance(group_count, int) or group_count < 1:
            raise DSLUserCodeError(f"group_count must be a positive static int, got {group_count!r}",
                                   code="VALUE_INVALID")
        if not isinstance(tile_sched_params, PersistentTileSchedulerParams):
            raise DSLUserCodeError("GroupedGemmTileSchedulerHelper takes PersistentTileSchedulerParams, got "
                                   f"{type(tile_sched_params).__name__}", code="TYPE_MISMATCH")
        tile = tuple(cluster_tile_shape_mnk)
        if len(tile) != 3 or not all(isinstance(t, int) and not isinstance(t, bool) and t > 0 for t in tile):
            raise DSLUserCodeError(f"cluster_tile_shape_mnk must be 3 positive static ints, got {tile!r}",
                                   code="VALUE_INVALID")
        if not isinstance(search_state, GroupSearchState):
            raise DSLUserCodeError("search_state must come from create_initial_search_state()", code="TYPE_MISMATCH")
        self.group_count = group_count
        self.params = tile_sched_params
        self.cluster_tile_shape_mnk = tile
        self.search_state = search_state

    def _clusters_in_group(self, problem_shape_mnkl, group_idx):
        tm, tn, _ = self.cluster_tile_shape_mnk
        return (_ceil_div(problem_shape_mnkl[group_idx, 0], tm) * _ceil_div(problem_shape_mnkl[group_idx, 1], tn)
                * problem_shape_mnkl[group_idx, 3])

    @cute.jit
    def delinearize_z(self, cta_tile_coord, problem_shape_mnkl: cute.Tensor, *, loc=None, ip=None):
        """The group and CTA tile of the work tile `cta_tile_coord` (m, n: the CTA inside its
        cluster; z: the linear cluster index over all groups). Past the last cluster the last
        group is returned (with a cluster index beyond it); callers look only at valid tiles."""
        z = Int32(cta_tile_coord[2])
        group_idx = self.search_state.group_idx
        before = self.search_state.clusters_before_group
        clusters = self._clusters_in_group(problem_shape_mnkl, group_idx)
        while group_idx < self.group_count - 1 and z >= before + clusters:
            before = before + clusters
            group_idx = group_idx + 1
            clusters = self._clusters_in_group(problem_shape_mnkl, group_idx)
        self.search_state = GroupSearchState(group_idx, before)

        m = problem_shape_mnkl[group_idx, 0]
        n = problem_shape_mnkl[group_idx, 1]
        k = problem_shape_mnkl[group_idx, 2]
        tm, tn, tk = self.cluster_tile_shape_mnk
        clusters_m, clusters_n = _ceil_div(m, tm), _ceil_div(n, tn)
        local = z - before
        per_l = clusters_m * clusters_n
        in_l = local % per_l
        if self.params.raster_along_m:  # a static bool: one branch is traced
            cluster_m, cluster_n = in_l % clusters_m, in_l // clusters_m
        else:
            cluster_m, cluster_n = in_l // clusters_n, in_l % clusters_n
        cm, cn = self.params.cluster_shape_mn
        return GroupSearchResult(group_idx, cluster_m * cm + Int32(cta_tile_coord[0]),
                                 cluster_n * cn + Int32(cta_tile_coord[1]), m, n, k, _ceil_div(k, tk))

    def __extract_mlir_values__(self):
        return extract_mlir_values((self.params, self.search_state))

    def __new_from_mlir_values__(self, values):
        params, state = new_from_mlir_values((self.params, self.search_state), values)
        return GroupedGemmTileSchedulerHelper(self.group_count, params, self.cluster_tile_shape_mnk, state)

