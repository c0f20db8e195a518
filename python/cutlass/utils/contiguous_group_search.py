"""Walking the tiles of groups laid end to end along one mode (a grouped GEMM whose groups are
contiguous ranges [cumsum[g], cumsum[g + 1]) of N, their extents run-time data): each group is
padded to whole tiles, and a persistent CTA's increasing tile indices are mapped to (group, start
of the tile, end of its group) by searching forward from where its previous tile was found.
Library code over DSL operations, re-exported by `cutlass.utils.mixed_input_helpers`."""
from .._dsl.carry import extract_mlir_values, new_from_mlir_values
from .._dsl.generate import while_generate, yield_out
from .._dsl.numeric import Boolean, Int32
from ..pipeline.helpers import _select


class ContiguousGroupSearchState:
    """Where the search stands: cur_group_idx (1-based: group cur_group_idx - 1 holds the tile;
    group_count + 1 once the tiles are used up), cur_start (the tile's first element along the
    searched mode), cur_boundary (its group's end), and the tile indices its group spans."""

    def __init__(self, cur_group_idx, cur_start, cur_boundary, group_start, tile_start, tile_end):
        self.cur_group_idx = cur_group_idx
        self.cur_start = cur_start
        self.cur_boundary = cur_boundary
        self.group_start = group_start
        self.tile_start = tile_start
        self.tile_end = tile_end

    def _fields(self):
        return (self.cur_group_idx, self.cur_start, self.cur_boundary, self.group_start, self.tile_start,
                self.tile_end)

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._fields())

    def __new_from_mlir_values__(self, values):
        return ContiguousGroupSearchState(*new_from_mlir_values(self._fields(), values))


def create_initial_contiguous_group_search_state(*, loc=None, ip=None):
    """The state before the first tile: no group entered yet."""
    return ContiguousGroupSearchState(*(Int32(0) for _ in range(6)))


def contiguous_group_search(tile_shape_mnk, group_count, tile_coord, state, cumsum, mode, *, loc=None, ip=None):
    """The state of tile `tile_coord` (a tile index along `mode`, 0: M, 1: N, at least the previous
    search's): groups whose tiles end at or before it are passed over (empty groups have none);
    past the last group's tiles, cur_group_idx is group_count + 1."""
    tile = tile_shape_mnk[mode]
    count = Int32(group_count)
    t = Int32(tile_coord)

    def more(g, group_start, boundary, tile_start, tile_end):
        return Boolean(t >= tile_end) & Boolean(g <= count)

    loop = while_generate([state.cur_group_idx, state.group_start, state.cur_boundary, state.tile_start,
                           state.tile_end], more)
    with loop as (g, group_start, boundary, tile_start, tile_end):
        g = Int32(g + 1)
        # Group g (1-based) spans [cumsum[g - 1], cumsum[g]); past the last one, an empty group at
        # the end (the bounds are read at group_count so that no read leaves cumsum).
        index = Int32(_select(g <= count, g, count))
        end = Int32(cumsum[index])
        start = Int32(_select(g <= count, Int32(cumsum[index - 1]), end))
        tiles = Int32((end - start + (tile - 1)) // tile)
        yield_out([g, start, end, tile_end, Int32(tile_end + tiles)])
    g, group_start, boundary, tile_start, tile_end = loop.results
    cur_start = Int32(group_start + (t - tile_start) * tile)
    return ContiguousGroupSearchState(g, cur_start, boundary, group_start, tile_start, tile_end)


class ContiguousGroupWorkTileInfo:
    """One tile of the grouped problem, as the scheduling warp published it (4 Int32s: the CTA's
    tile coordinate along M, the tile's first N, its group, the distance from the tile's first N to
    its group's end); valid while the group is one of the group_count."""

    def __init__(self, cta_coord_m, coord_n, group_idx, distance_to_boundary, is_valid_tile):
        self.cta_coord_m = cta_coord_m
        self.coord_n = coord_n
        self.group_idx = group_idx
        self.distance_to_boundary = distance_to_boundary
        self.is_valid_tile = is_valid_tile

    def _fields(self):
        return (self.cta_coord_m, self.coord_n, self.group_idx, self.distance_to_boundary, self.is_valid_tile)

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._fields())

    def __new_from_mlir_values__(self, values):
        return ContiguousGroupWorkTileInfo(*new_from_mlir_values(self._fields(), values))


def make_contiguous_group_work_tile_info(group_count, tile_info, *, loc=None, ip=None):
    """The work tile of a published tile info (a 4-element Int32 tensor, see the class)."""
    group_idx = Int32(tile_info[2])
    return ContiguousGroupWorkTileInfo(Int32(tile_info[0]), Int32(tile_info[1]), group_idx, Int32(tile_info[3]),
                                       Boolean(group_idx < Int32(group_count)))
