"""cutlass.pipeline on the CPU emulator: PipelineState's cursor against a Python model, the
producer / consumer kernels of NVIDIA's async_pipeline notebook (written here in the same style),
PipelineTmaAsync's consumer release across the CTAs of a cluster, PipelineOrder, and a missing
producer_commit reported as a deadlock naming the barrier."""
import numpy as np
import pytest

import nvidia_examples

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync
from cutlass import Float32, Int32, Int64
from cutlass.cute.runtime import from_dlpack
import toolchain

CPU = "--target cpu"


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
    with pytest.raises(ValueError, match="CooperativeGroup: size must be a positive int, got 0"):
        pipeline.CooperativeGroup(pipeline.Agent.Thread, 0)
    with pytest.raises(TypeError, match="CooperativeGroup: agent must be a pipeline.Agent, got 'thread'"):
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


def test_staged_producer_consumer():
    res = np.full(8, -1, np.float32)
    staging = np.full(5, -1, np.float32)
    # from_dlpack as in the notebook: a static shape, so the stage count is a compile-time int
    r, st = from_dlpack(res), from_dlpack(staging)
    cute.compile(staged_host, r, st, options=CPU)(r, st)
    np.testing.assert_array_equal(res, np.arange(8, dtype=np.float32))
    # slot s last held item s + 5 when there was one, else item s
    np.testing.assert_array_equal(staging, [5, 6, 7, 3, 4])


@cute.kernel
def private_state_kernel(res: cute.Tensor):
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    mbar = cute.arch.alloc_smem(Int64, 6, alignment=8)
    staging_smem = cute.make_tensor(cute.arch.alloc_smem(Float32, 3, alignment=16), cute.make_layout(3))
    group = pipeline.CooperativeGroup(pipeline.Agent.Thread, 32)
    pipe = pipeline.PipelineAsync.create(num_stages=3, producer_group=group, consumer_group=group,
                                         barrier_storage=mbar)
    producer, consumer = pipe.make_participants()
    if warp_idx == 0:
        for i in cutlass.range(cute.size(res)):
            # NVIDIA's Blackwell fmha.py acquires by hand through the handle's private state, then
            # advances the handle: the state it read must be the one advance() moves.
            state = producer._PipelineProducer__state.clone()
            pipe.producer_acquire(state)
            staging_smem[state.index] = 1.0 * i
            pipe.producer_commit(state)
            producer.advance()
    if warp_idx == 1:
        for i in cutlass.range(cute.size(res)):
            state = consumer._PipelineConsumer__state
            pipe.consumer_wait(state)
            res[i] = staging_smem[state.index] + 100.0 * state.index
            pipe.consumer_release(state)
            consumer.advance()


@cute.jit
def private_state_host(res: cute.Tensor):
    private_state_kernel(res).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_handles_expose_their_state_by_nvidias_private_name():
    res = np.full(7, -1, np.float32)
    cute.compile(private_state_host, res, options=CPU)(res)
    np.testing.assert_array_equal(res, np.arange(7) + 100.0 * (np.arange(7) % 3))


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


def test_missing_producer_commit_is_a_deadlock_naming_the_barrier():
    res = np.zeros(4, np.float32)
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.compile(no_commit_host, res, options=CPU)(res)
    msg = str(e.value)
    assert "mbarrier deadlock in kernel" in msg, msg
    # the consumer waits for the first full barrier (offset 0), which no commit ever arrives at;
    # the producer waits for the first empty barrier of the second round (offset 16 = 2 x 8 bytes)
    assert "warp 1 waits at" in msg and "for phase parity 0 of the mbarrier at shared offset 0 " in msg, msg
    assert "warp 0 waits at" in msg and "for phase parity 0 of the mbarrier at shared offset 16 " in msg, msg
    assert "still needs 32 of 32 arrival(s)" in msg, msg


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


def test_tma_pipeline_releases_slots_across_the_cluster():
    n = 7
    res = np.full((2, 2, n), -1, np.int32)
    cute.compile(tma_pipe_host, res, n, options=CPU)(res, n)
    prod = [i * 10 + p for i, p, _ in state_model(2, 1, n)]
    cons = [i * 10 + p for i, p, _ in state_model(2, 0, n)]
    for b in range(2):
        np.testing.assert_array_equal(res[b, 0], prod)
        np.testing.assert_array_equal(res[b, 1], cons)


# ---- PipelineTmaAsync with TMA loads --------------------------------------------------------------

TILE = (8, 32)
STAGES = 3


@cute.kernel
def tma_stream_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor, ktiles: cutlass.Constexpr,
                      peek: cutlass.Constexpr):
    # Warp 0 streams the (8, 32) tiles of a row panel through 3 shared-memory stages with TMA; warp 1
    # consumes each stage once its bytes landed (the full barrier's transaction count) and
    # writes it back doubled, releasing the stage to the producer.
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    tidx, _, _ = cute.arch.thread_idx()
    mbar = cute.arch.alloc_smem(Int64, 2 * STAGES, alignment=8)
    smem = cute.make_tensor(cute.arch.alloc_smem(Float32, TILE[0] * TILE[1] * STAGES, alignment=1024),
                            cute.make_layout((TILE[0], TILE[1], STAGES), stride=(TILE[1], 1, TILE[0] * TILE[1])))
    pipe = pipeline.PipelineTmaAsync.create(
        num_stages=STAGES, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
        tx_count=TILE[0] * TILE[1] * 4, barrier_storage=mbar)
    if warp == 0:
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
        for k in cutlass.range(ktiles):
            if cutlass.const_expr(peek):  # NVIDIA's persistent GEMMs: try first, wait only if not ready
                pipe.producer_acquire(state, pipe.producer_try_acquire(state))
            else:
                pipe.producer_acquire(state)
            g = cute.local_tile(tma_tensor, TILE, (0, k))
            cute.copy(atom, g, smem[None, None, state.index], tma_bar_ptr=pipe.producer_get_barrier(state))
            pipe.producer_commit(state)
            state.advance()
        pipe.producer_tail(state)
    if warp == 1:
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
        lane = tidx - 32
        for k in cutlass.range(ktiles):
            if cutlass.const_expr(peek):
                pipe.consumer_wait(state, pipe.consumer_try_wait(state))
            else:
                pipe.consumer_wait(state)
            for r in cutlass.range_constexpr(TILE[0]):
                out[r, k * TILE[1] + lane] = smem[r, lane, state.index] * 2.0
            pipe.consumer_release(state)
            state.advance()


@cute.jit
def tma_stream_host(a: cute.Tensor, out: cute.Tensor, ktiles: cutlass.Constexpr, peek: cutlass.Constexpr):
    atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                                   cute.make_layout(TILE, stride=(TILE[1], 1)), TILE)
    tma_stream_kernel(atom, tma_tensor, out, ktiles, peek).launch(grid=(1, 1, 1), block=(64, 1, 1))


@pytest.mark.parametrize("peek", [False, True])
def test_tma_pipeline_streams_tiles_through_the_stages(peek):
    ktiles = 7  # more tiles than stages: each stage is refilled after its release
    a = np.arange(TILE[0] * TILE[1] * ktiles, dtype=np.float32).reshape(TILE[0], TILE[1] * ktiles)
    out = np.full_like(a, -1)
    cute.compile(tma_stream_host, a, out, ktiles, peek, options=CPU)(a, out)
    np.testing.assert_array_equal(out, a * 2)


# ---- PipelineTmaStore ------------------------------------------------------------------------------

@cute.kernel
def tma_store_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, ktiles: cutlass.Constexpr):
    # One warp writes `ktiles` tiles through 2 shared-memory buffers, each stored by TMA; the
    # pipeline makes a buffer wait until the store that read it last is done reading.
    tidx, _, _ = cute.arch.thread_idx()
    smem = cute.make_tensor(cute.arch.alloc_smem(Float32, TILE[0] * TILE[1] * 2, alignment=1024),
                            cute.make_layout((TILE[0], TILE[1], 2), stride=(TILE[1], 1, TILE[0] * TILE[1])))
    pipe = pipeline.PipelineTmaStore.create(num_stages=2,
                                            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32))
    for t in cutlass.range_constexpr(ktiles):
        buf = t % 2
        for i in cutlass.range(tidx, TILE[0] * TILE[1], 32):
            smem[i // TILE[1], i % TILE[1], buf] = Float32(t * 1000 + i)
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.sync_threads()
        cute.copy(atom, smem[None, None, buf], cute.local_tile(tma_tensor, TILE, (0, t)))
        pipe.producer_commit()
        pipe.producer_acquire()
        cute.arch.sync_threads()
    pipe.producer_tail()


@cute.jit
def tma_store_host(c: cute.Tensor, ktiles: cutlass.Constexpr):
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                          cute.make_layout(TILE, stride=(TILE[1], 1)), TILE)
    tma_store_kernel(atom, t, ktiles).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_tma_store_pipeline_writes_every_tile():
    ktiles = 5
    c = np.full((TILE[0], TILE[1] * ktiles), -1, np.float32)
    f = cute.compile(tma_store_host, c, ktiles, options=CPU)
    f(c)
    want = np.concatenate([(t * 1000 + np.arange(TILE[0] * TILE[1])).reshape(TILE) for t in range(ktiles)], axis=1)
    np.testing.assert_array_equal(c, want.astype(np.float32))
    toolchain.ptx_of(f)
    assert f.__ptx__.count("cp.async.bulk.wait_group.read 1") >= 1 and "cp.async.bulk.wait_group.read 0" in f.__ptx__


# ---- PipelineOrder ---------------------------------------------------------------------------------

@cute.kernel
def order_kernel(out: cute.Tensor, n: Int32):
    # Two warps take turns (CUTLASS's OrderedSequenceBarrier): each appends its id, then hands over.
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    lane = cute.arch.lane_idx()
    mbar = cute.arch.alloc_smem(Int64, 2, alignment=8)
    counter = cute.make_tensor(cute.arch.alloc_smem(Int32, 1), cute.make_layout(1))
    if warp == 0 and lane == 0:
        counter[0] = 0
    order = pipeline.PipelineOrder.create(barrier_storage=mbar, depth=1, length=2, group_id=warp,
                                          producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32))
    for i in cutlass.range(n):
        order.wait()
        if lane == 0:
            out[counter[0]] = warp
            counter[0] = counter[0] + 1
        cute.arch.sync_warp()
        order.arrive()


@cute.jit
def order_host(out: cute.Tensor, n: Int32):
    order_kernel(out, n).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_pipeline_order_alternates_the_groups():
    n = 5
    out = np.full(2 * n, -1, np.int32)
    cute.compile(order_host, out, n, options=CPU)(out, n)
    np.testing.assert_array_equal(out, [0, 1] * n)


# ---- NVIDIA's Hopper examples: every cutlass.pipeline name they use exists ----------------------------

def test_the_pipeline_names_of_nvidias_hopper_examples_resolve():
    import os
    import re
    root = nvidia_examples.path("cute", "hopper")
    if not os.path.isdir(root):
        pytest.skip("NVIDIA's examples are not here")
    names, methods = set(), set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                text = open(os.path.join(dirpath, f)).read()
                names |= set(re.findall(r"\bpipeline\.([A-Z][A-Za-z]+|[a-z_]+)\b(?!\.py)", text))
                methods |= set(re.findall(r"_pipeline\.([a-z_]+)\(", text))
                methods |= set(re.findall(r"(?:producer|consumer)\.([a-z_]+)\(", text))
    names.discard("py")
    missing = sorted(n for n in names if not hasattr(pipeline, n))
    assert not missing, missing
    objects = [pipeline.PipelineTmaAsync, pipeline.PipelineAsync, pipeline.PipelineTmaStore, pipeline.PipelineProducer,
               pipeline.PipelineConsumer, pipeline.PipelineOrder]
    missing = sorted(m for m in methods if not any(hasattr(o, m) for o in objects))
    assert not missing, missing


# ---- NVIDIA's async_pipeline notebook, unchanged, on the emulator -----------------------------------------

class _HostTorch:
    """The few torch calls the notebook makes, over numpy host arrays (its kernels then run on the
    emulator): zeros(shape, device=...) and cuda.synchronize()."""

    class cuda:  # noqa: N801 - the torch attribute name
        @staticmethod
        def synchronize():
            pass

    @staticmethod
    def zeros(shape, device=None):
        return np.zeros(shape, np.float32)


def test_nvidias_async_pipeline_notebook_runs_unchanged(monkeypatch, tmp_path):
    import json
    import os
    path = nvidia_examples.path("cute", "notebooks", "async_pipeline.ipynb")
    if not os.path.exists(path):
        pytest.skip("NVIDIA's notebook is not here")
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    cells = [c for c in json.load(open(path))["cells"] if c["cell_type"] == "code"]
    ns = {"__name__": "async_pipeline_notebook"}
    results = []
    for k, c in enumerate(cells):
        src = "".join(c["source"])
        src = src.replace("import torch\n", "")  # the host stand-in below
        ns["torch"] = _HostTorch
        # each cell in a file of its own, where the DSL's preprocessor reads the kernels' source
        cell_file = tmp_path / f"async_pipeline_cell{k}.py"
        cell_file.write_text(src)
        code = compile(src, str(cell_file), "exec")
        exec(code, ns)  # noqa: S102 - the notebook's own cells
        if src.strip().startswith("res"):
            results.append((np.array(ns["res"]), np.array(ns["staging"]) if "staging" in ns else None))
    expected = np.arange(8, dtype=np.float32)
    assert len(results) == 3
    for res, _ in results:
        np.testing.assert_array_equal(res, expected)
    np.testing.assert_array_equal(results[-1][1], [5, 6, 7, 3, 4])


# ---- barrier storage the pipeline allocates itself --------------------------------------------------------

@cute.kernel
def own_storage_kernel(res: cute.Tensor):
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    staging = cute.make_tensor(cute.arch.alloc_smem(Float32, 2), cute.make_layout(2))
    group = pipeline.CooperativeGroup(pipeline.Agent.Warp, 1)  # one arrival per warp
    pipe = pipeline.PipelineAsync.create(num_stages=2, producer_group=group, consumer_group=group)
    producer, consumer = pipe.make_participants()
    if warp_idx == 0:
        for i in cutlass.range(cute.size(res)):
            handle = producer.acquire_and_advance()
            staging[handle.index] = 2.0 * i
            handle.commit()
        producer.tail()
    if warp_idx == 1:
        for i in cutlass.range(cute.size(res)):
            handle = consumer.wait_and_advance()
            res[i] = staging[handle.index]
            handle.release()


@cute.jit
def own_storage_host(res: cute.Tensor):
    own_storage_kernel(res).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_pipeline_allocates_its_barriers_and_warp_agents_arrive_once():
    res = np.full(6, -1, np.float32)
    cute.compile(own_storage_host, res, options=CPU)(res)
    np.testing.assert_array_equal(res, 2.0 * np.arange(6))


@cute.kernel
def cloned_consumer_kernel(res: cute.Tensor, order: cute.Tensor):
    # As NVIDIA's mixed-input prefill: one consumer handle waits, a clone of it releases.
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    mbar = cute.arch.alloc_smem(Int64, 6, alignment=8)
    staging = cute.make_tensor(cute.arch.alloc_smem(Float32, 3, alignment=16), cute.make_layout(3))
    group = pipeline.CooperativeGroup(pipeline.Agent.Thread, 32)
    pipe = pipeline.PipelineAsync.create(num_stages=3, producer_group=group, consumer_group=group, barrier_storage=mbar)
    producer, consumer = pipe.make_participants()
    if warp_idx == 0:
        for i in cutlass.range(cute.size(res)):
            handle = producer.acquire_and_advance()
            staging[handle.index] = 1.0 * i
            handle.commit()
        producer.tail()
    if warp_idx == 1:
        releaser = consumer.clone()
        for i in cutlass.range(cute.size(res)):
            handle = consumer.wait_and_advance()
            res[i] = staging[handle.index]
            order[i] = releaser.index  # the clone trails the consumer by one wait
            releaser.release()
            releaser.advance()


@cute.jit
def cloned_consumer_host(res: cute.Tensor, order: cute.Tensor):
    cloned_consumer_kernel(res, order).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_a_cloned_consumer_moves_on_its_own():
    res, order = np.full(8, -1, np.float32), np.full(8, -1, np.int32)
    cute.compile(cloned_consumer_host, res, order, options=CPU)(res, order)
    np.testing.assert_array_equal(res, np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(order, np.arange(8) % 3)
