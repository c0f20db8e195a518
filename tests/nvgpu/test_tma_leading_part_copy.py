"""A TMA atom made for a tile of several instructions, copied one instruction's part at a time, as
NVIDIA's sm_103 GEMMs load their operands: the atom is made for three 128-byte-swizzled K buffers
((rows, (128 bytes, 3)), one instruction each: TMA's box ends at the swizzle row where K's
extent is not known to be a multiple of the three), and each
cute.copy moves one buffer (the leading part of the atom's tile) into its own stage. The global
tensor holds Float8E8M0FNU scale-factor codes seen through internal_type=Uint8 (same width: the
bytes move unchanged), the shared tile is Uint8. On the CPU emulator against numpy: every byte
lands in its stage."""
import numpy as np

import cutlass
import cutlass.cute as cute
from cutlass import Int64, Uint8
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.cute.runtime import from_dlpack

ROWS, BUF, NBUF = 32, 128, 3


def _staged():
    atom = tcgen05.make_smem_layout_atom(tcgen05.SmemLayoutAtomKind.K_SW128, Uint8)
    return cute.tile_to_shape(atom, (ROWS, BUF, NBUF), (0, 1, 2))


@cute.kernel
def kernel(atom: cute.CopyAtom, mA: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    staged = _staged()

    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[Int64, NBUF]
        sA: cute.struct.Align[cute.struct.MemRange[Uint8, cute.cosize(staged)], 1024]

    storage = cutlass.utils.SmemAllocator().allocate(Storage)
    bars = storage.bars.data_ptr()
    sA = storage.sA.get_tensor(staged.outer, swizzle=staged.inner)
    if tidx == 0:
        for b in cutlass.range_constexpr(NBUF):
            cute.arch.mbarrier_init(bars + b, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.barrier()
    gA = cute.local_tile(mA, (ROWS, BUF), (0, None))  # (ROWS, BUF, buffers)
    tAsA, tAgA = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2),
                                       cute.group_modes(gA, 0, 2))
    if tidx == 0:
        for b in cutlass.range_constexpr(NBUF):
            cute.arch.mbarrier_arrive_and_expect_tx(bars + b, ROWS * BUF)
            cute.copy(atom, tAgA[(None, b)], tAsA[(None, b)], tma_bar_ptr=bars + b)
    for b in cutlass.range_constexpr(NBUF):
        cute.arch.mbarrier_wait(bars + b, 0)
        for i in cutlass.range(tidx, ROWS * BUF, 128):
            out[i // BUF, b * BUF + i % BUF] = sA[i // BUF, i % BUF, b]


@cute.jit
def host(a: cute.Tensor, out: cute.Tensor):
    staged = _staged()
    o = staged.outer  # (ROWS, BUF, NBUF): the three buffers as one (ROWS, (BUF, NBUF)) tile
    tile = cute.make_composed_layout(staged.inner, 0, cute.make_layout(
        (o.shape[0], (o.shape[1], o.shape[2])), stride=(o.stride[0], (o.stride[1], o.stride[2]))))
    atom, tma_a = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, tile, (ROWS, BUF * NBUF),
                                              internal_type=cutlass.Uint8)
    kernel(atom, tma_a, out).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_each_buffer_of_a_three_instruction_atom_lands_in_its_stage():
    codes = (np.arange(ROWS * BUF * NBUF) * 7 % 251).astype(np.uint8).reshape(ROWS, BUF * NBUF)
    # Dynamic extents, as the examples' tensors have: K is not known to be a multiple of 128 bytes,
    # so the buffers cannot share one box (copy_sm90.cpp's folded runs) and each is an instruction.
    a = from_dlpack(codes, assumed_align=16).mark_layout_dynamic(leading_dim=1)
    a.element_type = cutlass.Float8E8M0FNU
    out = np.zeros((ROWS, BUF * NBUF), np.uint8)
    cute.compile(host, a, out, options="--target cpu --gpu-arch sm_100a")(a, out)
    np.testing.assert_array_equal(out, codes)
