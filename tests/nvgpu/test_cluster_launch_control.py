"""Blackwell cluster launch control on the CPU emulator: cute.arch.issue_clc_query / clc_response
take clusters that have not started, the dynamic persistent tile scheduler
(utils.ClcDynamicPersistentTileScheduler with pipeline.PipelineClcFetchAsync) does every tile of a
problem exactly once with clusters of two CTAs, and the errors a kernel gets (a response read
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
