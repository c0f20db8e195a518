"""Blackwell cluster launch control on the CPU emulator: cute.arch.issue_clc_query / clc_response
take clusters that have not started, the dynamic persistent tile scheduler
(utils.ClcDynamicPersistentTileScheduler with pipeline.PipelineClcFetchAsync) does every tile of a
problem exactly once with clusters of two CTAs, a CTA that takes over tiles runs each one's k-loop
through one pipeline whose handles are reset per tile, and the errors a kernel gets (a response read
before any query wrote it, an architecture without launch control)."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass import Int32, Int64

SM100 = "--target cpu --gpu-arch sm_100a"


# ---- the raw ops: every CTA of a 1-D grid keeps canceling until nothing is left ----------------------

@cute.kernel
def take_all_kernel(taken_by: cute.Tensor):
    @cute.struct
    class Storage:
        mbar: cute.struct.MemRange[Int64, 1]
        response: cute.struct.Align[cute.struct.MemRange[Int32, 4], 16]

    storage = utils.SmemAllocator().allocate(Storage)
    bar = storage.mbar.data_ptr()
    response = storage.response.data_ptr()
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if tidx == 0:
        taken_by[bidx] = bidx  # a launched CTA does its own item
        phase = Int32(0)
        valid = Int32(1)
        while valid != 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, 16)
            cute.arch.issue_clc_query(bar, response)
            cute.arch.mbarrier_wait(bar, phase)
            phase = phase ^ 1
            x, y, z, valid = cute.arch.clc_response(response)
            if valid != 0:
                taken_by[x] = bidx + 1000 * (y + z + 1)  # y and z are 0 in a 1-D grid


@cute.jit
def take_all_host(taken_by: cute.Tensor):
    take_all_kernel(taken_by).launch(grid=(cute.size(taken_by), 1, 1), block=(32, 1, 1))


def test_queries_take_every_cluster_not_launched(monkeypatch):
    monkeypatch.setenv("OPENCUTE_EMULATOR_THREADS", "2")
    n = 9
    taken_by = np.full(n, -1, np.int32)
    cute.compile(take_all_host, taken_by, options=SM100)(taken_by)
    assert (taken_by >= 0).all(), taken_by
    own = taken_by < 1000
    # A CTA that ran did its own item; the others were canceled and done by a running CTA.
    np.testing.assert_array_equal(taken_by[own], np.flatnonzero(own))
    runners = set(np.flatnonzero(own))
    assert set(taken_by[~own] - 1000) <= runners
    assert (~own).any()  # 9 CTAs on at most 2 host threads: some were canceled


# ---- the dynamic persistent scheduler with clusters of two CTAs --------------------------------------

CLUSTER = (2, 1)


@cute.kernel
def schedule_kernel(count: cute.Tensor, owner: cute.Tensor, params: utils.ClcDynamicPersistentTileSchedulerParams):
    @cute.struct
    class Storage:
        clc_mbar: cute.struct.MemRange[Int64, 2]
        response: cute.struct.Align[cute.struct.MemRange[Int32, 4], 16]

    storage = utils.SmemAllocator().allocate(Storage)
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    cluster_size = CLUSTER[0] * CLUSTER[1]
    cta_layout_vmnk = cute.make_layout((1, *CLUSTER, 1))
    # The scheduler warp of the first CTA and the worker warp of every CTA read each response.
    clc = pipeline.PipelineClcFetchAsync.create(
        barrier_storage=storage.clc_mbar.data_ptr(), num_stages=1,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * (1 + cluster_size)),
        tx_count=16, cta_layout_vmnk=cta_layout_vmnk, defer_sync=True)
    pipeline.pipeline_init_arrive(cluster_shape_mn=CLUSTER, is_relaxed=True)
    pipeline.pipeline_init_wait(cluster_shape_mn=CLUSTER)
    sched = utils.ClcDynamicPersistentTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim(),
                                                           storage.response.data_ptr())
    work = sched.initial_work_tile_info()
    consumer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
    bx, by, bz = cute.arch.block_idx()
    me = bx + 100 * by + 10000 * bz
    if warp_idx == 0 and rank == 0:
        producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.ProducerConsumer, 1)
        while work.is_valid_tile:
            clc.producer_acquire(producer)
            sched.advance_to_next_work(clc.producer_get_barrier(producer))
            producer.advance()
            clc.consumer_wait(consumer)
            work = sched.get_current_work()
            clc.consumer_release(consumer)
            consumer.advance()
        clc.producer_tail(producer)
    if warp_idx == 1:
        while work.is_valid_tile:
            m, n, l = work.tile_idx
            if cute.arch.lane_idx() == 0:
                count[m, n, l] = count[m, n, l] + 1
                owner[m, n, l] = me
            clc.consumer_wait(consumer)
            work = sched.get_current_work()
            clc.consumer_release(consumer)
            consumer.advance()


@cute.jit
def schedule_host(count: cute.Tensor, owner: cute.Tensor):
    params = utils.ClcDynamicPersistentTileSchedulerParams(count.shape, (*CLUSTER, 1))
    grid = utils.ClcDynamicPersistentTileScheduler.get_grid_shape(params)
    schedule_kernel(count, owner, params).launch(grid=grid, block=(64, 1, 1), cluster=(*CLUSTER, 1))


def test_dynamic_scheduler_does_every_tile_once(monkeypatch):
    monkeypatch.setenv("OPENCUTE_EMULATOR_THREADS", "2")
    shape = (6, 3, 2)
    count = np.zeros(shape, np.int32)
    owner = np.full(shape, -1, np.int32)
    cute.compile(schedule_host, count, owner, options=SM100)(count, owner)
    np.testing.assert_array_equal(count, np.ones(shape, np.int32))
    # Tile (m, n, l) is done by a CTA with the same position in its cluster (m % 2): the canceled
    # cluster's CTAs are taken over rank by rank.
    m = np.arange(shape[0])[:, None, None]
    assert ((owner % 100) % CLUSTER[0] == m % CLUSTER[0]).all(), owner
    # 18 clusters on at most 2 host threads: most were canceled and done by the clusters that ran.
    launched = {(o % 100 // 2, o // 100 % 100, o // 10000) for o in owner.flat}
    assert len(launched) < 18


def test_grid_covers_the_problem_in_whole_clusters():
    params = utils.ClcDynamicPersistentTileSchedulerParams((5, 3, 2), (2, 1, 1))
    assert utils.ClcDynamicPersistentTileScheduler.get_grid_shape(params) == (6, 3, 2)
    assert params.get_grid_shape() == (6, 3, 2)


# ---- a persistent CTA runs the k-loops of several tiles through one pipeline -------------------------
# As NVIDIA's dense_gemm_persistent_dynamic: a scheduler warp fetches tiles with cluster launch
# control, a producer warp fills K_BLOCKS slots per tile, a consumer warp sums them; both handles
# are reset() at each tile so that `count` numbers the tile's k-blocks. A CTA that took a canceled
# tile starts its second k-loop mid-ring (K_BLOCKS is no multiple of STAGES): the barriers' phases
# go on from where the first tile left them, so reset must keep the slot index and phase.

STAGES, K_BLOCKS = 3, 5


@cute.kernel
def k_loop_kernel(data: cute.Tensor, out: cute.Tensor, count: cute.Tensor,
                  params: utils.ClcDynamicPersistentTileSchedulerParams):
    @cute.struct
    class Storage:
        clc_mbar: cute.struct.MemRange[Int64, 2]
        response: cute.struct.Align[cute.struct.MemRange[Int32, 4], 16]
        data_mbar: cute.struct.MemRange[Int64, 2 * STAGES]
        slots: cute.struct.MemRange[Int32, 32 * STAGES]

    storage = utils.SmemAllocator().allocate(Storage)
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    lane = cute.arch.lane_idx()
    clc = pipeline.PipelineClcFetchAsync.create(
        barrier_storage=storage.clc_mbar.data_ptr(), num_stages=1,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * 3), tx_count=16, defer_sync=True)
    warp = pipeline.CooperativeGroup(pipeline.Agent.Thread, 32)
    producer, consumer = pipeline.PipelineAsync.create(
        num_stages=STAGES, producer_group=warp, consumer_group=warp, barrier_storage=storage.data_mbar.data_ptr(),
        defer_sync=True).make_participants()
    pipeline.pipeline_init_arrive()
    pipeline.pipeline_init_wait()
    cute.arch.sync_threads()
    slots = storage.slots.get_tensor(cute.make_layout((32, STAGES)))
    sched = utils.ClcDynamicPersistentTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim(),
                                                           storage.response.data_ptr())
    work = sched.initial_work_tile_info()
    clc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
    if warp_idx == 0:
        clc_producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.ProducerConsumer, 1)
        while work.is_valid_tile:
            clc.producer_acquire(clc_producer)
            sched.advance_to_next_work(clc.producer_get_barrier(clc_producer))
            clc_producer.advance()
            clc.consumer_wait(clc_state)
            work = sched.get_current_work()
            clc.consumer_release(clc_state)
            clc_state.advance()
        clc.producer_tail(clc_producer)
    if warp_idx == 1:
        while work.is_valid_tile:
            tile, _, _ = work.tile_idx
            producer.reset()
            for _k in cutlass.range(K_BLOCKS, unroll=1):
                handle = producer.acquire_and_advance()
                slots[lane, handle.index] = data[tile, handle.count, lane]
                handle.commit()
            clc.consumer_wait(clc_state)
            work = sched.get_current_work()
            clc.consumer_release(clc_state)
            clc_state.advance()
        producer.tail()
    if warp_idx == 2:
        while work.is_valid_tile:
            tile, _, _ = work.tile_idx
            consumer.reset()
            acc = Int32(0)
            for _k in cutlass.range(K_BLOCKS, unroll=1):
                handle = consumer.wait_and_advance()
                acc = acc + slots[lane, handle.index] * (handle.count + 1)
                handle.release()
            out[tile, lane] = acc
            if lane == 0:
                count[tile] = count[tile] + 1
            clc.consumer_wait(clc_state)
            work = sched.get_current_work()
            clc.consumer_release(clc_state)
            clc_state.advance()


@cute.jit
def k_loop_host(data: cute.Tensor, out: cute.Tensor, count: cute.Tensor):
    params = utils.ClcDynamicPersistentTileSchedulerParams((cute.size(count), 1, 1), (1, 1, 1))
    grid = utils.ClcDynamicPersistentTileScheduler.get_grid_shape(params)
    k_loop_kernel(data, out, count, params).launch(grid=grid, block=(96, 1, 1))


@pytest.mark.parametrize("host_threads", ["1", "2"])
def test_tiles_taken_over_run_their_k_loop_once(monkeypatch, host_threads):
    # One host thread: the first CTA cancels every other one and runs all 7 tiles' k-loops.
    monkeypatch.setenv("OPENCUTE_EMULATOR_THREADS", host_threads)
    tiles = 7
    data = np.random.default_rng(5).integers(-9, 10, (tiles, K_BLOCKS, 32)).astype(np.int32)
    out = np.zeros((tiles, 32), np.int32)
    count = np.zeros(tiles, np.int32)
    cute.compile(k_loop_host, data, out, count, options=SM100)(data, out, count)
    np.testing.assert_array_equal(count, np.ones(tiles, np.int32))
    weights = np.arange(1, K_BLOCKS + 1, dtype=np.int32)[None, :, None]
    np.testing.assert_array_equal(out, (data * weights).sum(axis=1))


# ---- errors ------------------------------------------------------------------------------------------

@cute.kernel
def read_unwritten_kernel(out: cute.Tensor):
    @cute.struct
    class Storage:
        response: cute.struct.Align[cute.struct.MemRange[Int32, 4], 16]

    storage = utils.SmemAllocator().allocate(Storage)
    x, _, _, valid = cute.arch.clc_response(storage.response.data_ptr())
    out[0] = x + valid


@cute.jit
def read_unwritten_host(out: cute.Tensor):
    read_unwritten_kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_reading_a_response_no_query_wrote_is_reported():
    out = np.zeros(1, np.int32)
    f = cute.compile(read_unwritten_host, out, options=SM100)
    with pytest.raises(Exception, match="that no issue_clc_query wrote"):
        f(out)


def test_launch_control_needs_sm100():
    out = np.zeros(1, np.int32)
    with pytest.raises(Exception, match="needs sm_100 or newer"):
        cute.compile(read_unwritten_host, out, options="--target cpu --gpu-arch sm_90a")
