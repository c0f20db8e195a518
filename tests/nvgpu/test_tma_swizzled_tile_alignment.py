"""A 128-byte-swizzled TMA tile that starts 128 bytes into the swizzle's 1024-byte pattern (NVIDIA's
Blackwell tma_v1 tutorial aligns its tile to 128 bytes only): the PTX ISA asks only 128-byte
alignment of the shared address, and the hardware swizzles by address, so the copy takes the tile's
unswizzled start and a swizzled-pointer tensor over the same memory reads every element back where
it was loaded, and stores it back. Checked on the emulator against numpy, for the tile at offset
128 and at offset 1024 (aligned)."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass import Float16, Int64
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.nvgpu.common import OperandMajorMode

TILE = (64, 64)


def _round_trip(pad_bytes):
    smem_layout = sm100_utils.make_smem_layout(OperandMajorMode.K, TILE, Float16, 1)

    @cute.struct
    class Storage:
        bar: cute.struct.MemRange[Int64, 1]
        pad: cute.struct.MemRange[cutlass.Int8, pad_bytes]
        tile: cute.struct.Align[cute.struct.MemRange[Float16, cute.cosize(smem_layout)], 128]

    @cute.kernel
    def kernel(load: cute.CopyAtom, src: cute.Tensor, store: cute.CopyAtom, dst: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        storage = utils.SmemAllocator().allocate(Storage)
        bar = storage.bar.data_ptr()
        s = storage.tile.get_tensor(smem_layout.outer, swizzle=smem_layout.inner)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_expect_tx(bar, TILE[0] * TILE[1] * 2)
        cute.arch.mbarrier_init_fence()
        cute.arch.barrier()
        sA, gA = cpasync.tma_partition(load, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(cute.local_tile(src, TILE, (None, None)), 0, 2))
        sB, gB = cpasync.tma_partition(store, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(cute.local_tile(dst, TILE, (None, None)), 0, 2))
        if tidx < 32:
            cute.copy(load, gA[(None, 0, 0)], sA[(None, 0)], tma_bar_ptr=bar)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, TILE[0] * TILE[1], 128):
            out[i // TILE[1], i % TILE[1]] = s[i // TILE[1], i % TILE[1], 0]
        cute.arch.barrier()
        if tidx < 32:
            cute.copy(store, sB[(None, 0)], gB[(None, 0, 0)])

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor):
        load, src = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_layout, TILE)
        store, dst = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), b, smem_layout, TILE)
        kernel(load, src, store, dst, out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return host


@pytest.mark.parametrize("pad_bytes", [8, 1016])  # the tile at shared offset 128, then at 1024
def test_swizzled_tile_round_trip(pad_bytes):
    a = np.arange(TILE[0] * TILE[1], dtype=np.float16).reshape(TILE) % 2048
    b = np.zeros(TILE, np.float16)
    out = np.zeros(TILE, np.float16)
    host = _round_trip(pad_bytes)
    cute.compile(host, a, b, out, options="--target cpu --gpu-arch sm_100a")(a, b, out)
    np.testing.assert_array_equal(out, a)
    np.testing.assert_array_equal(b, a)
