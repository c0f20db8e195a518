"""TMA atoms for the operands of a Blackwell tiled MMA (`cute.nvgpu.make_tiled_tma_atom_A/B`), as
CuTe's make_tma_atom_A_sm100 / _B_sm100 derive them.

A tcgen05 MMA reads its operands from shared memory laid out in MMA order,
((atom M, atom K), rest M, rest K[, stages]) for A. Each CTA loads its own part of the MMA tile
(with a 2-CTA MMA, half of it: rows [v * M/2, (v + 1) * M/2) of A, and likewise of B's N) as one
TMA box: the (M, K) tile whose M mode is (atom M, rest M) and K mode (atom K, rest K) of that
layout, so the box lands in the layout the MMA reads. cute.copy then takes the MMA-ordered views
that thr_mma.partition_A and tma_partition give (same shared memory, same first coordinate).
A cta_group::2 op (cluster_shape_to_tma_atom_A/B with a 2-CTA MMA) completes the bytes on the
pair leader's mbarrier; multicast ops load across the cluster's N (A) or M (B) CTAs."""
from ..._dsl.errors import user_error
from ..layout import ComposedLayout, Layout, get, make_composed_layout, make_layout, rank, size
from .cpasync import CopyBulkTensorTileG2SMulticastOp, _TmaOp, make_tiled_tma_atom


def _static(value, what):
    if not isinstance(value, int):
        raise user_error(f"{what} must be static, got {value!r}", code="TMA_LAYOUT")
    return value


def _mk_tile_layout(outer, what):
    """((atom X, atom K), rest X, rest K[, stages]) -> ((atom X, rest X), (atom K, rest K)) of one stage."""
    if rank(outer) < 3 or rank(get(outer, mode=[0])) != 2:
        raise user_error(f"{what}: the smem layout must be MMA-ordered, ((atom, atom K), rest, rest K[, stages]); "
                         f"got {outer}", code="TMA_LAYOUT")
    atom = get(outer, mode=[0])
    x_atom, k_atom = get(atom, mode=[0]), get(atom, mode=[1])
    x_rest, k_rest = get(outer, mode=[1]), get(outer, mode=[2])
    return make_layout(((x_atom.shape, x_rest.shape), (k_atom.shape, k_rest.shape)),
                       stride=((x_atom.stride, x_rest.stride), (k_atom.stride, k_rest.stride)))


def _make_operand_atom(which, op, gmem_tensor, smem_layout, mma_tiler_mnk, tiled_mma, cluster_shape_vmnk,
                       internal_type):
    what = f"make_tiled_tma_atom_{which}"
    if not isinstance(op, _TmaOp):
        raise user_error(f"{what}: expected a TMA load op (CopyBulkTensorTileG2S[Multicast]Op), got {op!r}",
                         code="INVALID_VALUE")
    v = _static(size(tiled_mma.thr_id), f"{what}: the tiled MMA's CTA count")
    tiler = tuple(mma_tiler_mnk)
    extent = _static(tiler[0] if which == "A" else tiler[1], f"{what}: the MMA tiler")
    k = _static(tiler[2], f"{what}: the MMA tiler's K")
    if extent % v:
        raise user_error(f"{what}: the MMA tile's {'M' if which == 'A' else 'N'} ({extent}) does not split between "
                         f"the MMA's {v} CTAs", code="TMA_LAYOUT")
    cta_tile = (extent // v, k)
    if isinstance(smem_layout, ComposedLayout):
        tile_layout = make_composed_layout(smem_layout.inner, smem_layout.offset,
                                           _mk_tile_layout(smem_layout.outer, what))
    elif isinstance(smem_layout, Layout):
        tile_layout = _mk_tile_layout(smem_layout, what)
    else:
        raise user_error(f"{what}: smem_layout must be a Layout or a swizzled ComposedLayout, got "
                         f"{type(smem_layout).__name__}", code="TMA_LAYOUT")
    num_multicast = 1
    if isinstance(op, CopyBulkTensorTileG2SMulticastOp):
        # A is shared by the CTAs of the cluster's N mode, B by those of its M mode (VMNK).
        if cluster_shape_vmnk is None:
            raise user_error(f"{what}: a multicast TMA op needs cluster_shape_vmnk", code="TMA_LAYOUT")
        num_multicast = _static(tuple(cluster_shape_vmnk)[2 if which == "A" else 1],
                                f"{what}: the cluster shape")
    info = make_tiled_tma_atom(op, gmem_tensor, tile_layout, cta_tile, num_multicast, internal_type=internal_type)
    # tma_partition offsets this CTA's multicast slice in the MMA-ordered views: the extents of the
    # MMA atom's (X, K) modes turn a tile coordinate into an MMA-ordered one.
    outer = smem_layout.outer if isinstance(smem_layout, ComposedLayout) else smem_layout
    atom = get(outer, mode=[0])
    info.atom.mma_atom_extents = (size(get(atom, mode=[0])), size(get(atom, mode=[1])))
    # The caller's layout, stages included: kernels allocate their staged buffers from it.
    info.smem_layout = smem_layout
    return info


def make_tiled_tma_atom_A(op, gmem_tensor, smem_layout, mma_tiler_mnk, tiled_mma, cluster_shape_vmnk=None, *,
                          internal_type=None, loc=None, ip=None):
    """The TMA atom loading this CTA's part of operand A of `tiled_mma`'s (M, N, K) tile
    `mma_tiler_mnk` into `smem_layout` (make_smem_layout_a's), and the TMA tensor (M, K, L)."""
    return _make_operand_atom("A", op, gmem_tensor, smem_layout, mma_tiler_mnk, tiled_mma, cluster_shape_vmnk,
                              internal_type)


def make_tiled_tma_atom_B(op, gmem_tensor, smem_layout, mma_tiler_mnk, tiled_mma, cluster_shape_vmnk=None, *,
                          internal_type=None, loc=None, ip=None):
    """The TMA atom loading this CTA's part of operand B (N, K) of `tiled_mma`'s tile, and the TMA tensor."""
    return _make_operand_atom("B", op, gmem_tensor, smem_layout, mma_tiler_mnk, tiled_mma, cluster_shape_vmnk,
                              internal_type)
