"""cutlass.pipeline on the CPU emulator: PipelineState's cursor against a Python model, the
producer / consumer kernels of NVIDIA's async_pipeline notebook (written here in the same style),
PipelineTmaAsync's consumer release across the CTAs of a cluster, PipelineOrder, and a missing
producer_commit reported as a deadlock naming the barrier."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32, Int32, Int64

CPU = "--target cpu"

# The pipelines are built on the mbarrier ops of cute.arch (another branch until merged).
needs_mbarrier = pytest.mark.skipif(not hasattr(cute.arch, "mbarrier_init"), reason="no mbarrier ops yet")


# ---- PipelineState ---------------------------------------------------------------------------------

def state_model(stages, phase, steps):
    index, count, out = 0, 0, []
    for _ in range(steps):
        out.append((index, phase, count))
        index, count = index + 1, count + 1
        if index == stages:
            index, phase = 0, phase ^ 1
    return out


@cute.kernel
def state_kernel(out: cute.Tensor, n: Int32):
    prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 3)
    cons = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 3)
    for i in cutlass.range(n):
        out[0, i, 0] = prod.index
        out[0, i, 1] = prod.phase
        out[0, i, 2] = prod.count
        out[1, i, 0] = cons.index
        out[1, i, 1] = cons.phase
        out[1, i, 2] = cons.count
        prod.advance()
        cons.advance()
    back = prod.clone()
    back.reverse()
    out[2, 0, 0] = back.index
    out[2, 0, 1] = back.phase
    out[2, 0, 2] = back.count
    back.reset_count()
    out[2, 1, 2] = back.count


@cute.jit
def state_host(out: cute.Tensor, n: Int32):
    state_kernel(out, n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_pipeline_state_advances_like_the_model():
    n = 8
    out = np.full((3, n, 3), -1, np.int32)
    cute.compile(state_host, out, n, options=CPU)(out, n)
    np.testing.assert_array_equal(out[0], state_model(3, 1, n))
    np.testing.assert_array_equal(out[1], state_model(3, 0, n))
    last = state_model(3, 1, n + 1)[n]          # producer after n advances
    before = state_model(3, 1, n)[n - 1]         # one step back
    assert tuple(out[2, 0]) == before and last != before
    assert out[2, 1, 2] == 0


def test_pipeline_api_shapes():
    assert isinstance(pipeline.CooperativeGroup(pipeline.Agent.Thread).size, int)
    assert pipeline.CooperativeGroup(pipeline.Agent.Thread, 32).size == 32
    with pytest.raises(ValueError):
        pipeline.CooperativeGroup(pipeline.Agent.Thread, 0)
    with pytest.raises(TypeError):
        pipeline.CooperativeGroup("thread", 1)


# ---- the async_pipeline notebook's kernels ----------------------------------------------------------

@cute.kernel
def one_stage_kernel(res: cute.Tensor):
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())

    @cute.struct
    class SharedStorage:
        mbar: cute.struct.MemRange[Int64, 2]
        staging: cute.struct.Align[cute.struct.MemRange[Float32, 1], 1024]

    storage = cutlass.utils.SmemAllocator().allocate(SharedStorage, 64)
    producer_group = pipeline.CooperativeGroup(pipeline.Agent.Thread, 32)
    consumer_group = pipeline.CooperativeGroup(pipeline.Agent.Thread, 32)
    pipe = pipeline.PipelineAsync.create(num_stages=1, producer_group=producer_group,
                                         consumer_group=consumer_group, barrier_storage=storage.mbar.data_ptr())
    staging = storage.staging.get_tensor(cute.make_layout(1))
    staging.fill(0)
    cute.arch.sync_threads()
    producer, consumer = pipe.make_participants()
    if warp_idx == 0:
        for i in cutlass.range(cute.size(res)):
            handle = producer.acquire_and_advance()
            staging[handle.index] = 1.0 * i
            handle.commit()
        producer.tail()
    if warp_idx == 1:
        for i in cutlass.range(cute.size(res)):
            handle = consumer.wait_and_advance()
            res[i] = staging[handle.index]
            handle.release()


@cute.jit
def one_stage_host(res: cute.Tensor):
    one_stage_kernel(res).launch(grid=(1, 1, 1), block=(64, 1, 1))


@needs_mbarrier
def test_one_stage_producer_consumer():
    res = np.full(8, -1, np.float32)
    cute.compile(one_stage_host, res, options=CPU)(res)
    np.testing.assert_array_equal(res, np.arange(8, dtype=np.float32))


@cute.kernel
def staged_kernel(SharedStorage: cutlass.Constexpr, res: cute.Tensor, staging: cute.Tensor):
    stages = cute.size(staging)
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    storage = cutlass.utils.SmemAllocator().allocate(SharedStorage, 64)
    group = pipeline.CooperativeGroup(pipeline.Agent.Thread, 32)
    pipe = pipeline.PipelineAsync.create(num_stages=stages, producer_group=group, consumer_group=group,
                                         barrier_storage=storage.mbar.data_ptr())
    staging_smem = storage.staging.get_tensor(staging.layout)
    staging_smem.fill(0)
    cute.arch.sync_threads()
    producer, consumer = pipe.make_participants()
    if warp_idx == 0:
        for i in cutlass.range(cute.size(res)):
            handle = producer.acquire_and_advance()
            staging_smem[handle.index] = 1.0 * i
            producer.commit(handle)
        producer.tail()
    if warp_idx == 1:
        for i in cutlass.range(cute.size(res)):
            handle = consumer.wait_and_advance()
            res[i] = staging_smem[handle.index]
            consumer.release(handle)
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 0:
        staging.store(staging_smem.load())


@cute.jit
def staged_host(res: cute.Tensor, staging: cute.Tensor):
    stages = cute.size(staging)

    @cute.struct
    class SharedStorage:
        mbar: cute.struct.MemRange[Int64, stages * 2]
        staging: cute.struct.Align[cute.struct.MemRange[Float32, stages], 1024]

    staged_kernel(SharedStorage, res, staging).launch(grid=(1, 1, 1), block=(64, 1, 1))


@needs_mbarrier
def test_staged_producer_consumer():
    res = np.full(8, -1, np.float32)
    staging = np.full(5, -1, np.float32)
    cute.compile(staged_host, res, staging, options=CPU)(res, staging)
    np.testing.assert_array_equal(res, np.arange(8, dtype=np.float32))
    # slot s last held item s + 5 when there was one, else item s
    np.testing.assert_array_equal(staging, [5, 6, 7, 3, 4])


# ---- a missing producer_commit ------------------------------------------------------------------------

@cute.kernel
def no_commit_kernel(res: cute.Tensor):
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    mbar = cute.arch.alloc_smem(Int64, 4, alignment=8)
    group = pipeline.CooperativeGroup(pipeline.Agent.Thread, 32)
    pipe = pipeline.PipelineAsync.create(num_stages=2, producer_group=group, consumer_group=group,
                                         barrier_storage=mbar)
    producer, consumer = pipe.make_participants()
    if warp_idx == 0:
        for i in cutlass.range(4):
            handle = producer.acquire_and_advance()
    if warp_idx == 1:
        for i in cutlass.range(4):
            handle = consumer.wait_and_advance()
            res[i] = 1.0
            handle.release()


@cute.jit
def no_commit_host(res: cute.Tensor):
    no_commit_kernel(res).launch(grid=(1, 1, 1), block=(64, 1, 1))


@needs_mbarrier
def test_missing_producer_commit_is_a_deadlock_naming_the_barrier():
    res = np.zeros(4, np.float32)
    with pytest.raises(cutlass.DSLRuntimeError, match=r"deadlock.*mbarrier"):
        cute.compile(no_commit_host, res, options=CPU)(res)


# ---- PipelineTmaAsync across a cluster -----------------------------------------------------------------

@cute.kernel
def tma_pipe_kernel(res: cute.Tensor, n: Int32):
    # No TMA here: the producer expects 0 bytes, so its arrival alone fills a slot. What is under
    # test is the consumers' release: each CTA's empty barriers count 2 arrivals (one consumer
    # warp x the 2 CTAs sharing the layout's n coordinate), which only come when every consumer
    # warp releases the slot in both CTAs; a release to the wrong CTA deadlocks.
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    bidx, _, _ = cute.arch.block_idx()
    mbar = cute.arch.alloc_smem(Int64, 4, alignment=8)
    pipe = pipeline.PipelineTmaAsync.create(
        num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 2),
        tx_count=0, barrier_storage=mbar, cta_layout_vmnk=cute.make_layout((1, 2, 1, 1)), defer_sync=True)
    pipeline.pipeline_init_arrive(cluster_shape_mn=(2, 1), is_relaxed=True)
    pipeline.pipeline_init_wait(cluster_shape_mn=(2, 1))
    if warp_idx == 0:
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
        for i in cutlass.range(n):
            pipe.producer_acquire(state)
            res[bidx, 0, i] = state.index * 10 + state.phase
            pipe.producer_commit(state)
            state.advance()
    if warp_idx == 1:
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        for i in cutlass.range(n):
            pipe.consumer_wait(state)
            res[bidx, 1, i] = state.index * 10 + state.phase
            pipe.consumer_release(state)
            state.advance()
    # no CTA may exit while its peer can still arrive at its barriers
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def tma_pipe_host(res: cute.Tensor, n: Int32):
    tma_pipe_kernel(res, n).launch(grid=(2, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1))


@needs_mbarrier
def test_tma_pipeline_releases_slots_across_the_cluster():
    n = 7
    res = np.full((2, 2, n), -1, np.int32)
    cute.compile(tma_pipe_host, res, n, options=CPU)(res, n)
    prod = [i * 10 + p for i, p, _ in state_model(2, 1, n)]
    cons = [i * 10 + p for i, p, _ in state_model(2, 0, n)]
    for b in range(2):
        np.testing.assert_array_equal(res[b, 0], prod)
        np.testing.assert_array_equal(res[b, 1], cons)
