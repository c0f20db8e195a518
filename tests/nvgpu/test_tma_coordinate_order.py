"""The coordinates of a TMA tensor (make_tiled_tma_atom's second result) come in the tensor map's
dimension order, the contiguous global mode first, as CuTe's TMA tensors count them (a row-major
(M, K) tensor's TMA tensor is (M, K):(1@1, 1@0)). NVIDIA's grouped mixed-input GEMMs rely on it:
they offset a partitioned TMA tensor's iterator by hand, adding a group's first column to component
0 of an N-contiguous C. Here a kernel adds a column offset to component 0 of the iterator and loads
the tile there; reference: numpy slicing."""
import numpy as np

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int64
from cutlass.cute.nvgpu import cpasync

EMU = "--target cpu --gpu-arch sm_100a"
TM, TK = 8, 32


@cute.kernel
def shifted_load_kernel(load: cute.CopyAtom, tma: cute.Tensor, out: cute.Tensor, shift: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
    s = cute.make_tensor(cute.arch.alloc_smem(Float32, TM * TK, alignment=128), cute.make_layout((TM, TK),
                                                                                                   stride=(TK, 1)))
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    g = cute.local_tile(tma, (TM, TK), (0, 0))
    g = cute.make_tensor((g.iterator[0] + shift, g.iterator[1]), g.layout)  # columns shift..shift + TK
    if tidx == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, TM * TK * 4)
        cute.copy(load, g, s, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    for i in cutlass.range(tidx, TM * TK, 32):
        out[i // TK, i % TK] = s[i // TK, i % TK]


@cute.jit
def shifted_load(a: cute.Tensor, out: cute.Tensor, shift: cutlass.Int32):
    load, tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                            cute.make_layout((TM, TK), stride=(TK, 1)), (TM, TK))
    shifted_load_kernel(load, tma, out, shift).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_tma_tensor_component_0_is_the_contiguous_mode():
    a = np.arange(TM * 4 * TK, dtype=np.float32).reshape(TM, 4 * TK)
    out = np.zeros((TM, TK), np.float32)
    f = cute.compile(shifted_load, a, out, 64, options=EMU)
    f(a, out, 64)
    np.testing.assert_array_equal(out, a[:, 64:64 + TK])


def test_tma_tensor_layout_names_the_tensor_map_dimensions():
    seen = []

    @cute.jit
    def atom(a: cute.Tensor):
        _, tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                             cute.make_layout((TM, TK), stride=(TK, 1)), (TM, TK))
        seen.append(str(tma.layout))

    cute.compile(atom, np.zeros((TM, TK), np.float32), options=EMU)
    assert seen == ["(?,?):(1@1,1@0)"]  # numpy arrays come with dynamic extents
