"""`cutlass.utils.gemm.sm100`: the Blackwell GEMM epilogue's building blocks, library code over DSL
operations: the accumulator of one tile read from tensor memory subtile by subtile (tcgen05.ld),
converted, passed through the kernel's epilogue_op and stored to global memory. They take the
kernel object (`gemm`) of NVIDIA's examples and read its cta_tile_shape_mnk, c_layout, c_dtype,
acc_dtype and use_2cta_instrs (the TMA-store epilogue also epilog_sync_bar_id and epilogue_warp_id)."""
from ... import cute
from ...cute.nvgpu import cpasync, tcgen05
from ...pipeline.named_barrier import NamedBarrier
from ...cute.tensor import CopyUniversalOp
from .. import blackwell_helpers


def transform_partitioned_tensor_layout(tensor, *, loc=None, ip=None):
    """An MMA-partitioned tensor ((MMA M, MMA N), rest M, rest N, ...) seen as the tile it covers,
    ((MMA M, rest M), (MMA N, rest N), ...): mode 0 the tile's M, mode 1 its N (so that it can be
    divided by an epilogue tile), the remaining modes unchanged."""
    layout = tensor.layout
    if cute.rank(layout) < 3 or cute.rank(cute.get(layout, mode=[0])) != 2:
        raise ValueError(f"transform_partitioned_tensor_layout: expected ((MMA M, MMA N), rest M, rest N, ...), got "
                         f"{layout}")
    mma = cute.get(layout, mode=[0])
    mma_m, mma_n = cute.get(mma, mode=[0]), cute.get(mma, mode=[1])
    rest_m, rest_n = cute.get(layout, mode=[1]), cute.get(layout, mode=[2])
    modes = [cute.make_layout((mma_m.shape, rest_m.shape), stride=(mma_m.stride, rest_m.stride)),
             cute.make_layout((mma_n.shape, rest_n.shape), stride=(mma_n.stride, rest_n.stride))]
    modes += [cute.get(layout, mode=[i]) for i in range(3, cute.rank(layout))]
    shape = tuple(m.shape for m in modes)
    stride = tuple(m.stride for m in modes)
    return cute.make_tensor(tensor.iterator, cute.make_layout(shape, stride=stride))


def _tile_modes(tensor, mma_rank):
    """The tensor with (M, N) tile modes: MMA-partitioned ones (rank `mma_rank`) are transformed."""
    return transform_partitioned_tensor_layout(tensor) if cute.rank(tensor) == mma_rank else tensor


def epilogue_tmem_copy_and_partition(gemm, tidx, tAcc, gC_mnl, epi_tile, use_2cta_instrs, *, loc=None, ip=None):
    """The tensor-memory load of the epilogue and this thread's views: (tiled copy, tTR_tAcc
    (T2R, T2R_M, T2R_N, EPI_M, EPI_N, STAGE), tTR_rAcc (the registers of one subtile)). `tAcc` is the
    accumulator (MMA, MMA_M, MMA_N, STAGE) or its tile-mode form, `gC_mnl` C partitioned by the MMA
    ((MMA, MMA_M, MMA_N, RestM, RestN, L) or its tile-mode form)."""
    atom = blackwell_helpers.get_tmem_load_op(gemm.cta_tile_shape_mnk, gemm.c_layout, gemm.c_dtype, gemm.acc_dtype,
                                              epi_tile, use_2cta_instrs)
    # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, STAGE)
    tAcc_epi = cute.flat_divide(_tile_modes(tAcc, 4), epi_tile)
    tiled_copy = tcgen05.make_tmem_copy(atom, tAcc_epi[(None, None, 0, 0, 0)])
    thr_copy = tiled_copy.get_slice(tidx)
    tTR_tAcc = thr_copy.partition_S(tAcc_epi)
    # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, RestM, RestN, L)
    gC_epi = cute.flat_divide(_tile_modes(gC_mnl, 6), epi_tile)
    tTR_gC = thr_copy.partition_D(gC_epi)
    tTR_rAcc = cute.make_rmem_tensor(tTR_gC[(None, None, None, 0, 0, 0, 0, 0)].shape, gemm.acc_dtype)
    return tiled_copy, tTR_tAcc, tTR_rAcc


def epilogue(gemm, tidx, tCtAcc_base, tCgC, epi_tile, epilogue_op, mma_tile_coord_mnl, acc_consumer_state,
             acc_pipeline, tCcC_base=None, mC_mnl=None, overlapping_accum=False, *, loc=None, ip=None):
    """One tile's epilogue by the epilogue warps: wait for the accumulator stage (PipelineUmmaAsync),
    load it subtile by subtile from tensor memory, store epilogue_op(acc converted to C's type) to C
    at tile `mma_tile_coord_mnl`, release the stage (one arrival per warp) and return the advanced
    consumer state.

    `tCcC_base` (C's coordinates partitioned as tCgC) with `mC_mnl`: only the elements inside C's
    extents are stored. `overlapping_accum` (one accumulator stage that the MMA's scale factors
    share, NVIDIA's sm_103 GEMM with N = 256): the stage is the consumer phase's half, the subtiles
    are read from the far end on phase 0, and the stage is released after
    gemm.iter_acc_early_release_in_epilogue subtiles, as the MMA warp takes it back as soon as it can."""
    tiled_copy, tTR_tAcc_base, tTR_rAcc = epilogue_tmem_copy_and_partition(gemm, tidx, tCtAcc_base, tCgC, epi_tile,
                                                                            gemm.use_2cta_instrs)
    thr_copy = tiled_copy.get_slice(tidx)
    tTR_gC_all = thr_copy.partition_D(cute.flat_divide(_tile_modes(tCgC, 6), epi_tile))
    tTR_gC = tTR_gC_all[(None, None, None, None, None, *mma_tile_coord_mnl)]
    tTR_cC = None
    if tCcC_base is not None:
        tTR_cC_all = thr_copy.partition_D(cute.flat_divide(_tile_modes(tCcC_base, 6), epi_tile))
        tTR_cC = tTR_cC_all[(None, None, None, None, None, *mma_tile_coord_mnl)]
        tTR_cC = cute.group_modes(tTR_cC, 3, cute.rank(tTR_cC))
    stage = acc_consumer_state.phase if overlapping_accum else acc_consumer_state.index
    tTR_tAcc = tTR_tAcc_base[(None, None, None, None, None, stage)]
    acc_pipeline.consumer_wait(acc_consumer_state)
    # (T2R, T2R_M, T2R_N, subtiles)
    tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))
    tTR_gC = cute.group_modes(tTR_gC, 3, cute.rank(tTR_gC))
    tTR_rC = cute.make_rmem_tensor(tTR_rAcc.shape, gemm.c_dtype)
    store = cute.make_copy_atom(CopyUniversalOp(), gemm.c_dtype)
    subtiles = cute.size(tTR_tAcc.shape, mode=[3])
    released = False
    for subtile in range(subtiles):
        real = subtile
        if overlapping_accum:  # phase 0: the subtiles from the last one back
            real = subtile + (1 - stage) * (subtiles - 1 - 2 * subtile)
        cute.copy(tiled_copy, tTR_tAcc[(None, None, None, real)], tTR_rAcc)
        cute.arch.fence_view_async_tmem_load()  # tcgen05.wait::ld: the registers hold the values now
        if overlapping_accum and subtile == gemm.iter_acc_early_release_in_epilogue:
            with cute.arch.elect_one():
                acc_pipeline.consumer_release(acc_consumer_state)
            acc_consumer_state.advance()
            released = True
        tTR_rC.store(epilogue_op(tTR_rAcc.load().to(gemm.c_dtype)))
        gC_sub = tTR_gC[(None, None, None, real)]
        if tTR_cC is None:
            cute.copy(store, tTR_rC, gC_sub)
        else:
            cC_sub = tTR_cC[(None, None, None, real)]
            for i in range(cute.size(tTR_rC)):
                with cute.arch._if_region(cute.elem_less(cC_sub[i], mC_mnl.shape)):
                    gC_sub[i] = tTR_rC[i]
    if not released:
        with cute.arch.elect_one():
            acc_pipeline.consumer_release(acc_consumer_state)
        acc_consumer_state.advance()
    return acc_consumer_state


def epilogue_smem_copy_and_partition(gemm, tiled_copy_t2r, tTR_rC, tidx, sC, *, loc=None, ip=None):
    """The register -> shared-memory store of the TMA-store epilogue: (tiled copy r2s, tRS_rC, tRS_sC).
    The store atom is tiled as the destination side of the tensor-memory load, so each thread
    stores the elements that load gave it: tRS_rC is tTR_rC retiled for the store, tRS_sC the
    store's partition of the staged C buffer (EPI_M, EPI_N, STAGE). Callers retile other register
    fragments of the load's shape with the returned tiled copy."""
    atom = blackwell_helpers.get_smem_store_op(gemm.c_layout, gemm.c_dtype, gemm.acc_dtype, tiled_copy_t2r)
    tiled_copy_r2s = cute.make_tiled_copy_D(atom, tiled_copy_t2r)
    return tiled_copy_r2s, tiled_copy_r2s.retile(tTR_rC), tiled_copy_r2s.get_slice(tidx).partition_D(sC)


def epilogue_tma_store(gemm, tidx, warp_idx, tma_atom_c, tCtAcc_base, sC, tCgC, epi_tile, num_tiles_executed,
                       epilogue_op, mma_tile_coord_mnl, acc_consumer_state, acc_pipeline, c_pipeline, *, loc=None,
                       ip=None):
    """One tile's epilogue through shared memory and TMA stores: each subtile is loaded from tensor
    memory, converted, passed through epilogue_op and written to the next of the staged C buffers
    (sC: (EPI_M, EPI_N, STAGE)); after the epilogue warps met at gemm.epilog_sync_bar_id, the first
    epilogue warp stores it with `tma_atom_c` and throttles the buffers through `c_pipeline`
    (PipelineTmaStore). `num_tiles_executed` counts this CTA's tiles before this one (it picks the
    buffers). Returns the advanced accumulator consumer state."""
    tiled_copy_t2r, tTR_tAcc_base, tTR_rAcc = epilogue_tmem_copy_and_partition(gemm, tidx, tCtAcc_base, tCgC, epi_tile,
                                                                                gemm.use_2cta_instrs)
    tTR_rC = cute.make_rmem_tensor(tTR_rAcc.shape, gemm.c_dtype)
    tiled_copy_r2s, tRS_rC, tRS_sC = epilogue_smem_copy_and_partition(gemm, tiled_copy_t2r, tTR_rC, tidx, sC)
    # (EPI_M, EPI_N, n_epi_m, n_epi_n, RestM, RestN, L): C's subtiles, for the TMA store.
    gC_epi = cute.flat_divide(_tile_modes(tCgC, 6), epi_tile)
    bSG_sC, bSG_gC_all = cpasync.tma_partition(tma_atom_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                                               cute.group_modes(gC_epi, 0, 2))
    bSG_gC = bSG_gC_all[(None, None, None, *mma_tile_coord_mnl)]
    bSG_gC = cute.group_modes(bSG_gC, 1, cute.rank(bSG_gC))
    tTR_tAcc = tTR_tAcc_base[(None, None, None, None, None, acc_consumer_state.index)]
    tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))
    sync = NamedBarrier(barrier_id=gemm.epilog_sync_bar_id, num_threads=32 * len(gemm.epilogue_warp_id))
    num_stages = cute.size(sC, mode=[2])
    subtiles = cute.size(tTR_tAcc.shape, mode=[3])
    acc_pipeline.consumer_wait(acc_consumer_state)
    for subtile in range(subtiles):
        cute.copy(tiled_copy_t2r, tTR_tAcc[(None, None, None, subtile)], tTR_rAcc)
        cute.arch.fence_view_async_tmem_load()  # tcgen05.wait::ld
        tRS_rC.store(epilogue_op(tTR_rAcc.load().to(gemm.c_dtype)))
        buffer = (num_tiles_executed * subtiles + subtile) % num_stages
        cute.copy(tiled_copy_r2s, tRS_rC, tRS_sC[(None, None, None, buffer)])
        # The shared-memory writes are seen by the TMA (async proxy) once every epilogue warp made them.
        cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, space=cute.arch.SharedSpace.shared_cta)
        sync.arrive_and_wait()
        with cute.arch._if_region(warp_idx == gemm.epilogue_warp_id[0]):
            cute.copy(tma_atom_c, bSG_sC[(None, buffer)], bSG_gC[(None, subtile)])
            c_pipeline.producer_commit()
            c_pipeline.producer_acquire()
        sync.arrive_and_wait()
    with cute.arch.elect_one():
        acc_pipeline.consumer_release(acc_consumer_state)
    acc_consumer_state.advance()
    return acc_consumer_state
