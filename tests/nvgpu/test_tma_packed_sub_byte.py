"""TMA copies of packed sub-byte elements (Int4, two to a byte in global and shared memory, as
NVIDIA's mixed-input GEMMs load A): the tensor map moves bytes, so the innermost dimension's
extent, box and coordinate count bytes. Also the TMA coordinate tensor of a global layout with a
broadcast (stride-0) leaf, which gets stride 0 there (filter_zeros drops it, as the mixed-input
GEMM's scale-factor loader expects). Run on the CPU emulator for sm_100a against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Int4, Int64, Uint8
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import from_dlpack

import toolchain

EMU = "--target cpu --gpu-arch sm_100a"
TM, TK = 64, 256  # tile: 64 rows of 256 Int4 (128 bytes)


@cute.kernel
def load_kernel(load: cute.CopyAtom, src: cute.Tensor, out: cute.Tensor, smem_layout: cute.Layout):
    bidx, bidy, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(Int64, 1)
    s = smem.allocate_tensor(Int4, smem_layout, 128)
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if tidx == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, TM * TK // 2)
    if tidx < 32:
        cute.copy(load, cute.local_tile(src, (TM, TK), (bidx, bidy)), s, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    # The tile's bytes, row by row, to the byte view of the output.
    sb = cute.recast_tensor(s, Uint8)
    ob = cute.local_tile(out, (TM, TK // 2), (bidx, bidy))
    for i in cutlass.range(tidx, TM * TK // 2, 128):
        ob[i // (TK // 2), i % (TK // 2)] = sb[i // (TK // 2), i % (TK // 2)]


@cute.jit
def packed_load(a: cute.Tensor, out: cute.Tensor):
    smem_layout = cute.make_layout((TM, TK), stride=(TK, 1))
    load, tma_src = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_layout, (TM, TK))
    load_kernel(load, tma_src, out, smem_layout).launch(
        grid=(cute.size(a, mode=[0]) // TM, cute.size(a, mode=[1]) // TK, 1), block=(128, 1, 1))


def test_tma_load_of_packed_int4_tiles_moves_their_bytes():
    rows, cols = 2 * TM, 3 * TK
    storage = np.random.default_rng(4).integers(0, 256, size=(rows, cols // 2)).astype(np.uint8)
    a = from_dlpack(storage, assumed_align=16)
    a.element_type = Int4  # (rows, cols) Int4, two to a byte
    out = np.zeros_like(storage)
    f = cute.compile(packed_load, a, out, options=EMU)
    f(a, out)
    np.testing.assert_array_equal(out, storage)


def test_tma_load_of_packed_int4_links_for_sm100a(monkeypatch):
    toolchain.require_cubin()
    storage = np.zeros((TM, TK // 2), np.uint8)
    a = from_dlpack(storage, assumed_align=16)
    a.element_type = Int4
    f = cute.compile(packed_load, a, np.zeros_like(storage), options="--gpu-arch sm_100a")
    assert "cp.async.bulk.tensor.2d" in toolchain.ptx_of(f)
    assert bytes(f.__cubin__[:4]) == b"\x7fELF"


def test_tma_tensor_of_a_broadcast_leaf_has_stride_0_there():
    seen = []

    @cute.jit
    def atom_of_broadcast(a: cute.Tensor):
        # (M, (granule, K / granule)) : (1, (0, M)): one stored value per row and granule of 4.
        m = cute.size(a, mode=[0])
        src = cute.make_tensor(a.iterator, cute.make_layout((m, (4, 8)), stride=(1, (0, m))))
        _, tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src,
                                             cute.make_layout((64, (4, 8)), stride=(1, (0, 64))), (64, 32))
        seen.append(cute.size(cute.filter_zeros(tma.layout)))

    a = np.zeros((8, 64), np.float32).T  # (64, 8), M contiguous
    cute.compile(atom_of_broadcast, from_dlpack(a, assumed_align=16), options=EMU)
    assert seen == [64 * 8]  # the granule leaf (4 coordinates, stride 0) does not count
