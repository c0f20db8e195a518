"""cutlass.utils' persistent tile scheduler (PersistentTileSchedulerParams,
StaticPersistentTileScheduler, WorkTileInfo) as dense_gemm_persistent.py drives it: the host
function sizes the grid with get_grid_shape, each block creates its scheduler from block_idx /
grid_dim and loops `while work_tile.is_valid_tile`. Every block records the tiles it visits; the
sequence is checked against a Python model of CUTLASS's Sm90 persistent order (nested loops, not
the scheduler's divmod arithmetic). Kernels run on the CPU emulator; the clusters here are only
the scheduler's arithmetic (plain launches), real cluster launches arrive with the cluster work."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
from cutlass import Int32
import toolchain

MAX_TILES = 16  # per block, in the record


def model_order(ntile_mnl, cluster_mn, swizzle, raster_along_m):
    """Cluster coordinates (m, n, l) in CUTLASS's persistent order: L slowest; within a slice
    groups of `swizzle` minor-mode clusters, the major mode, then the offset in the group fastest."""
    m, n, l = ntile_mnl
    cm, cn = cluster_mn
    ncm, ncn = -(-m // cm), -(-n // cn)
    minor_extent = ncn if raster_along_m else ncm
    minor_extent = -(-minor_extent // swizzle) * swizzle
    major_extent = ncm if raster_along_m else ncn
    order = []
    for li in range(l):
        for group in range(minor_extent // swizzle):
            for major in range(major_extent):
                for offset in range(swizzle):
                    minor = group * swizzle + offset
                    order.append((major, minor, li) if raster_along_m else (minor, major, li))
    return order


def model_visits(ntile_mnl, cluster_mn, swizzle, raster_along_m, grid):
    """Per block (in x-fastest linear order) the tiles it visits."""
    order = model_order(ntile_mnl, cluster_mn, swizzle, raster_along_m)
    cm, cn = cluster_mn
    gx, gy, gz = grid
    clusters_x, clusters_y = gx // cm, gy // cn
    persistent = clusters_x * clusters_y * gz
    visits = {}
    for bz in range(gz):
        for by in range(gy):
            for bx in range(gx):
                cluster = (bz * clusters_y + by // cn) * clusters_x + bx // cm
                tiles = [(om * cm + bx % cm, on * cn + by % cn, ol) for om, on, ol in order[cluster::persistent]]
                visits[(bz * gy + by) * gx + bx] = tiles
    return visits


@cute.kernel
def record_kernel(out: cute.Tensor, count: cute.Tensor, params: utils.PersistentTileSchedulerParams):
    bidx, bidy, bidz = cute.arch.block_idx()
    gdx, gdy, _ = cute.arch.grid_dim()
    block = (bidz * gdy + bidy) * gdx + bidx
    tile_sched = utils.StaticPersistentTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim())
    work_tile = tile_sched.initial_work_tile_info()
    while work_tile.is_valid_tile:
        m, n, l = work_tile.tile_idx
        k = tile_sched.num_tiles_executed
        out[block, k, 0] = m
        out[block, k, 1] = n
        out[block, k, 2] = l
        tile_sched.advance_to_next_work()
        work_tile = tile_sched.get_current_work()
    count[block] = tile_sched.num_tiles_executed


@cute.jit
def run_schedule(out: cute.Tensor, count: cute.Tensor, tiles_m: Int32, tiles_n: Int32, tiles_l: Int32,
                 cluster_mn: cutlass.Constexpr, swizzle: cutlass.Constexpr, along_m: cutlass.Constexpr,
                 max_active_clusters: cutlass.Constexpr, grid_out: cute.Tensor):
    params = utils.PersistentTileSchedulerParams((tiles_m, tiles_n, tiles_l), (*cluster_mn, 1), swizzle, along_m)
    grid = utils.StaticPersistentTileScheduler.get_grid_shape(params, max_active_clusters)
    grid_out[0] = grid[2]
    record_kernel(out, count, params).launch(grid=grid, block=(1, 1, 1))


@cute.jit
def run_static_schedule(out: cute.Tensor, count: cute.Tensor, ntile: cutlass.Constexpr, cluster_mn: cutlass.Constexpr,
                        swizzle: cutlass.Constexpr, along_m: cutlass.Constexpr, max_active_clusters: cutlass.Constexpr):
    params = utils.PersistentTileSchedulerParams(ntile, (*cluster_mn, 1), swizzle, along_m)
    grid = utils.StaticPersistentTileScheduler.get_grid_shape(params, max_active_clusters)
    record_kernel(out, count, params).launch(grid=grid, block=(1, 1, 1))


def _check(out, count, ntile, cluster_mn, swizzle, along_m, grid):
    want = model_visits(ntile, cluster_mn, swizzle, along_m, grid)
    assert len(want) == grid[0] * grid[1] * grid[2]
    for block, tiles in want.items():
        assert count[block] == len(tiles), (block, count[block], tiles)
        got = [tuple(out[block, k]) for k in range(len(tiles))]
        assert got == tiles, (block, got, tiles)
    # every tile of the problem is visited exactly once (swizzle padding may add tiles beyond it)
    seen = [t for tiles in want.values() for t in tiles]
    assert len(seen) == len(set(seen))
    inside = {(m, n, l) for m in range(ntile[0]) for n in range(ntile[1]) for l in range(ntile[2])}
    assert inside <= set(seen)


def _grid(ntile, cluster_mn, swizzle, along_m, max_active):
    return (*cluster_mn, min(len(model_order(ntile, cluster_mn, swizzle, along_m)), max_active))


@pytest.mark.parametrize("ntile, swizzle, along_m, max_active", [
    ((5, 3, 2), 1, True, 4),     # fewer persistent blocks than tiles: each block loops
    ((5, 3, 1), 1, False, 7),
    ((6, 5, 1), 2, True, 4),     # swizzle: minor extent rounded up (5 -> 6)
    ((7, 4, 2), 4, False, 5),
    ((2, 2, 1), 1, True, 16),    # more slots than work: the grid shrinks to the work
])
def test_dynamic_problem_shape_visits_tiles_in_cutlass_order(ntile, swizzle, along_m, max_active):
    grid = _grid(ntile, (1, 1), swizzle, along_m, max_active)
    out = np.full((grid[2], MAX_TILES, 3), -1, np.int32)
    count = np.full(grid[2], -1, np.int32)
    grid_out = np.zeros(1, np.int32)
    run_schedule(out, count, *ntile, (1, 1), swizzle, along_m, max_active, grid_out)
    assert grid_out[0] == grid[2]
    _check(out, count, ntile, (1, 1), swizzle, along_m, grid)


@pytest.mark.parametrize("ntile, cluster_mn, swizzle, along_m, max_active", [
    ((4, 3, 1), (1, 1), 1, True, 5),
    ((4, 6, 1), (2, 1), 1, True, 3),    # cluster arithmetic: CTA coordinate inside the cluster
    ((3, 4, 2), (1, 2), 2, False, 4),
])
def test_static_problem_shape_and_cluster_arithmetic(ntile, cluster_mn, swizzle, along_m, max_active):
    grid = _grid(ntile, cluster_mn, swizzle, along_m, max_active)
    blocks = grid[0] * grid[1] * grid[2]
    out = np.full((blocks, MAX_TILES, 3), -1, np.int32)
    count = np.full(blocks, -1, np.int32)
    run_static_schedule(out, count, ntile, cluster_mn, swizzle, along_m, max_active)
    _check(out, count, ntile, cluster_mn, swizzle, along_m, grid)


def test_grid_shape_folds_for_static_shapes():
    params = utils.PersistentTileSchedulerParams((10, 7, 3), (2, 1, 1), swizzle_size=1, raster_along_m=True)
    assert params.problem_shape_ncluster_mnl == (5, 7, 3)
    assert utils.StaticPersistentTileScheduler.get_grid_shape(params, 132) == (2, 1, 105)
    assert utils.StaticPersistentTileScheduler.get_grid_shape(params, 66) == (2, 1, 66)
    swizzled = utils.PersistentTileSchedulerParams((10, 7, 1), (1, 1, 1), swizzle_size=4, raster_along_m=True)
    assert swizzled.problem_shape_ncluster_mnl == (10, 8, 1)


def test_bad_scheduler_parameters_raise():
    with pytest.raises(cutlass.DSLUserCodeError, match="3 modes"):
        utils.PersistentTileSchedulerParams((4, 4), (1, 1, 1))
    with pytest.raises(cutlass.DSLUserCodeError, match="positive static int"):
        utils.PersistentTileSchedulerParams((4, 4, 1), (0, 1, 1))
    with pytest.raises(cutlass.DSLUserCodeError, match="k mode must be 1"):
        utils.PersistentTileSchedulerParams((4, 4, 1), (1, 1, 2))
    with pytest.raises(cutlass.DSLUserCodeError, match="swizzle_size"):
        utils.PersistentTileSchedulerParams((4, 4, 1), (1, 1, 1), swizzle_size=0)
    params = utils.PersistentTileSchedulerParams((4, 4, 1), (1, 1, 1))
    with pytest.raises(cutlass.DSLUserCodeError, match="max_active_clusters"):
        utils.StaticPersistentTileScheduler.get_grid_shape(params, 0)


def test_work_tile_info_carries_through_the_value_protocol():
    from cutlass.cutlass_dsl import extract_mlir_values, new_from_mlir_values
    # The validity is a Boolean even when given as a Python bool: a scheduler loop
    # (`while work_tile.is_valid_tile:`) carries it as one value, so that a later False ends the loop.
    info = utils.WorkTileInfo((1, 2, 3), True)
    values = extract_mlir_values(info)
    assert len(values) == 1 and bool(values[0]) is True
    again = new_from_mlir_values(info, values)
    assert again.tile_idx == (1, 2, 3) and bool(again.is_valid_tile) is True


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_scheduler_loop_compiles_for_the_gpu_and_runs_on_the_emulator(arch):
    ntile, swizzle, along_m, max_active = (5, 4, 1), 2, False, 3
    grid = _grid(ntile, (1, 1), swizzle, along_m, max_active)
    out = np.full((grid[2], MAX_TILES, 3), -1, np.int32)
    count = np.full(grid[2], -1, np.int32)
    grid_out = np.zeros(1, np.int32)
    f = cute.compile(run_schedule, out, count, *ntile, (1, 1), swizzle, along_m, max_active, grid_out,
                     options=f"--target cpu --gpu-arch {arch}")
    f(out, count, *ntile, grid_out)
    _check(out, count, ntile, (1, 1), swizzle, along_m, grid)
    toolchain.ptx_of(f)
    assert f".target {arch}" in f.__ptx__ and "ld.local" not in f.__ptx__


def test_hardware_info_without_a_device_says_so():
    info = utils.HardwareInfo()
    if cutlass.cuda.is_available():
        pytest.skip("a CUDA device is present (see the GPU test)")
    for query in (info.get_device_multiprocessor_count, info.get_l2_cache_size_in_bytes,
                  lambda: info.get_max_active_clusters(1)):
        with pytest.raises(cutlass.DSLRuntimeError, match="needs a CUDA device"):
            query()
    with pytest.raises(cutlass.DSLRuntimeError, match="cluster_size"):
        info.get_max_active_clusters(0)


@pytest.mark.gpu
def test_hardware_info_on_the_gpu():
    from cutlass.utils.hardware_info import HardwareInfo
    info = HardwareInfo()
    sms = info.get_device_multiprocessor_count()
    assert sms > 0 and info.get_l2_cache_size_in_bytes() > 0
    assert info.get_max_active_clusters(1) == sms  # one CTA per SM when each fills its shared memory
    major = cutlass._core.device_attribute(75, 0)
    if major >= 9:
        two = info.get_max_active_clusters(2)
        assert 0 < two <= sms // 2
        assert 0 < info.get_max_active_clusters(4) <= two // 2 + 1


@pytest.mark.gpu
def test_schedule_on_the_gpu_matches_the_model():
    torch = pytest.importorskip("torch")
    from cutlass.cute.runtime import from_dlpack
    ntile, cluster_mn, swizzle, along_m, max_active = (7, 5, 2), (1, 1), 2, True, 6
    grid = _grid(ntile, cluster_mn, swizzle, along_m, max_active)
    out = torch.full((grid[2], MAX_TILES, 3), -1, dtype=torch.int32, device="cuda")
    count = torch.full((grid[2],), -1, dtype=torch.int32, device="cuda")
    f = cute.compile(run_static_schedule, from_dlpack(out), from_dlpack(count), ntile, cluster_mn, swizzle, along_m,
                     max_active, options="--target gpu")
    f(from_dlpack(out), from_dlpack(count))
    torch.cuda.synchronize()
    _check(out.cpu().numpy(), count.cpu().numpy(), ntile, cluster_mn, swizzle, along_m, grid)
