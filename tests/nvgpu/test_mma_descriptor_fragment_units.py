"""The shared-memory descriptor fragments of tensor-core MMAs (make_fragment_A/B of a tcgen05 or
warpgroup TiledMma over an smem tensor) count in 16-byte units, as CuTe's do: CuTe builds them as
replace<0>(recast<uint128_t>(smem_tensor).layout(), Layout<_1,_0>) over a DescriptorIterator whose
`+ n` moves the descriptor's start address by n 16-byte units (mma_traits_sm100.hpp,
mma_traits_sm90_gmma.hpp). FlashAttention-4 adds crd2idx on such a fragment's layout to the start
address of its hand-built descriptors, so it must be in those units.

The expected offsets are computed by hand from the canonical layouts (bf16, 2 bytes an element):
K-major 128-byte swizzle atoms are 8 rows of 64 elements, so one 16-wide K block is 32 bytes (2
units) and a 128 x 64 stage 16 KiB (1024 units); an MN-major 128-byte atom is 64 (MN) x 8 (K)
elements, 1 KiB, and the staged layouts place MN-major atoms along K first (CUTLASS's collective
builders tile them in the order Step<_2,_1,_3>), so one 16-wide K block is 2 atoms, 2 KiB (128
units)."""
import numpy as np

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, tcgen05, warpgroup

K_MAJOR, MN_MAJOR = OperandMajorMode.K, OperandMajorMode.MN
SEEN = {}


def _offsets(frag):
    """crd2idx of (0, 0, k, stage) for each K block of stage 0, then of stage 1 at K block 0."""
    ks = [cute.crd2idx((0, 0, k, 0), frag.layout) for k in range(cute.size(frag.shape[2]))]
    return ks, cute.crd2idx((0, 0, 0, 1), frag.layout)


@cute.kernel
def _tcgen05_kernel(out: cute.Tensor, tiled_mma: cute.TiledMma):
    sA_l = sm100_utils.make_smem_layout_a(tiled_mma, (128, 128, 64), cutlass.BFloat16, 2)
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, (128, 128, 64), cutlass.BFloat16, 2)
    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(cutlass.BFloat16, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(cutlass.BFloat16, sB_l.outer, 1024, sB_l.inner)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)
    SEEN["tcgen05 A"], SEEN["tcgen05 B"] = _offsets(tCrA), _offsets(tCrB)
    # Slicing the fragment moves the descriptor's start address by 16 bytes per unit.
    base = sA.iterator.toint()
    out[0] = cutlass.Int32(tCrA[None, None, 3, 0].iterator.toint() - base)
    out[1] = cutlass.Int32(tCrA[None, None, 0, 1].iterator.toint() - base)
    out[2] = cutlass.Int32(tCrB[None, None, 1, 0].iterator.toint() - sB.iterator.toint())


@cute.jit
def _tcgen05(out: cute.Tensor):
    tiled_mma = sm100_utils.make_trivial_tiled_mma(cutlass.BFloat16, K_MAJOR, MN_MAJOR, cutlass.Float32,
                                                   tcgen05.CtaGroup.ONE, (128, 128))
    _tcgen05_kernel(out, tiled_mma).launch(grid=(1, 1, 1), block=(32, 1, 1), smem=70000)


def test_tcgen05_fragments_count_in_16_byte_units():
    SEEN.clear()
    out = np.full(3, -1, np.int32)
    cute.compile(_tcgen05, out, options="--target cpu --gpu-arch sm_100a")(out)
    assert SEEN["tcgen05 A"] == ([0, 2, 4, 6], 1024)
    assert SEEN["tcgen05 B"] == ([0, 128, 256, 384], 1024)
    assert out.tolist() == [3 * 32, 16384, 2048]


@cute.kernel
def _warpgroup_kernel(out: cute.Tensor, tiled_mma: cute.TiledMma):
    sA_l = sm90_utils.make_smem_layout_a(cutlass.utils.LayoutEnum.ROW_MAJOR, (64, 128, 64), cutlass.BFloat16, 2)
    sB_l = sm90_utils.make_smem_layout_b(cutlass.utils.LayoutEnum.COL_MAJOR, (64, 128, 64), cutlass.BFloat16, 2)
    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(cutlass.BFloat16, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(cutlass.BFloat16, sB_l.outer, 1024, sB_l.inner)
    thr_mma = tiled_mma.get_slice(cute.arch.thread_idx()[0])
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
    SEEN["warpgroup A"], SEEN["warpgroup B"] = _offsets(tCrA), _offsets(tCrB)
    out[0] = cutlass.Int32(tCrA[None, None, 2, 1].iterator.toint() - sA.iterator.toint())
    out[1] = cutlass.Int32(tCrB[None, None, 1, 0].iterator.toint() - sB.iterator.toint())


@cute.jit
def _warpgroup(out: cute.Tensor):
    tiled_mma = sm90_utils.make_trivial_tiled_mma(cutlass.BFloat16, cutlass.BFloat16, K_MAJOR, MN_MAJOR,
                                                  cutlass.Float32, (1, 1, 1), (64, 128))
    _warpgroup_kernel(out, tiled_mma).launch(grid=(1, 1, 1), block=(128, 1, 1), smem=70000)


def test_warpgroup_fragments_count_in_16_byte_units():
    # A row-major (M, K) A is K-major: a 64 x 64 stage is 8 KiB (512 units); a column-major (N, K)
    # B is N-major, as the tcgen05 test's B.
    SEEN.clear()
    out = np.full(2, -1, np.int32)
    cute.compile(_warpgroup, out, options="--target cpu --gpu-arch sm_90a")(out)
    assert SEEN["warpgroup A"] == ([0, 2, 4, 6], 512)
    assert SEEN["warpgroup B"] == ([0, 128, 256, 384], 1024)
    assert out.tolist() == [2 * 32 + 8192, 2048]
