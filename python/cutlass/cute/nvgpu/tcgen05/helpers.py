"""tcgen05 ops that are not atoms: the commit that signals an mbarrier once the MMAs issued
before it completed, and the tcgen05 fences around thread synchronisation."""
from .... import _core
from ...._dsl.numeric import as_numeric, num_of
from ...arch._tmem import _value, user_line
from ... import layout as _layout
from .mma import CtaGroup, SmemLayoutAtomKind

cute_size = _layout.size


def commit(mbar_ptr, mask=None, cta_group=CtaGroup.ONE, *, loc=None, ip=None):
    """tcgen05.commit: the mbarrier at `mbar_ptr` gets one arrival once every tcgen05.mma (and
    tcgen05.cp) issued before it by this thread has completed; with `mask` (an Int16 of CTA
    ranks), the mbarrier at the same shared-memory offset in each CTA of the mask (multicast).
    One elected lane of the warp that executes it issues it."""
    if not isinstance(cta_group, CtaGroup):
        raise TypeError(f"commit: cta_group must be a tcgen05.CtaGroup, got {cta_group!r}")
    m = None if mask is None else num_of(as_numeric(mask))
    _core.sm100.commit(_value(mbar_ptr), m, cta_group.value, *user_line())


def fence_before_thread_sync(*, loc=None, ip=None):
    """tcgen05.fence::before_thread_sync: the thread's earlier tcgen05 ops are ordered before a
    following barrier or mbarrier synchronisation."""
    _core.sm100.fence(after=False)


def fence_after_thread_sync(*, loc=None, ip=None):
    """tcgen05.fence::after_thread_sync: the thread's later tcgen05 ops are ordered after the
    barrier or mbarrier synchronisation before it."""
    _core.sm100.fence(after=True)


def make_smem_layout_atom(kind, element_type, *, loc=None, ip=None):
    """The canonical swizzle atom `S<B,4,3> o 0 o (C,8):(1,C)` (MN kinds) or `(8,C):(C,1)` (K kinds),
    C being 128 << B bits of `element_type` (the same atoms as wgmma's)."""
    if not isinstance(kind, SmemLayoutAtomKind):
        raise TypeError(f"make_smem_layout_atom: expected a tcgen05.SmemLayoutAtomKind, got {kind!r}")
    return _core.cute.make_smem_layout_atom(int(_core.cute.SmemLayoutAtomKind[kind.name]), element_type)


def tile_to_mma_shape(atom, mma_tile_shape, order=None, *, loc=None, ip=None):
    """CuTe's UMMA::tile_to_mma_shape: `atom` tiled to the (M, K) (or (N, K)) extent of
    `mma_tile_shape` ((MMA_MN, MMA_K), MN_reps, K_reps, ...) in `order`, then divided back into
    ((MMA_MN, MMA_K), MN_reps, K_reps, ...)."""
    first = mma_tile_shape[0]
    mn = (cute_size(first[0]) * cute_size(mma_tile_shape[1]), cute_size(first[1]) * cute_size(mma_tile_shape[2]))
    trg = (*mn, *tuple(mma_tile_shape[3:]))
    tiled = _layout.tile_to_shape(atom, trg, order=order)
    return _layout.tiled_divide(tiled, (cute_size(first[0]), cute_size(first[1])))
