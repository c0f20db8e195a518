"""cutlass.utils' grouped-GEMM scheduling (GroupedGemmTileSchedulerHelper,
create_initial_search_state) driven as grouped_gemm.py drives it: a persistent scheduler over
(cluster_m, cluster_n, total clusters of all groups) and a helper that turns each work tile's
linear cluster index into (group, CTA tile). Each block records its work; a Python model lists
the groups' tiles one group after another. Kernels run on the CPU emulator."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
from cutlass import Int32
from cutlass.cutlass_dsl import extract_mlir_values, new_from_mlir_values

MAX_TILES = 24


class GroupScheduler:
    """A persistent scheduler plus the group helper, carried through the work loop."""

    def __init__(self, sched, helper, problems):
        self.sched, self.helper, self.problems = sched, helper, problems

    def __extract_mlir_values__(self):
        return extract_mlir_values(self.sched) + extract_mlir_values(self.helper)

    def __new_from_mlir_values__(self, values):
        n = len(extract_mlir_values(self.sched))
        return GroupScheduler(new_from_mlir_values(self.sched, values[:n]),
                              new_from_mlir_values(self.helper, values[n:]), self.problems)

    def current(self):
        work = self.sched.get_current_work()
        # past the last cluster the search is still bounded (the helper stops at the last group)
        return work, self.helper.delinearize_z(work.tile_idx, self.problems)


@cute.kernel
def grouped_kernel(problems: cute.Tensor, out: cute.Tensor, count: cute.Tensor,
                   params: utils.PersistentTileSchedulerParams, group_count: cutlass.Constexpr,
                   cluster_tile: cutlass.Constexpr):
    bidx, bidy, bidz = cute.arch.block_idx()
    gdx, gdy, _ = cute.arch.grid_dim()
    block = (bidz * gdy + bidy) * gdx + bidx
    sched = GroupScheduler(
        utils.StaticPersistentTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim()),
        utils.GroupedGemmTileSchedulerHelper(group_count, params, cluster_tile, utils.create_initial_search_state()),
        problems)
    work, info = sched.current()
    while work.is_valid_tile:
        k = sched.sched.num_tiles_executed
        out[block, k, 0] = info.group_idx
        out[block, k, 1] = info.cta_tile_idx_m
        out[block, k, 2] = info.cta_tile_idx_n
        out[block, k, 3] = info.cta_tile_count_k
        out[block, k, 4] = info.problem_shape_m * 1000 + info.problem_shape_n
        sched.sched.advance_to_next_work()
        work, info = sched.current()
    count[block] = sched.sched.num_tiles_executed


@cute.jit
def run_grouped(problems: cute.Tensor, out: cute.Tensor, count: cute.Tensor, total_clusters: Int32,
                group_count: cutlass.Constexpr, cluster_mn: cutlass.Constexpr, cluster_tile: cutlass.Constexpr,
                along_m: cutlass.Constexpr, max_active: cutlass.Constexpr):
    params = utils.PersistentTileSchedulerParams((*cluster_mn, total_clusters), (*cluster_mn, 1), 1, along_m)
    grid = utils.StaticPersistentTileScheduler.get_grid_shape(params, max_active)
    grouped_kernel(problems, out, count, params, group_count, cluster_tile).launch(grid=grid, block=(1, 1, 1))


def model(problems, cluster_mn, cluster_tile, along_m, grid):
    units = []  # (group, cluster m, cluster n) in linear order
    for g, (m, n, k, l) in enumerate(problems):
        cms, cns = -(-m // cluster_tile[0]), -(-n // cluster_tile[1])
        for _ in range(l):
            pairs = [(i, j) for j in range(cns) for i in range(cms)] if along_m else \
                    [(i, j) for i in range(cms) for j in range(cns)]
            units += [(g, i, j) for i, j in pairs]
    gx, gy, gz = grid
    visits = {}
    for bz in range(gz):
        for by in range(gy):
            for bx in range(gx):
                tiles = []
                for g, i, j in units[bz::gz]:
                    m, n, k, _ = problems[g]
                    tiles.append((g, i * cluster_mn[0] + bx, j * cluster_mn[1] + by, -(-k // cluster_tile[2]),
                                  m * 1000 + n))
                visits[(bz * gy + by) * gx + bx] = tiles
    return units, visits


@pytest.mark.parametrize("problems, cluster_mn, tile_mnk, along_m, max_active", [
    ([(256, 128, 64, 1), (64, 384, 200, 1), (128, 128, 32, 1)], (1, 1), (128, 128, 64), True, 4),
    ([(300, 100, 64, 1), (64, 64, 64, 1), (1, 700, 129, 1), (128, 256, 64, 1)], (1, 1), (64, 128, 32), False, 3),
    ([(512, 256, 64, 1), (256, 512, 64, 1)], (2, 1), (128, 128, 64), True, 3),  # cluster arithmetic only
])
def test_grouped_tiles_follow_the_groups_in_order(problems, cluster_mn, tile_mnk, along_m, max_active):
    cluster_tile = (tile_mnk[0] * cluster_mn[0], tile_mnk[1] * cluster_mn[1], tile_mnk[2])
    units, _ = model(problems, cluster_mn, cluster_tile, along_m, (1, 1, 1))
    grid = (*cluster_mn, min(len(units), max_active))
    _, want = model(problems, cluster_mn, cluster_tile, along_m, grid)
    blocks = grid[0] * grid[1] * grid[2]
    out = np.full((blocks, MAX_TILES, 5), -1, np.int32)
    count = np.full(blocks, -1, np.int32)
    p = np.array(problems, np.int32)
    run_grouped(p, out, count, len(units), len(problems), cluster_mn, cluster_tile, along_m, max_active)
    for block, tiles in want.items():
        assert count[block] == len(tiles)
        assert [tuple(out[block, k]) for k in range(len(tiles))] == tiles, block


def test_helper_arguments_are_checked():
    params = utils.PersistentTileSchedulerParams((1, 1, 4), (1, 1, 1))
    state = utils.create_initial_search_state()
    with pytest.raises(cutlass.DSLUserCodeError, match="group_count"):
        utils.GroupedGemmTileSchedulerHelper(0, params, (128, 128, 64), state)
    with pytest.raises(cutlass.DSLUserCodeError, match="PersistentTileSchedulerParams"):
        utils.GroupedGemmTileSchedulerHelper(2, (1, 1, 4), (128, 128, 64), state)
    with pytest.raises(cutlass.DSLUserCodeError, match="cluster_tile_shape_mnk"):
        utils.GroupedGemmTileSchedulerHelper(2, params, (128, 128), state)
    with pytest.raises(cutlass.DSLUserCodeError, match="search_state"):
        utils.GroupedGemmTileSchedulerHelper(2, params, (128, 128, 64), (0, 0))


# ---- utils.StaticPersistentGroupTileScheduler (Blackwell's grouped_gemm.py drives it) -----------------

@cute.kernel
def group_scheduler_kernel(problems: cute.Tensor, out: cute.Tensor, count: cute.Tensor,
                           params: utils.PersistentTileSchedulerParams, group_count: cutlass.Constexpr,
                           cluster_tile: cutlass.Constexpr):
    bidx, bidy, bidz = cute.arch.block_idx()
    gdx, gdy, _ = cute.arch.grid_dim()
    block = (bidz * gdy + bidy) * gdx + bidx
    sched = utils.StaticPersistentGroupTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim(),
                                                            cluster_tile, utils.create_initial_search_state(),
                                                            group_count, problems)
    work = sched.initial_work_tile_info()
    while work.is_valid_tile:
        k = sched.num_tiles_executed
        info = work.group_search_result
        out[block, k, 0] = info.group_idx
        out[block, k, 1] = info.cta_tile_idx_m
        out[block, k, 2] = info.cta_tile_idx_n
        out[block, k, 3] = info.cta_tile_count_k
        out[block, k, 4] = info.problem_shape_m * 1000 + info.problem_shape_n
        sched.advance_to_next_work()
        work = sched.get_current_work()
    count[block] = sched.num_tiles_executed


@cute.jit
def run_group_scheduler(problems: cute.Tensor, out: cute.Tensor, count: cute.Tensor, total_clusters: Int32,
                        group_count: cutlass.Constexpr, cluster_mn: cutlass.Constexpr,
                        cluster_tile: cutlass.Constexpr, max_active: cutlass.Constexpr):
    params = utils.PersistentTileSchedulerParams((*cluster_mn, total_clusters), (*cluster_mn, 1))
    grid = utils.StaticPersistentGroupTileScheduler.get_grid_shape(params, max_active)
    group_scheduler_kernel(problems, out, count, params, group_count, cluster_tile).launch(grid=grid,
                                                                                         block=(1, 1, 1))


def test_group_tile_scheduler_visits_the_groups_tiles_in_order():
    problems = [(256, 128, 64, 1), (64, 384, 200, 1), (128, 128, 32, 1)]
    cluster_tile = (128, 128, 64)
    units, _ = model(problems, (1, 1), cluster_tile, True, (1, 1, 1))
    grid = (1, 1, 3)
    _, want = model(problems, (1, 1), cluster_tile, True, grid)
    out = np.full((3, MAX_TILES, 5), -1, np.int32)
    count = np.full(3, -1, np.int32)
    run_group_scheduler(np.array(problems, np.int32), out, count, len(units), len(problems), (1, 1), cluster_tile, 3)
    for block, tiles in want.items():
        assert count[block] == len(tiles)
        assert [tuple(out[block, k]) for k in range(len(tiles))] == tiles, block
