"""The GeForce Blackwell (sm_120) block-scaled GEMM helpers, as CuTe C++'s sm120 collective builder
(sm120_blockscaled_mma_builder.inl) and mainloop (sm120_blockscaled_mma_tma.hpp) set them up for the
warp-level block-scaled MMAs (cute.nvgpu.warp.MmaMXF4NVF4Op ...): the tiled MMA's permutation, the
scale factors' staged shared-memory layouts, their thread-value layouts and register fragments.
NVIDIA's examples reach them as cutlass.utils.blackwell_helpers (sm120_utils) and
cutlass.utils.blockscaled_layout. Written with DSL operations; the partitioning is C++
(cpp/src/cute/atom/mma_sm120)."""
from .. import _core, cute
from ..cute.tensor import CopyUniversalOp
from ..cute.nvgpu import warp

_C = _core.cute
_BLK_MN, _BLK_SF = 128, 4  # a basic chunk: the factors of 128 rows for 4 K blocks (512 bytes)


def get_permutation_mnk(tile_shape_mnk, sf_vec_size, use_mxf8f6f4, *, loc=None, ip=None):
    """The tiled MMA's (M, N, K) permutation: M min(tile M, 128); N the 8-column groups of a 32-column
    block interleaved ((8,2,2):(1,16,8)) for N >= 32, (8,2):(1,8) for 16, 8 for 8; K 32 for the
    (16,8,32) atoms (mxf8f6f4), else 64."""
    if sf_vec_size not in (16, 32):
        raise ValueError(f"get_permutation_mnk: sf_vec_size must be 16 or 32, got {sf_vec_size}")
    m, n = tile_shape_mnk[0], tile_shape_mnk[1]
    if n >= 32:
        perm_n = cute.make_layout((8, 2, 2), stride=(1, 16, 8))
    elif n == 16:
        perm_n = cute.make_layout((8, 2), stride=(1, 8))
    elif n == 8:
        perm_n = cute.make_layout(8, stride=1)
    else:
        raise ValueError(f"get_permutation_mnk: the tile's N must be at least 8, got {n}")
    return (min(m, 128), perm_n, 32 if use_mxf8f6f4 else 64)


def _mma_nsf(tiled_mma, sf_vec_size):
    nsf = tiled_mma.shape_mnk[2] // sf_vec_size
    if nsf < 1 or nsf * sf_vec_size != tiled_mma.shape_mnk[2]:
        raise ValueError(f"the MMA's K ({tiled_mma.shape_mnk[2]}) is not a multiple of sf_vec_size {sf_vec_size}")
    return nsf


def _smem_layout_sf(mn, tiled_mma, tile_k, sf_vec_size, num_stages):
    # (((32, 4), MN chunks), ((sf_vec_size, MMA's factors), chunk's other blocks, K chunks), stages):
    # row s + 32 c of a chunk at byte 16 s + 4 c, its K blocks in the following bytes.
    nsf = _mma_nsf(tiled_mma, sf_vec_size)
    chunks_mn = mn // _BLK_MN
    chunks_k = tile_k // sf_vec_size // _BLK_SF
    if chunks_mn < 1 or chunks_k < 1:
        raise ValueError(f"the tile ({mn} rows, K {tile_k}) holds less than a {_BLK_MN}-row chunk of {_BLK_SF} "
                         f"blocks of {sf_vec_size}")
    chunk = _BLK_MN * _BLK_SF
    shape = (((32, 4), chunks_mn), ((sf_vec_size, nsf), _BLK_SF // nsf, chunks_k), num_stages)
    stride = (((16, 4), chunk), ((0, 1), nsf, chunks_mn * chunk), chunks_mn * chunk * chunks_k)
    return cute.make_layout(shape, stride=stride)


def sm120_make_smem_layout_sfa(tiled_mma, tile_shape_mnk, sf_vec_size, num_stages, *, loc=None, ip=None):
    """SFA's staged shared-memory layout (M, K, stages) for the CTA tile."""
    return _smem_layout_sf(tile_shape_mnk[0], tiled_mma, tile_shape_mnk[2], sf_vec_size, num_stages)


def sm120_make_smem_layout_sfb(tiled_mma, tile_shape_mnk, sf_vec_size, num_stages, *, loc=None, ip=None):
    """SFB's staged shared-memory layout (N, K, stages): N rounded up to a 128-column chunk."""
    return _smem_layout_sf(max(tile_shape_mnk[1], _BLK_MN), tiled_mma, tile_shape_mnk[2], sf_vec_size, num_stages)


def get_layoutSFA_TV(tiled_mma, *, loc=None, ip=None):
    """(thread index, value) -> (M, K) of the tiled MMA's tile: where each thread's scale factors of A sit."""
    return _C.sf_layout_tv(tiled_mma, "A")


def get_layoutSFB_TV(tiled_mma, *, loc=None, ip=None):
    """(thread index, value) -> (N, K): where each thread's scale factors of B sit."""
    return _C.sf_layout_tv(tiled_mma, "B")


def partition_fragment_SFA(sfa_tensor, thr_mma, tidx=None, *, loc=None, ip=None):
    """The register fragment (MMA, MMA_M, MMA_K...) of thread `thr_mma`'s scale factors of A in
    `sfa_tensor` (M, K)."""
    return _C.partition_fragment_sf(thr_mma, "A", sfa_tensor)


def partition_fragment_SFB(sfb_tensor, thr_mma, tidx=None, *, loc=None, ip=None):
    """The register fragment (MMA, MMA_N, MMA_K...) of the thread's scale factors of B."""
    return _C.partition_fragment_sf(thr_mma, "B", sfb_tensor)


def sm120_get_smem_store_op(layout_d, elem_ty_d, elem_ty_acc, *, loc=None, ip=None):
    """The epilogue's register -> shared-memory copy atom, as CuTe C++'s sm120 epilogue builder picks
    it: stmatrix x2 (transposed for M-major D) for 16-bit D, else a universal copy."""
    if elem_ty_d.width == 16:
        return cute.make_copy_atom(warp.StMatrix8x8x16bOp(layout_d.is_m_major_c(), 2), elem_ty_d)
    return cute.make_copy_atom(CopyUniversalOp(), elem_ty_d)


__all__ = ["get_permutation_mnk", "sm120_make_smem_layout_sfa", "sm120_make_smem_layout_sfb", "get_layoutSFA_TV",
           "get_layoutSFB_TV", "partition_fragment_SFA", "partition_fragment_SFB", "sm120_get_smem_store_op"]
