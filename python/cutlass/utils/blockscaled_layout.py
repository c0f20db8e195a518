"""`cutlass.utils.blockscaled_layout`: the layouts of the block-scale factors of Blackwell's
block-scaled MMAs (tcgen05.MmaMXF8Op / MmaMXF4Op / MmaMXF4NVF4Op), as CuTe C++'s
cutlass/detail/sm100_blockscaled_layout.hpp and tmem_sf_frg (mma_traits_sm100_frag.hpp) lay them out.

The basic chunk holds the factors of 128 rows (of A; columns of B) for 4 consecutive K blocks in
512 bytes: row r = s + 32 c (s < 32, c < 4) at byte 16 s + 4 c, K block j at byte + j. One 16-byte
line thus holds the factors of rows s, s + 32, s + 64, s + 96, which tcgen05.cp .32x128b.warpx4 moves
to lane s of each 32-lane subpartition of tensor memory, four columns (one per row group c), the K
blocks in the bytes of a column: the tensor-memory layout the MMA reads (sm100_mma.h).
Written with DSL layout operations; the layout algebra itself is C++."""
from .. import _core, cute
from ..cute.nvgpu.common import OperandMajorMode
from .sm120_blockscaled import sm120_make_smem_layout_sfa, sm120_make_smem_layout_sfb  # noqa: F401

_ROWS, _BLOCKS = 128, 4  # a chunk: 128 rows (columns) x 4 factors
_CHUNK_BYTES = _ROWS * _BLOCKS


class BlockScaledBasicChunk:
    """The factors' atom of `sf_vec_size`: `.layout` maps ((32, 4), (sf_vec_size, 4)) (row, K
    element) to the factor's byte, K-major (or the modes swapped for OperandMajorMode.MN); the K
    elements of one block share their factor (stride 0)."""

    def __init__(self, sf_vec_size, major_mode=OperandMajorMode.K, *, loc=None, ip=None):
        rows, ks = ((32, 4), (16, 4)), ((sf_vec_size, 4), (0, 1))
        if major_mode == OperandMajorMode.K:
            self.layout = cute.make_layout((rows[0], ks[0]), stride=(rows[1], ks[1]))
        else:
            self.layout = cute.make_layout((ks[0], rows[0]), stride=(ks[1], rows[1]))


def tile_atom_to_shape_SF(shape, sf_vec_size, *, loc=None, ip=None):
    """The global-memory layout of the factors of a (MN, K[, L]) operand: the basic chunk tiled
    over it, K chunks first, then MN, then L (CuTe's tile_atom_to_shape_SFA/SFB)."""
    atom = BlockScaledBasicChunk(sf_vec_size).layout
    shape = tuple(shape)
    order = (1, 0) if len(shape) == 2 else (1, 0, 2)
    return cute.tile_to_shape(atom, shape, order)


def _check_vector(tiled_mma, fn, sf_vec_size, smem_layout=None):
    """The factors' vector size (and the layout's factors per MMA) against the MMA's (C++)."""
    vec = factors = 0
    if smem_layout is not None:
        k_mode = smem_layout.shape[0][1]
        if isinstance(k_mode, tuple) and len(k_mode) == 2 and all(isinstance(x, int) for x in k_mode):
            vec, factors = k_mode
    _core.cute.check_scale_factor_layout(tiled_mma, fn, sf_vec_size, vec, factors)


def _mma_nsf(tiled_mma, sf_vec_size):
    nsf = tiled_mma.shape_mnk[2] // sf_vec_size
    if nsf not in (1, 2, 4) or nsf * sf_vec_size != tiled_mma.shape_mnk[2]:
        raise ValueError(f"the MMA's K ({tiled_mma.shape_mnk[2]}) is not 1, 2 or 4 blocks of {sf_vec_size}")
    return nsf


def _smem_layout_sf(mn, nsf, sf_vec_size, tile_k, num_stages):
    # ((rows of the MMA tile, its K), 1, (K blocks within a chunk, chunks), stages): the rows in
    # 128-row chunks (s, c, chunk), the MMA's nsf blocks side by side, then the chunk's other
    # blocks, then the next chunks along K.
    chunks_mn = -(-mn // _ROWS)
    chunks_k = tile_k // sf_vec_size // _BLOCKS
    if chunks_k < 1:
        raise ValueError(f"the tile's K ({tile_k}) holds fewer than {_BLOCKS} blocks of {sf_vec_size}")
    per_stage = chunks_mn * _CHUNK_BYTES * chunks_k
    shape = (((32, 4, chunks_mn), (sf_vec_size, nsf)), 1, (_BLOCKS // nsf, chunks_k), num_stages)
    stride = (((16, 4, _CHUNK_BYTES), (0, 1)), 0, (nsf, chunks_mn * _CHUNK_BYTES), per_stage)
    return cute.make_layout(shape, stride=stride)


def make_smem_layout_sfa(tiled_mma, mma_tiler_mnk, sf_vec_size, num_stages, *, loc=None, ip=None):
    """SFA's staged shared-memory layout ((MMA_M rows, MMA_K), 1, K blocks, stages) for the CTA's
    rows of the MMA tile (CuTe's deduce_smem_layoutSFA, stages appended)."""
    _check_vector(tiled_mma, "make_smem_layout_sfa", sf_vec_size)
    nsf = _mma_nsf(tiled_mma, sf_vec_size)
    mn = mma_tiler_mnk[0] // cute.size(tiled_mma.thr_id.shape)
    return _smem_layout_sf(mn, nsf, sf_vec_size, mma_tiler_mnk[2], num_stages)


def make_smem_layout_sfb(tiled_mma, mma_tiler_mnk, sf_vec_size, num_stages, *, loc=None, ip=None):
    """SFB's staged shared-memory layout: all N columns of the MMA tile, rounded up to 128
    (tcgen05.cp moves whole 128-column chunks)."""
    _check_vector(tiled_mma, "make_smem_layout_sfb", sf_vec_size)
    nsf = _mma_nsf(tiled_mma, sf_vec_size)
    n = -(-mma_tiler_mnk[1] // _ROWS) * _ROWS
    return _smem_layout_sf(n, nsf, sf_vec_size, mma_tiler_mnk[2], num_stages)


def _tmem_layout_sf(smem_layout):
    # CuTe's tmem_sf_frg over the shape of `smem_layout` ((MN rows, (VecSize, NSF)), rest...), in
    # 8-bit elements of tensor memory (4 to a 32-bit column, a lane 1 << 16 columns on): row
    # s + 32 c at lane s, column c; the NSF factors of a K block in the bytes of the column; the
    # rest (further K blocks, chunks) laid out where that leaves room: the other bytes of the
    # column, then the next MN / 32 columns. Built as CuTe does, on offsets o = lane + 128 *
    # element, with the replication over the four 32-lane subpartitions as a mode (so that the
    # rest skips lanes 32-127); that mode is then dropped: tcgen05.cp .warpx4 broadcasts to those
    # lanes, not a mode of the tensor, so the tensor and the shared-memory one have the same shape.
    # Only the shape of `smem_layout` matters (the sm_103 kernels pass one-factor K blocks).
    mn_shape, (sf_vec_size, nsf) = smem_layout.shape[0]
    mn = cute.size(mn_shape)
    if mn % 32:
        raise ValueError(f"the scale factors' rows ({mn}) are not whole 32-lane groups")
    rows = cute.composition(cute.make_layout((32, mn // 32), stride=(1, 512)), cute.make_layout(mn_shape))
    atom = cute.make_layout(((rows.shape, 4), (sf_vec_size, nsf)), stride=((rows.stride, 32), (0, 128)))
    rest = cute.make_layout(tuple(smem_layout.shape[1:]))
    full = cute.composition(cute.make_layout((128, 16384), stride=((1 << 16) * 4, 1)),
                            cute.tiled_product(atom, rest))
    mode0 = ((full.shape[0][0][0], full.shape[0][1]), (full.stride[0][0][0], full.stride[0][1]))
    return cute.make_layout((mode0[0], *full.shape[1:]), stride=(mode0[1], *full.stride[1:]))


def make_tmem_layout_sfa(tiled_mma, mma_tiler_mnk, sf_vec_size, smem_layout, *, loc=None, ip=None):
    """SFA's tensor-memory layout ((MMA rows, MMA_K), 1, K blocks) for one stage of
    `smem_layout` (make_smem_layout_sfa's, a stage sliced off), in 8-bit elements of tensor memory."""
    _check_vector(tiled_mma, "make_tmem_layout_sfa", sf_vec_size, smem_layout)
    return _tmem_layout_sf(smem_layout)


def make_tmem_layout_sfb(tiled_mma, mma_tiler_mnk, sf_vec_size, smem_layout, *, loc=None, ip=None):
    """SFB's tensor-memory layout, as make_tmem_layout_sfa's for B's columns."""
    _check_vector(tiled_mma, "make_tmem_layout_sfb", sf_vec_size, smem_layout)
    return _tmem_layout_sf(smem_layout)


__all__ = ["BlockScaledBasicChunk", "tile_atom_to_shape_SF", "make_smem_layout_sfa", "make_smem_layout_sfb",
           "make_tmem_layout_sfa", "make_tmem_layout_sfb", "sm120_make_smem_layout_sfa", "sm120_make_smem_layout_sfb"]
