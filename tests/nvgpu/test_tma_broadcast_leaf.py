"""A broadcast (stride-0) global leaf, one stored value per row and k-granule as block-scale and
mixed-input scale factors keep them: the TMA tensor gives it stride 0 (CuTe C++'s make_tma_copy: no
contribution to the TMA), so filter_zeros drops it, and a TMA copy takes either the whole tile or
its filter_zeros view (the box's distinct positions, as NVIDIA's block-scaled GEMMs pass their
scale-factor tiles). The tile here is two boxes of 256 rows times 8 granules, 16 instructions, so
each instruction's start must be found in the filtered views too. Reference: numpy slicing."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int64
from cutlass.cute.nvgpu import cpasync

EMU = "--target cpu --gpu-arch sm_100a"
GRAN, TKG, TM = 4, 8, 512  # granule of 4 k, 8 granules and 512 rows per tile
KG, M = 16, 512            # the stored values: 16 granules of 512 rows


def smem_layout():
    return cute.make_layout(((GRAN, TKG), TM), stride=((0, TM), 1))


@cute.kernel
def granule_load_kernel(load: cute.CopyAtom, tma: cute.Tensor, out: cute.Tensor, filtered: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
    s = cute.make_tensor(cute.arch.alloc_smem(Float32, TKG * TM, alignment=128), smem_layout())
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    g = cute.local_tile(tma, (GRAN * TKG, TM), (1, 0))  # granules 8..15
    if tidx == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, TKG * TM * 4)
        if cutlass.const_expr(filtered):
            cute.copy(load, cute.filter_zeros(g), cute.filter_zeros(s), tma_bar_ptr=bar)
        else:
            cute.copy(load, g, s, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    for i in cutlass.range(tidx, TKG * TM, 32):
        out[i // TM, i % TM] = s[(GRAN - 1, i // TM), i % TM]


@cute.jit
def granule_load(a: cute.Tensor, out: cute.Tensor, filtered: cutlass.Constexpr):
    # (k, m) : ((0, M), 1) over the (KG, M) row-major values: k's granule leaf is broadcast.
    src = cute.make_tensor(a.iterator, cute.make_layout(((GRAN, KG), M), stride=((0, M), 1)))
    load, tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem_layout(), (GRAN * TKG, TM))
    granule_load_kernel(load, tma, out, filtered).launch(grid=(1, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("filtered", [False, True], ids=["whole_tiles", "filter_zeros_views"])
def test_tma_copy_of_a_broadcast_leaf_tile(filtered):
    a = np.arange(KG * M, dtype=np.float32).reshape(KG, M)
    out = np.zeros((TKG, TM), np.float32)
    f = cute.compile(granule_load, a, out, filtered, options=EMU)
    f(a, out)
    np.testing.assert_array_equal(out, a[TKG:2 * TKG])


def test_tma_tensor_of_a_broadcast_leaf_strides():
    seen = []

    @cute.jit
    def atom(a: cute.Tensor):
        src = cute.make_tensor(a.iterator, cute.make_layout(((GRAN, KG), M), stride=((0, M), 1)))
        _, tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem_layout(), (GRAN * TKG, TM))
        seen.append(str(tma.layout))

    cute.compile(atom, np.zeros((KG, M), np.float32), options=EMU)
    # m is the contiguous tensor-map dimension (coordinate 0), the granules the next; the broadcast
    # leaf adds nothing.
    assert seen == ["((4,16),512):((0,1@1),1@0)"]
