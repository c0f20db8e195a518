"""make_tiled_tma_atom with a cta_v_map (composition(make_identity_layout(gmem.shape), tile)) whose
first tile mode spans the sub-modes of a hierarchical gmem mode, as FlashAttention-4 packs query
heads into the rows of a tile for GQA: gmem ((heads, seqlen), d), tile ((heads, rows), d). Each
tile row r is flattened coordinate r of the packed mode: head r % 2 of position r // 2. A TMA load
of the second tile on the CPU emulator, against numpy."""
import numpy as np

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int64
from cutlass.cute.nvgpu import cpasync

H, S, D, ROWS = 2, 64, 16, 64  # a tile of 64 packed rows: 32 positions of both heads


@cute.kernel
def _kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor, smem_layout: cutlass.Constexpr):
    tidx = cute.arch.thread_idx()[0]
    bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
    s = cute.make_tensor(cute.arch.alloc_smem(Float32, ROWS * D, alignment=128), smem_layout)
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    g = cute.local_tile(tma_tensor, (ROWS, D), (1, 0))
    if tidx == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, ROWS * D * 4)
    if tidx < 32:
        cute.copy(atom, g, s, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    for i in cutlass.range(tidx, ROWS * D, 32):
        out[i // D, i % D] = s[i // D, i % D]


@cute.jit
def _host(a: cute.Tensor, out: cute.Tensor):
    # a: (S, H, D) storage; packed view ((H, S), D)
    g = cute.make_tensor(a.iterator, cute.make_layout(((H, S), D), stride=((D, H * D), 1)))
    smem_layout = cute.make_layout((ROWS, D), stride=(D, 1))
    cta_v_map = cute.composition(cute.make_identity_layout(g.shape), (cute.make_layout((H, ROWS // H)), D))
    atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g, smem_layout, cta_v_map)
    _kernel(atom, tma_tensor, out, smem_layout).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_a_tile_of_packed_heads_loads_row_by_flattened_coordinate():
    storage = np.arange(S * H * D, dtype=np.float32).reshape(S, H, D)
    out = np.full((ROWS, D), -1, np.float32)
    cute.compile(_host, storage, out, options="--target cpu --gpu-arch sm_90a")(storage, out)
    rows = np.arange(ROWS) + ROWS  # the second tile's flattened (head, position) coordinates
    np.testing.assert_array_equal(out, storage[rows // H, rows % H])
