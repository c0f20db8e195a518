"""The Blackwell pipelines of cutlass.pipeline on the CPU emulator, their handshakes checked by the
values that cross them:

- a CTA pair (cluster 2x1, 2-CTA MMA layout): each CTA's TMA producer loads its half of a tile with
  a cta_group::2 load that completes on the leader's barrier (PipelineTmaUmma); the leader's "MMA"
  warp sums both halves stage by stage and releases the stage to both CTAs with one multicast
  commit; it then commits the accumulator to both CTAs (PipelineUmmaAsync), whose epilogue warps
  write their half and release it to the leader. Checked against numpy.
- one CTA: thread producers to a commit-releasing consumer (PipelineAsyncUmma), a committing
  producer to thread consumers (PipelineUmmaAsync), a cp.async producer (PipelineCpAsync) and a
  TMA stage shared by an MMA consumer and thread consumers (PipelineTmaMultiConsumersAsync).
- the multicast masks, peer masks and leader ranks of cluster layouts against hand-computed ones.

The MMA side is a stand-in (plain shared-memory reads) whose release is the real tcgen05.commit."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass import Float32, Int32, Int64
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.pipeline import sm100
from ptx_target import needs_libnvvm

SM100 = "--target cpu --gpu-arch sm_100a"
Thread = pipeline.Agent.Thread
CG = pipeline.CooperativeGroup


# ---- cluster layouts ---------------------------------------------------------------------------------

def test_masks_of_cluster_layouts():
    # 2-CTA MMAs in a 4x2 cluster (V=2, M=2, N=2): rank = v + 2 m + 4 n.
    vmnk = cute.make_layout((2, 2, 2, 1))
    # CTA 0 (v0 m0 n0) releases to its M row (ranks 0,1 and 4,5: m = 0) and its N column (0..3: n = 0).
    assert sm100.multicast_mask_by_rank(vmnk)[0] == 0b00111111
    assert sm100.multicast_mask_by_rank(vmnk, (1, 0))[0] == 0b00110011  # same m only
    assert sm100.multicast_mask_by_rank(vmnk, (0, 1))[6] == 0b11110000  # rank 6: n = 1
    assert sm100.peer_mask_by_rank(vmnk) == [0b11, 0b11, 0b1100, 0b1100, 0b110000, 0b110000, 0b11000000, 0b11000000]
    assert sm100.leader_rank_by_rank(vmnk) == [0, 0, 2, 2, 4, 4, 6, 6]
    # 1-CTA MMAs in a 2x1 cluster: each CTA is its own leader, releases reach both (same n).
    vmnk1 = cute.make_layout((1, 2, 1, 1))
    assert sm100.peer_mask_by_rank(vmnk1) == [0b01, 0b10]
    assert sm100.multicast_mask_by_rank(vmnk1) == [0b11, 0b11]


# ---- a CTA pair: 2-CTA TMA into PipelineTmaUmma, then PipelineUmmaAsync -------------------------------

HALF = (8, 32)      # each CTA's half of the (16, 32) tile
NK = 4              # k tiles
STAGES = 2
HALF_BYTES = HALF[0] * HALF[1] * 4


@cute.kernel
def pair_kernel(atom: cute.CopyAtom, tma_a: cute.Tensor, out: cute.Tensor):
    @cute.struct
    class Storage:
        ab_mbar: cute.struct.MemRange[Int64, 2 * STAGES]
        acc_mbar: cute.struct.MemRange[Int64, 2]
        acc: cute.struct.MemRange[Float32, 2 * HALF[0] * HALF[1]]
        tile: cute.struct.Align[cute.struct.MemRange[Float32, STAGES * HALF[0] * HALF[1]], 1024]

    storage = utils.SmemAllocator().allocate(Storage)
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    v = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    vmnk = cute.make_layout((2, 1, 1, 1))
    ab = pipeline.PipelineTmaUmma.create(
        num_stages=STAGES, producer_group=CG(Thread), consumer_group=CG(Thread, 1), tx_count=2 * HALF_BYTES,
        barrier_storage=storage.ab_mbar.data_ptr(), cta_layout_vmnk=vmnk, defer_sync=True)
    acc = pipeline.PipelineUmmaAsync.create(
        num_stages=1, producer_group=CG(Thread), consumer_group=CG(Thread, 2),
        barrier_storage=storage.acc_mbar.data_ptr(), cta_layout_vmnk=vmnk, defer_sync=True)
    pipeline.pipeline_init_arrive(cluster_shape_mn=(2, 1))
    pipeline.pipeline_init_wait(cluster_shape_mn=(2, 1))
    tile = cute.make_layout((*HALF, STAGES), stride=(HALF[1], 1, HALF[0] * HALF[1]))
    s_own = cute.make_tensor(storage.tile.data_ptr(), tile)
    acc_layout = cute.make_layout((2 * HALF[0], HALF[1]), stride=(HALF[1], 1))
    if warp_idx == 0:  # TMA producer of each CTA: its half, completing on the leader's barrier
        producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
        for k in cutlass.range(NK):
            ab.producer_acquire(producer)
            g = cute.local_tile(tma_a, HALF, (v, k))
            cute.copy(atom, g, s_own[None, None, producer.index], tma_bar_ptr=ab.producer_get_barrier(producer))
            producer.advance()
        ab.producer_tail(producer)
    if warp_idx == 1:  # the "MMA" warp: only the leader works
        acc_producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
        if ab.is_leader_cta:
            s_peer = cute.make_tensor(cute.arch.map_dsmem_ptr(storage.tile.data_ptr(), 1), tile)
            accum = cute.make_tensor(storage.acc.data_ptr(), acc_layout)
            lane = cute.arch.lane_idx()
            for r in cutlass.range_constexpr(2 * HALF[0]):
                accum[r, lane] = 0.0
            acc.producer_acquire(acc_producer)
            consumer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
            for k in cutlass.range(NK):
                ab.consumer_wait(consumer)
                for r in cutlass.range_constexpr(HALF[0]):
                    accum[r, lane] = accum[r, lane] + s_own[r, lane, consumer.index]
                    accum[HALF[0] + r, lane] = accum[HALF[0] + r, lane] + s_peer[r, lane, consumer.index]
                ab.consumer_release(consumer)  # one multicast commit releases the stage in both CTAs
                consumer.advance()
            acc.producer_commit(acc_producer)  # the accumulator is full in both CTAs
            acc_producer.advance()
        acc.producer_tail(acc_producer)  # waits in the leader only
    if warp_idx == 2:  # epilogue of each CTA: its half of the accumulator, released to the leader
        accum = cute.make_tensor(cute.arch.map_dsmem_ptr(storage.acc.data_ptr(), 0), acc_layout)
        consumer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        acc.consumer_wait(consumer)
        lane = cute.arch.lane_idx()
        for r in cutlass.range_constexpr(HALF[0]):
            out[v * HALF[0] + r, lane] = accum[v * HALF[0] + r, lane]
        with cute.arch.elect_one():
            acc.consumer_release(consumer)
    # No CTA leaves while its peer may still reach its shared memory.
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def pair_host(a: cute.Tensor, out: cute.Tensor):
    op = cpasync.CopyBulkTensorTileG2SOp(cta_group=tcgen05.CtaGroup.TWO)
    atom, tma_a = cpasync.make_tiled_tma_atom(op, a, cute.make_layout(HALF, stride=(HALF[1], 1)), HALF)
    pair_kernel(atom, tma_a, out).launch(grid=(2, 1, 1), block=(96, 1, 1), cluster=(2, 1, 1))


# On the PTX executor too: the peer's cta_group::2 TMA bytes reach the leader's barrier through
# the address with bit 24 cleared, the shared::cluster window's rank bit.
@pytest.mark.parametrize("options", [SM100, pytest.param("--target ptx --gpu-arch sm_100a", marks=needs_libnvvm)],
                         ids=["emulator", "ptx"])
def test_cta_pair_tma_umma_and_umma_async(options):
    a = (np.arange(2 * HALF[0] * NK * HALF[1]) % 97).astype(np.float32).reshape(2 * HALF[0], NK * HALF[1])
    out = np.full((2 * HALF[0], HALF[1]), -1, np.float32)
    f = cute.compile(pair_host, a, out, options=options)
    f(a, out)
    np.testing.assert_array_equal(out, a.reshape(2 * HALF[0], NK, HALF[1]).sum(axis=1))
    ptx = getattr(f, "__ptx__", None)
    if ptx:
        assert "cp.async.bulk.tensor.2d.cta_group::2.shared::cluster" in ptx
        assert "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64" in ptx


def test_two_cta_tma_without_the_leaders_expect_tx_deadlocks():
    # Each CTA expects only its own half's bytes on its own barrier, but cta_group::2 loads credit
    # the leader's: the peer's barrier never completes, and the emulator reports the wait.
    a = np.zeros((2 * HALF[0], NK * HALF[1]), np.float32)
    out = np.zeros((2 * HALF[0], HALF[1]), np.float32)

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_a: cute.Tensor):
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, HALF[0] * HALF[1], alignment=1024),
                             cute.make_layout(HALF, stride=(HALF[1], 1)))
        v = cute.arch.block_idx_in_cluster()
        tidx, _, _ = cute.arch.thread_idx()
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, HALF_BYTES)
        cute.copy(atom, cute.local_tile(tma_a, HALF, (v, 0)), s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)

    @cute.jit
    def host(a: cute.Tensor):
        op = cpasync.CopyBulkTensorTileG2SOp(cta_group=tcgen05.CtaGroup.TWO)
        atom, tma_a = cpasync.make_tiled_tma_atom(op, a, cute.make_layout(HALF, stride=(HALF[1], 1)), HALF)
        kernel(atom, tma_a).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    with pytest.raises(Exception, match="(?i)deadlock|waits"):
        cute.compile(host, a, options=SM100)(a)


# ---- one CTA ------------------------------------------------------------------------------------------

N_ITEMS = 7


@cute.kernel
def single_kernel(res: cute.Tensor):
    @cute.struct
    class Storage:
        to_mma: cute.struct.MemRange[Int64, 4]
        from_mma: cute.struct.MemRange[Int64, 4]
        staging: cute.struct.MemRange[Float32, 2 * 32]
        result: cute.struct.MemRange[Float32, 2 * 32]

    storage = utils.SmemAllocator().allocate(Storage)
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    # warp 0 (32 producer threads) -> warp 1 (the "MMA" warp) -> warp 2 (32 consumer threads)
    to_mma = pipeline.PipelineAsyncUmma.create(num_stages=2, producer_group=CG(Thread, 32),
                                               consumer_group=CG(Thread), barrier_storage=storage.to_mma.data_ptr())
    from_mma = pipeline.PipelineUmmaAsync.create(num_stages=2, producer_group=CG(Thread),
                                                 consumer_group=CG(Thread, 32),
                                                 barrier_storage=storage.from_mma.data_ptr())
    staging = cute.make_tensor(storage.staging.data_ptr(), cute.make_layout((32, 2)))
    result = cute.make_tensor(storage.result.data_ptr(), cute.make_layout((32, 2)))
    lane = cute.arch.lane_idx()
    if warp_idx == 0:
        producer, _ = to_mma.make_participants()
        for i in cutlass.range(N_ITEMS):
            handle = producer.acquire_and_advance()
            staging[lane, handle.index] = Float32(100 * i + lane)
            handle.commit()
        producer.tail()
    if warp_idx == 1:
        _, consumer = to_mma.make_participants()
        producer, _ = from_mma.make_participants()
        for i in cutlass.range(N_ITEMS):
            token = consumer.try_wait()
            handle = consumer.wait_and_advance(token)
            out = producer.acquire_and_advance(producer.try_acquire())
            result[lane, out.index] = staging[lane, handle.index] * 2.0
            handle.release()   # tcgen05.commit to the stage's empty barrier
            out.commit()       # tcgen05.commit to the result's full barrier
        producer.tail()
    if warp_idx == 2:
        _, consumer = from_mma.make_participants()
        for i in cutlass.range(N_ITEMS):
            handle = consumer.wait_and_advance()
            res[i, lane] = result[lane, handle.index]
            handle.release()


@cute.jit
def single_host(res: cute.Tensor):
    single_kernel(res).launch(grid=(1, 1, 1), block=(96, 1, 1))


def test_async_umma_then_umma_async_in_one_cta():
    res = np.full((N_ITEMS, 32), -1, np.float32)
    cute.compile(single_host, res, options=SM100)(res)
    want = 2.0 * (100 * np.arange(N_ITEMS)[:, None] + np.arange(32)[None, :])
    np.testing.assert_array_equal(res, want)


@cute.kernel
def cp_async_kernel(src: cute.Tensor, res: cute.Tensor):
    @cute.struct
    class Storage:
        mbar: cute.struct.MemRange[Int64, 4]
        staging: cute.struct.Align[cute.struct.MemRange[Float32, 2 * 32], 16]

    storage = utils.SmemAllocator().allocate(Storage)
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    pipe = pipeline.PipelineCpAsync.create(num_stages=2, producer_group=CG(Thread, 32), consumer_group=CG(Thread, 32),
                                           barrier_storage=storage.mbar.data_ptr())
    staging = cute.make_tensor(storage.staging.data_ptr(), cute.make_layout((32, 2)))
    lane = cute.arch.lane_idx()
    atom = cute.make_copy_atom(cpasync.CopyG2SOp(), Float32, num_bits_per_copy=32)
    if warp_idx == 0:
        producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
        for i in cutlass.range(cute.size(res, mode=[0])):
            pipe.producer_acquire(producer)
            cute.copy(atom, cute.make_tensor(src.iterator + (i * 32 + lane), cute.make_layout(1)),
                      cute.make_tensor(staging.iterator + (lane + 32 * producer.index), cute.make_layout(1)))
            pipe.producer_commit(producer)  # cp.async.mbarrier.arrive.noinc: after the copy landed
            producer.advance()
        pipe.producer_tail(producer)
    if warp_idx == 1:
        consumer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        for i in cutlass.range(cute.size(res, mode=[0])):
            pipe.consumer_wait(consumer)
            res[i, lane] = staging[lane, consumer.index]
            pipe.consumer_release(consumer)
            consumer.advance()


@cute.jit
def cp_async_host(src: cute.Tensor, res: cute.Tensor):
    cp_async_kernel(src, res).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_cp_async_pipeline():
    src = np.arange(5 * 32, dtype=np.float32).reshape(5, 32) * 3
    res = np.zeros_like(src)
    cute.compile(cp_async_host, src, res, options=SM100)(src, res)
    np.testing.assert_array_equal(res, src)


@cute.kernel
def multi_consumer_kernel(atom: cute.CopyAtom, tma_a: cute.Tensor, res: cute.Tensor):
    @cute.struct
    class Storage:
        mbar: cute.struct.MemRange[Int64, 4]
        tile: cute.struct.Align[cute.struct.MemRange[Float32, 2 * HALF[0] * HALF[1]], 1024]

    storage = utils.SmemAllocator().allocate(Storage)
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    pipe = pipeline.PipelineTmaMultiConsumersAsync.create(
        num_stages=2, producer_group=CG(Thread), consumer_group_umma=CG(Thread), consumer_group_async=CG(Thread, 32),
        tx_count=HALF_BYTES, barrier_storage=storage.mbar.data_ptr())
    s = cute.make_tensor(storage.tile.data_ptr(), cute.make_layout((*HALF, 2), stride=(HALF[1], 1, HALF[0] * HALF[1])))
    lane = cute.arch.lane_idx()
    if warp_idx == 0:
        producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
        for k in cutlass.range(NK):
            pipe.producer_acquire(producer)
            cute.copy(atom, cute.local_tile(tma_a, HALF, (0, k)), s[None, None, producer.index],
                      tma_bar_ptr=pipe.producer_get_barrier(producer))
            producer.advance()
        pipe.producer_tail(producer)
    if warp_idx == 1:  # the MMA consumer: row 0 of each stage
        consumer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        for k in cutlass.range(NK):
            pipe.consumer_wait(consumer)
            res[k, 0, lane] = s[0, lane, consumer.index]
            pipe.consumer_release(consumer, pipeline.PipelineOp.TCGen05Mma)
            consumer.advance()
    if warp_idx == 2:  # the thread consumers: the last row
        consumer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        for k in cutlass.range(NK):
            pipe.consumer_wait(consumer)
            res[k, 1, lane] = s[HALF[0] - 1, lane, consumer.index]
            pipe.consumer_release(consumer)
            consumer.advance()


@cute.jit
def multi_consumer_host(a: cute.Tensor, res: cute.Tensor):
    atom, tma_a = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                              cute.make_layout(HALF, stride=(HALF[1], 1)), HALF)
    multi_consumer_kernel(atom, tma_a, res).launch(grid=(1, 1, 1), block=(96, 1, 1))


def test_tma_stage_shared_by_an_mma_and_thread_consumers():
    a = np.arange(HALF[0] * NK * HALF[1], dtype=np.float32).reshape(HALF[0], NK * HALF[1])
    res = np.zeros((NK, 2, 32), np.float32)
    cute.compile(multi_consumer_host, a, res, options=SM100)(a, res)
    tiles = a.reshape(HALF[0], NK, HALF[1]).transpose(1, 0, 2)
    np.testing.assert_array_equal(res[:, 0], tiles[:, 0])
    np.testing.assert_array_equal(res[:, 1], tiles[:, -1])


# ---- the static helpers libraries call (quack's PipelineTmaCpAsyncUmma) ----------------------------------

@cute.kernel
def leader_and_mask_kernel(out: cute.Tensor):
    vmnk = cute.make_layout((2, 2, 1, 1))  # 2-CTA MMAs, two pairs along M: rank = v + 2 m
    rank = cute.arch.block_idx_in_cluster()
    if cute.arch.thread_idx()[0] == 0:
        out[rank, 0] = Int32(pipeline.PipelineTmaUmma._compute_mcast_arrival_mask(vmnk))
        out[rank, 1] = Int32(pipeline.PipelineTmaUmma._compute_is_leader_cta(vmnk))


@cute.jit
def leader_and_mask_host(out: cute.Tensor):
    leader_and_mask_kernel(out).launch(grid=(4, 1, 1), block=(32, 1, 1), cluster=(4, 1, 1))


def test_leader_and_arrival_mask_helpers_per_cta():
    out = np.full((4, 2), -1, np.int32)
    cute.compile(leader_and_mask_host, out, options=SM100)(out)
    # every CTA shares n = 0, so each releases to all four (mcast modes (1, 1)); v = 0 leads
    np.testing.assert_array_equal(out[:, 0], [0b1111] * 4)
    np.testing.assert_array_equal(out[:, 1], [1, 0, 1, 0])
