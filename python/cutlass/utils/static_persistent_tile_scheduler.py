"""Persistent-kernel tile scheduling (`cutlass.utils.PersistentTileSchedulerParams`,
`StaticPersistentTileScheduler`, `WorkTileInfo`), library code over DSL integer operations.

A persistent kernel launches one cluster per available slot and loops over output tiles: cluster
`c` of `P` persistent clusters takes the work units c, c + P, c + 2P, ... of a linear order over
the problem's clusters of tiles. The order is CUTLASS's `PersistentTileSchedulerSm90`
(include/cutlass/gemm/kernel/sm90_tile_scheduler.hpp): along L last; within one L slice the
*major* mode (M when `raster_along_m`, else N) varies fastest, except that with a swizzle of
`s` the minor mode is visited in groups of `s` neighbouring clusters, the offset inside the group
varying fastest of all (so `s` consecutive work units share a column/row band for L2 reuse). The
minor extent is rounded up to a multiple of `s`; units past the real extent are valid work
tiles whose coordinates lie outside the problem, as in CUTLASS (TMA clips them).

The grid is (cluster_m, cluster_n, persistent clusters); a block's cluster is its linear cluster
index in that grid and its CTA coordinate in the cluster is its block index modulo the cluster
shape. Shapes may be static ints (folded at trace time) or dynamic Int32s."""
from .._dsl.carry import extract_mlir_values, new_from_mlir_values
from .._dsl.errors import DSLUserCodeError
from .._dsl.numeric import Boolean, Int32, Numeric
from .._dsl.rt import min as _dsl_min


def _static_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _ceil_div(a, b):
    return (a + b - 1) // b


def _positive_static(value, what):
    if not _static_int(value) or value < 1:
        raise DSLUserCodeError(f"{what} must be a positive static int, got {value!r}", code="VALUE_INVALID")
    return value


def _as_index(x):
    """A coordinate or extent: a static int stays one, a DSL number becomes an Int32."""
    if _static_int(x):
        return x
    if isinstance(x, Numeric):
        return x if type(x) is Int32 else Int32(x)
    raise DSLUserCodeError(f"a tile-scheduler extent must be an int or a DSL integer, got {type(x).__name__}",
                           code="TYPE_MISMATCH")


class WorkTileInfo:
    """One unit of work: the CTA tile's coordinate (m, n, l) and whether it is real work."""

    def __init__(self, tile_idx, is_valid_tile):
        self._tile_idx = tuple(tile_idx)
        # A Boolean, also when given a Python bool: it is carried through the scheduler's dynamic
        # `while work_tile.is_valid_tile:` loop as a value, so that a scheduler answering True
        # then False as Python bools (fmha.py's non-persistent one) ends the loop.
        self._is_valid_tile = is_valid_tile if isinstance(is_valid_tile, Numeric) else Boolean(is_valid_tile)

    @property
    def tile_idx(self):
        return self._tile_idx

    @property
    def is_valid_tile(self):
        return self._is_valid_tile

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._tile_idx) + extract_mlir_values(self._is_valid_tile)

    def __new_from_mlir_values__(self, values):
        n = len(extract_mlir_values(self._tile_idx))
        return WorkTileInfo(new_from_mlir_values(self._tile_idx, values[:n]),
                            new_from_mlir_values(self._is_valid_tile, values[n:]))

    def __repr__(self):
        return f"WorkTileInfo(tile_idx={self._tile_idx}, is_valid_tile={self._is_valid_tile})"


class PersistentTileSchedulerParams:
    """What the scheduler needs of the problem: its extent in CTA tiles (m, n, l), the cluster
    shape (its k mode must be 1), the swizzle size and the raster order. Passed from the host
    function to the kernel as an argument."""

    def __init__(self, problem_shape_ntile_mnl, cluster_shape_mnk, swizzle_size=1, raster_along_m=True, *,
                 loc=None, ip=None):
        shape = tuple(problem_shape_ntile_mnl)
        cluster = tuple(cluster_shape_mnk)
        if len(shape) != 3:
            raise DSLUserCodeError(f"problem_shape_ntile_mnl must have 3 modes (m, n, l), got {shape!r}",
                                   code="VALUE_INVALID")
        if len(cluster) not in (2, 3):
            raise DSLUserCodeError(f"cluster_shape_mnk must have 3 modes (m, n, k), got {cluster!r}",
                                   code="VALUE_INVALID")
        cm = _positive_static(cluster[0], "cluster_shape_mnk[0]")
        cn = _positive_static(cluster[1], "cluster_shape_mnk[1]")
        if len(cluster) == 3 and cluster[2] != 1:
            raise DSLUserCodeError(f"the cluster's k mode must be 1, got {cluster!r}", code="VALUE_INVALID")
        self.swizzle_size = _positive_static(swizzle_size, "swizzle_size")
        if not isinstance(raster_along_m, bool):
            raise DSLUserCodeError(f"raster_along_m must be a static bool, got {raster_along_m!r}",
                                   code="VALUE_INVALID")
        self.raster_along_m = raster_along_m
        self.cluster_shape_mn = (cm, cn)
        self.problem_shape_ntile_mnl = tuple(_as_index(x) for x in shape)
        m, n, l = self.problem_shape_ntile_mnl
        ncm, ncn = _ceil_div(m, cm), _ceil_div(n, cn)
        s = self.swizzle_size
        if s > 1:  # the minor mode is visited in groups of s clusters: round it up to whole groups
            if raster_along_m:
                ncn = _ceil_div(ncn, s) * s
            else:
                ncm = _ceil_div(ncm, s) * s
        self.problem_shape_ncluster_mnl = (ncm, ncn, l)

    @property
    def num_clusters_per_problem(self):
        ncm, ncn, _ = self.problem_shape_ncluster_mnl
        return ncm * ncn

    @property
    def num_clusters(self):
        """Work units (clusters of tiles) over the whole problem, swizzle padding included."""
        return self.num_clusters_per_problem * self.problem_shape_ncluster_mnl[2]

    def get_grid_shape(self, max_active_clusters, *, loc=None, ip=None):
        return StaticPersistentTileScheduler.get_grid_shape(self, max_active_clusters)

    def _fields(self):
        return (self.problem_shape_ntile_mnl, self.problem_shape_ncluster_mnl)

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._fields())

    def __new_from_mlir_values__(self, values):
        ntile, ncluster = new_from_mlir_values(self._fields(), values)
        new = object.__new__(PersistentTileSchedulerParams)
        new.__dict__.update(self.__dict__)
        new.problem_shape_ntile_mnl, new.problem_shape_ncluster_mnl = tuple(ntile), tuple(ncluster)
        return new

    def __repr__(self):
        return (f"PersistentTileSchedulerParams(problem_shape_ntile_mnl={self.problem_shape_ntile_mnl}, "
                f"cluster_shape_mn={self.cluster_shape_mn}, swizzle_size={self.swizzle_size}, "
                f"raster_along_m={self.raster_along_m})")


def _persistent_clusters(params, block_idx, grid_dim):
    """(persistent clusters in the grid, the calling block's cluster's linear index, the block's x
    and y) for a grid of (cluster_m, cluster_n, persistent clusters) shape."""
    if not isinstance(params, PersistentTileSchedulerParams):
        raise DSLUserCodeError(f"create takes PersistentTileSchedulerParams, got {type(params).__name__}",
                               code="TYPE_MISMATCH")
    cm, cn = params.cluster_shape_mn
    bx, by, bz = (_as_index(v) for v in block_idx)
    gx, gy, gz = (_as_index(v) for v in grid_dim)
    clusters_x, clusters_y = gx // cm, gy // cn
    return Int32(clusters_x * clusters_y * gz), Int32((bz * clusters_y + by // cn) * clusters_x + bx // cm), bx, by


class _PersistentWorkCursor:
    """The walk both persistent schedulers make: cluster c of P takes work units c, c + P, c + 2P, ...
    (`get_current_work` maps the unit to a tile)."""

    def initial_work_tile_info(self, *, loc=None, ip=None):
        return self.get_current_work()

    def advance_to_next_work(self, *, advance_count=1, loc=None, ip=None):
        self._current_work_linear_idx = Int32(self._current_work_linear_idx
                                              + advance_count * self.num_persistent_clusters)
        self._num_tiles_executed = Int32(self._num_tiles_executed + 1)

    @property
    def num_tiles_executed(self):
        return self._num_tiles_executed


class StaticPersistentTileScheduler(_PersistentWorkCursor):
    """Iterates one cluster's work tiles: `initial_work_tile_info()`, then
    `advance_to_next_work()` / `get_current_work()` while `is_valid_tile`."""

    def __init__(self, params, num_persistent_clusters, current_work_linear_idx, cta_id_in_cluster,
                 num_tiles_executed):
        self.params = params
        self.num_persistent_clusters = num_persistent_clusters
        self._current_work_linear_idx = current_work_linear_idx
        self.cta_id_in_cluster = tuple(cta_id_in_cluster)
        self._num_tiles_executed = num_tiles_executed

    @staticmethod
    def get_grid_shape(params, max_active_clusters, *, loc=None, ip=None):
        """(cluster_m, cluster_n, persistent clusters): no more clusters than there is work for."""
        if not isinstance(params, PersistentTileSchedulerParams):
            raise DSLUserCodeError(f"get_grid_shape takes PersistentTileSchedulerParams, got {type(params).__name__}",
                                   code="TYPE_MISMATCH")
        if _static_int(max_active_clusters) and max_active_clusters < 1:
            raise DSLUserCodeError(f"max_active_clusters must be positive, got {max_active_clusters}",
                                   code="VALUE_INVALID")
        total = params.num_clusters
        if _static_int(total) and _static_int(max_active_clusters):
            persistent = min(total, max_active_clusters)
        else:
            persistent = _dsl_min(_as_index(total), _as_index(max_active_clusters))
        return (*params.cluster_shape_mn, persistent)

    @staticmethod
    def create(params, block_idx, grid_dim, *, loc=None, ip=None):
        """The scheduler of the calling block (`block_idx`, `grid_dim` from cute.arch)."""
        num_persistent_clusters, cluster_linear_idx, bx, by = _persistent_clusters(params, block_idx, grid_dim)
        cm, cn = params.cluster_shape_mn
        cta_id_in_cluster = (Int32(bx % cm), Int32(by % cn))
        return StaticPersistentTileScheduler(params, num_persistent_clusters, cluster_linear_idx, cta_id_in_cluster,
                                             Int32(0))

    def _get_current_work_for_linear_idx(self, current_work_linear_idx, *, loc=None, ip=None):
        p = self.params
        ncm, ncn, _ = p.problem_shape_ncluster_mnl
        per_problem = p.num_clusters_per_problem
        idx = current_work_linear_idx
        is_valid = Boolean(idx < p.num_clusters)
        l_idx = idx // per_problem
        r = idx - l_idx * per_problem
        s = p.swizzle_size
        major_extent = ncm if p.raster_along_m else ncn
        if s == 1:
            major, minor = r % major_extent, r // major_extent
        else:
            offset, group = r % s, r // s
            major, minor = group % major_extent, (group // major_extent) * s + offset
        cluster_m, cluster_n = (major, minor) if p.raster_along_m else (minor, major)
        cm, cn = p.cluster_shape_mn
        tile_m = Int32(cluster_m * cm + self.cta_id_in_cluster[0])
        tile_n = Int32(cluster_n * cn + self.cta_id_in_cluster[1])
        return WorkTileInfo((tile_m, tile_n, Int32(l_idx)), is_valid)

    def get_current_work(self, *, loc=None, ip=None):
        return self._get_current_work_for_linear_idx(self._current_work_linear_idx)

    def _fields(self):
        return (self.params, self.num_persistent_clusters, self._current_work_linear_idx, self.cta_id_in_cluster,
                self._num_tiles_executed)

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._fields())

    def __new_from_mlir_values__(self, values):
        return StaticPersistentTileScheduler(*new_from_mlir_values(self._fields(), values))
