"""Scheduling for grouped problems whose tile count along one mode is run-time data (NVIDIA's grouped
mixed-input GEMMs): cutlass.utils.StaticPersistentRuntimeTileScheduler hands persistent cluster c
of P the units c, c + P, ... with the inner mode (M) fastest over its extent and N unbounded; the
contiguous group search (cutlass.utils.mixed_input_helpers) maps increasing tile indices along N to
(group, tile start, group end) for groups [cumsum[g], cumsum[g + 1]) padded to whole tiles.
Kernels on the CPU emulator against Python models written here (nested loops)."""
import numpy as np

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
import cutlass.utils.mixed_input_helpers as mixed
from cutlass import Int32

CPU = "--target cpu"
STEPS = 5


@cute.kernel
def schedule_kernel(out: cute.Tensor, params: utils.PersistentTileSchedulerParams):
    bidx, bidy, bidz = cute.arch.block_idx()
    sched = utils.StaticPersistentRuntimeTileScheduler.create(params, (bidx, bidy, bidz), cute.arch.grid_dim(),
                                                              inner_mode=0)
    work = sched.initial_work_tile_info()
    for i in cutlass.range_constexpr(STEPS):
        out[bidz, i, 0] = work.tile_idx[0]
        out[bidz, i, 1] = work.tile_idx[1]
        out[bidz, i, 2] = Int32(work.is_valid_tile)
        sched.advance_to_next_work()
        work = sched.get_current_work()


@cute.jit
def schedule(out: cute.Tensor, ntile_m: cutlass.Int32):
    params = utils.PersistentTileSchedulerParams((ntile_m, 1, 1), (1, 1, 1))
    schedule_kernel(out, params).launch(grid=(1, 1, cute.size(out, mode=[0])), block=(32, 1, 1))


def test_runtime_scheduler_walks_m_then_unbounded_n():
    clusters, ntile_m = 3, 2
    out = np.zeros((clusters, STEPS, 3), np.int32)
    cute.compile(schedule, out, ntile_m, options=CPU)(out, ntile_m)
    order = [(m, n) for n in range(100) for m in range(ntile_m)]  # M fastest, N without end
    for c in range(clusters):
        want = [(*order[c + i * clusters], 1) for i in range(STEPS)]
        assert [tuple(r) for r in out[c]] == want


TILE_N = 64


@cute.kernel
def search_kernel(cumsum: cute.Tensor, out: cute.Tensor, group_count: cutlass.Int32):
    state = mixed.create_initial_contiguous_group_search_state()
    for t in cutlass.range(cute.size(out, mode=[0])):  # the state is carried through the loop
        state = mixed.contiguous_group_search((128, TILE_N, 64), group_count, t, state, cumsum, 1)
        out[t, 0] = state.cur_group_idx
        out[t, 1] = state.cur_start
        out[t, 2] = state.cur_boundary


@cute.jit
def search(cumsum: cute.Tensor, out: cute.Tensor, group_count: cutlass.Int32):
    search_kernel(cumsum, out, group_count).launch(grid=(1, 1, 1), block=(1, 1, 1))


def model_search(group_n, tile):
    """(1-based group, tile start, group end) of each tile index, groups padded to whole tiles."""
    rows, start = [], 0
    for g, extent in enumerate(group_n):
        for s in range(start, start + extent, tile):
            rows.append((g + 1, s, start + extent))
        start += extent
    return rows


def test_contiguous_group_search_pads_groups_to_whole_tiles():
    group_n = [64, 0, 160, 16, 0, 128]  # empty groups, partial last tiles
    cumsum = np.concatenate([[0], np.cumsum(group_n)]).astype(np.int32)
    want = model_search(group_n, TILE_N)
    out = np.zeros((len(want) + 2, 3), np.int32)
    cute.compile(search, cumsum, out, len(group_n), options=CPU)(cumsum, out, len(group_n))
    assert [tuple(r) for r in out[:len(want)]] == want
    # Past the last group's tiles: group_count + 1, the kernels' signal to stop.
    assert list(out[len(want):, 0]) == [len(group_n) + 1] * 2


def test_contiguous_group_work_tile_info_reads_the_published_tile():
    seen = []

    @cute.kernel
    def kernel(info: cute.Tensor):
        work = mixed.make_contiguous_group_work_tile_info(3, info)
        seen.append(type(work.is_valid_tile).__name__)
        info[0] = work.cta_coord_m + work.coord_n * 10 + work.group_idx * 100 + work.distance_to_boundary * 1000
        info[1] = Int32(work.is_valid_tile)

    @cute.jit
    def run(info: cute.Tensor):
        kernel(info).launch(grid=(1, 1, 1), block=(1, 1, 1))

    for group, valid in ((2, 1), (3, 0)):
        info = np.array([1, 2, group, 4], np.int32)
        cute.compile(run, info, options=CPU)(info)
        assert list(info[:2]) == [1 + 20 + 100 * group + 4000, valid]
    assert seen[0] == "Boolean"
