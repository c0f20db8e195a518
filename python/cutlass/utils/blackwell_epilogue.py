"""The Blackwell (sm_100) GEMM helpers of `cutlass.utils.blackwell_helpers` (also `cutlass.utils.sm100`)
around the tensor cores: which TMA op loads an operand for a cluster shape, the epilogue tile, its
shared-memory layout and its register -> shared-memory copy. Library code over DSL operations; the
rules follow CUTLASS's sm100 collective builders (sm100_common.inl, sm100_builder.inl)."""
from .. import cute
from ..cute.nvgpu import cpasync, warpgroup
from ..cute.nvgpu.tcgen05 import CtaGroup
from ..cute.tensor import CopyUniversalOp
from . import hopper_helpers
from .layout import LayoutEnum


def _mma_cta_count(atom_thr_id):
    n = cute.size(atom_thr_id)
    if n not in (1, 2):
        raise ValueError(f"the MMA's CTA count must be 1 or 2, got {n}")
    return n


def cluster_shape_to_tma_atom_A(cluster_shape_mnk, atom_thr_id, *, loc=None, ip=None):
    """The TMA load op of operand A: A is shared by the CTAs of the cluster's N mode, so it is
    multicast when that mode has more than one CTA; with a 2-CTA MMA (atom_thr_id of size 2) a
    cta_group::2 load, whose bytes complete the pair leader's barrier."""
    v = _mma_cta_count(atom_thr_id)
    m, n = cluster_shape_mnk[0], cluster_shape_mnk[1]
    if m % v:
        raise ValueError(f"cluster_shape_to_tma_atom_A: the cluster's M ({m}) is not a multiple of the MMA's {v} CTAs")
    group = CtaGroup.TWO if v == 2 else CtaGroup.ONE
    if n == 1:
        return cpasync.CopyBulkTensorTileG2SOp(group)
    return cpasync.CopyBulkTensorTileG2SMulticastOp(group)


def cluster_shape_to_tma_atom_B(cluster_shape_mnk, atom_thr_id, *, loc=None, ip=None):
    """The TMA load op of operand B: B is shared by the MMAs of the cluster's M mode (M / CTAs per
    MMA of them): multicast when there is more than one."""
    v = _mma_cta_count(atom_thr_id)
    m = cluster_shape_mnk[0]
    if m % v:
        raise ValueError(f"cluster_shape_to_tma_atom_B: the cluster's M ({m}) is not a multiple of the MMA's {v} CTAs")
    group = CtaGroup.TWO if v == 2 else CtaGroup.ONE
    if m // v == 1:
        return cpasync.CopyBulkTensorTileG2SOp(group)
    return cpasync.CopyBulkTensorTileG2SMulticastOp(group)


def cluster_shape_to_tma_atom_SFB(cluster_shape_mnk, atom_thr_id, *, loc=None, ip=None):
    """The TMA load op of B's scale factors, as CUTLASS's sm100_cluster_shape_to_tma_atom_SFB picks
    it: with a 2-CTA MMA always a cta_group::2 multicast (each CTA of the pair needs all of the
    tile's factors of B, so the pair shares the load); else like B's, multicast over the cluster's
    M mode when it has more than one CTA."""
    if _mma_cta_count(atom_thr_id) == 2:
        return cpasync.CopyBulkTensorTileG2SMulticastOp(CtaGroup.TWO)
    return cluster_shape_to_tma_atom_B(cluster_shape_mnk, atom_thr_id)


def _tmem_warps(cta_tile_m, use_2cta_instrs):
    """How the epilogue's 4 warps split the accumulator in tensor memory (M, N): a 2-CTA MMA of 128
    rows leaves 64 rows per CTA, read by 2 x 2 warps; otherwise 4 x 1."""
    return (2, 2) if use_2cta_instrs and cta_tile_m == 64 else (4, 1)


def compute_epilogue_tile_shape(cta_tile_shape, use_2cta_instrs, layout_d, elem_ty_d, layout_c=None,
                                elem_ty_c=None, *, loc=None, ip=None):
    """The epilogue's subtile of the CTA tile (epi_M, epi_N), as CUTLASS's sm100 builder picks it:
    M = min(CTA M, 32 rows x the warps along M); N a fixed amount of work per iteration
    (4096 / M elements, 8192 / M for 4-bit D, less with a source C), at least one 128-byte TMA row
    of an N-major D or C (8 elements of an M-major one), and the whole CTA N when it does not divide
    it. Returned as a tiler of two layouts; with warps split along N the N layout interleaves them."""
    cta_m, cta_n = cute.size(cta_tile_shape, mode=[0]), cute.size(cta_tile_shape, mode=[1])
    warp_m, warp_n = _tmem_warps(cta_m, use_2cta_instrs)
    has_source = elem_ty_c is not None
    bits_c = elem_ty_c.width if has_source else elem_ty_d.width
    max_bits = max(bits_c, elem_ty_d.width)
    m = min(cta_m, 32 * warp_m)
    if not has_source:
        n_perf = (8192 if max_bits == 4 else 4096) // m
    elif max_bits == 32:
        n_perf = 16 if cta_m > 64 and cta_n <= 128 else 32
    elif max_bits == 16:
        n_perf = 32 if cta_n <= 128 else 64
    else:
        n_perf = 64

    def n_min(layout, bits, unused):
        if unused or layout.is_m_major_c():
            return 8 * warp_n
        return 128 // bits * warp_n

    n_tmp = min(cta_n, max(n_perf, n_min(layout_c, bits_c, not has_source), n_min(layout_d, elem_ty_d.width, False)))
    n = n_tmp if cta_n % n_tmp == 0 else cta_n
    tile_n = cute.coalesce(cute.make_layout((n // warp_n, warp_n), stride=(1, cta_n // warp_n)))
    return (cute.make_layout(m), tile_n)


def make_smem_layout(leading_mode, smem_tile_shape, element_type, num_stages=1, *, loc=None, ip=None):
    """A staged (MN, K, stages) shared-memory layout for a tile that TMA fills and tcgen05 or threads
    read: the widest swizzle atom (128, 64, 32 bytes, else none) whose contiguous run divides the
    tile's extent in its leading mode (`leading_mode` an OperandMajorMode: K or MN), tiled over the tile
    and the stages."""
    mn, k = (cute.size(e) if not isinstance(e, int) else e for e in smem_tile_shape)
    is_k = getattr(leading_mode, "value", leading_mode) in ("k", "K")
    layout_enum = LayoutEnum.ROW_MAJOR if is_k else LayoutEnum.COL_MAJOR  # row-major (MN, K) is K-major
    major_size = k if is_k else mn
    atom = warpgroup.make_smem_layout_atom(hopper_helpers.get_smem_layout_atom(layout_enum, element_type, major_size),
                                           element_type)
    return cute.tile_to_shape(atom, (mn, k, num_stages), order=(0, 1, 2) if is_k else (1, 0, 2))


def _tma_run(tile_mode):
    """The contiguous run a TMA box can take of an epilogue tile mode (an extent, or a layout from
    positions to coordinates: (32,2):(1,64) takes 32 columns, then 32 more 64 further on)."""
    if isinstance(tile_mode, int):
        return tile_mode
    return cute.size(cute.coalesce(cute.right_inverse(tile_mode)), mode=[0])


def make_smem_layout_epi(epi_dtype, epi_layout, epi_tile, epi_stage, *, loc=None, ip=None):
    """The staged (epi_M, epi_N, stages) shared-memory layout of the epilogue subtile: the widest
    swizzle atom whose contiguous run (N for an N-major D, else M) divides the run a TMA box takes
    of that mode, tiled over the subtile and the stages, the major mode's atoms after the other's
    (as CUTLASS's sm100 builder: with the warps' columns interleaved, (32,2):(1,64), each 32-column
    half is a whole box of its own, 128-byte aligned)."""
    if not isinstance(epi_layout, LayoutEnum):
        raise TypeError(f"make_smem_layout_epi: epi_layout must be a utils.LayoutEnum, got {epi_layout!r}")
    # The subtile's extent in each mode (a tiler of layouts, as compute_epilogue_tile_shape gives, or of ints).
    extents = tuple(cute.size(t) for t in epi_tile)
    runs = tuple(_tma_run(t) for t in epi_tile)
    major_run = runs[0] if epi_layout.is_m_major_c() else runs[1]
    atom = warpgroup.make_smem_layout_atom(hopper_helpers.get_smem_layout_atom(epi_layout, epi_dtype, major_run),
                                           epi_dtype)
    order = (1, 0, 2) if epi_layout.is_m_major_c() else (0, 1, 2)
    return cute.tile_to_shape(atom, (*extents, epi_stage), order=order)


def get_smem_store_op(layout_d, elem_ty_d, elem_ty_acc, tiled_tmem_load=None, *, loc=None, ip=None):
    """The register -> shared-memory copy atom of the epilogue (the registers a tensor-memory load
    gave): a plain store of D's elements, which any tensor-memory load's register layout can use."""
    return cute.make_copy_atom(CopyUniversalOp(), elem_ty_d)


__all__ = ["cluster_shape_to_tma_atom_A", "cluster_shape_to_tma_atom_B", "cluster_shape_to_tma_atom_SFB",
           "compute_epilogue_tile_shape", "make_smem_layout", "make_smem_layout_epi", "get_smem_store_op"]
