"""Asynchronous copies (`cute.nvgpu.cpasync`): cp.async (SM80) global -> shared memory copies and
the SM90 TMA bulk tensor copies. The atoms' tables, checks and IR live in C++
(cpp/src/cute/atom/copy_sm80, copy_sm90)."""
import enum

from ... import _core
from ..._dsl import numeric as _numeric
from ..._dsl.errors import user_error
from ..._dsl.extracted_values import ExtractedValues
from ..._dsl.numeric import as_numeric, num_of
from ..arch import _pointer_value, _user_line
from ..layout import crd2idx, make_layout_image_mask, rank, size
from ..tensor import domain_offset


class LoadCacheMode(enum.Enum):
    """Where a cp.async caches what it reads: ALWAYS (`.ca`, L1 and L2; 4, 8 or 16 bytes) or GLOBAL
    (`.cg`, L2 only; 16 bytes). cp.async has no other cache modes."""
    ALWAYS = "always"
    GLOBAL = "global"
    STREAMING = "streaming"
    LAST_USE = "last_use"
    NONE = "none"


class CopyG2SOp:
    """cp.async: each thread copies 4, 8 or 16 bytes from global to shared memory, asynchronously;
    the copies of a thread complete at `cute.arch.cp_async_wait_group`. A predicated copy
    (`cute.copy(..., pred=)`) writes zeros where the predicate is false."""

    def __init__(self, cache_mode=LoadCacheMode.ALWAYS):
        self.cache_mode = cache_mode

    def __str__(self):
        return f"cp.async GMEM -> SMEM copy Operation\n  Cache mode: {self.cache_mode.name}"

    def __repr__(self):
        return f"CopyG2SOp(cache_mode={self.cache_mode})"

    def _make_copy_atom(self, dtype, num_bits):
        mode = self.cache_mode
        if mode not in (LoadCacheMode.ALWAYS, LoadCacheMode.GLOBAL):
            raise user_error(f"CopyG2SOp: cp.async caches ALWAYS (.ca) or GLOBAL (.cg), not {mode}",
                             code="INVALID_COPY_ATOM")
        return _core.cute.make_cp_async_atom(dtype, int(num_bits or 0), 1 if mode is LoadCacheMode.GLOBAL else 0)


class CopyBulkG2SOp:
    """cp.async.bulk (no tensor map): one thread copies a contiguous run of global memory into
    shared memory, the whole source tensor at once, completing its bytes on an mbarrier
    (`cute.copy(atom, gsrc, sdst, mbar_ptr=)`); the size is a multiple of 16 bytes."""

    def __str__(self):
        return "cp.async GMEM -> SMEM bulk copy Operation"

    def __repr__(self):
        return "CopyBulkG2SOp()"

    def __eq__(self, other):
        return type(other) is CopyBulkG2SOp

    def __hash__(self):
        return hash("CopyBulkG2SOp")

    def _make_copy_atom(self, dtype, num_bits):
        return _core.cute.make_bulk_copy_g2s_atom(dtype)


class CopyDsmemStoreOp:
    """st.async.shared::cluster.mbarrier::complete_tx::bytes: a store into another CTA's shared memory
    (a `map_dsmem_ptr` pointer) that completes bytes on that CTA's mbarrier (`cute.copy(...,
    mbar_ptr=)`). The atom can be made; copying with it is not implemented yet (NOT_SUPPORTED)."""

    def __str__(self):
        return "st.async SMEM -> DSMEM copy Operation"

    def __repr__(self):
        return "CopyDsmemStoreOp()"

    def _make_copy_atom(self, dtype, num_bits):
        return _UnimplementedCopyAtom(self, dtype)


class _UnimplementedCopyAtom:
    """The atom of an op whose copies OpenCuTe cannot run yet: made so kernels that build it on a path
    they never copy with still trace; cute.copy with it raises NOT_SUPPORTED at the user's line."""

    def __init__(self, op, dtype):
        self.op, self.value_type = op, dtype

    def _refuse_copy(self):
        raise user_error(f"cute.copy: {self.op!r} (st.async to distributed shared memory) is not supported yet",
                         code="NOT_SUPPORTED")


# ---- TMA (SM90 bulk tensor copies) ---------------------------------------------------------------

class _TmaOp:
    _kind = "load"

    def __init__(self, cta_group=None):
        self.cta_group = cta_group

    def _atom_kind(self):
        # A cta_group::2 load (CtaGroup.TWO, Blackwell's 2-CTA MMA operands) completes its bytes on
        # the mbarrier of the CTA pair's leader.
        two = getattr(self.cta_group, "value", self.cta_group) == 2
        return self._kind + "_2sm" if two and self._kind != "store" else self._kind

    def __repr__(self):
        return f"{type(self).__name__}()"

    def _to_ir(self, *, loc=None, ip=None):
        """The operation as the MLIR-level builders take it (cutlass._mlir.dialects.cute_nvgpu): itself."""
        return self


class CopyBulkTensorTileG2SOp(_TmaOp):
    """TMA tile load, global -> shared memory, completing its bytes on an mbarrier
    (`cute.copy(atom, gsrc, sdst, tma_bar_ptr=)`). Atoms come from make_tiled_tma_atom."""
    _kind = "load"

    def __str__(self):
        return "cp.async GMEM -> SMEM bulk tensor copy Operation"


class CopyBulkTensorTileG2SMulticastOp(_TmaOp):
    """TMA tile load multicast to the CTAs of the cluster in `mcast_mask=`."""
    _kind = "load_multicast"

    def __str__(self):
        return "cp.async GMEM -> SMEM bulk tensor multicast copy Operation"


class CopyBulkTensorTileS2GOp(_TmaOp):
    """TMA tile store, shared -> global memory; completes through bulk groups
    (cute.arch.cp_async_bulk_commit_group / wait_group)."""
    _kind = "store"

    def __str__(self):
        return "cp.async SMEM -> GMEM bulk tensor copy Operation"


class CopyReduceBulkTensorTileS2GOp(_TmaOp):
    """TMA tile reduce-store, shared -> global memory: each element of the box is combined into
    global memory with `reduction_kind` (cute.ReductionOp.ADD, the default, MIN, MAX ...)
    atomically per element (PTX cp.reduce.async.bulk.tensor); completes through bulk groups like
    the store."""
    _kind = "store"

    def __init__(self, reduction_kind=None, cta_group=None):
        super().__init__(cta_group)
        # Without one it adds, as CuTe's SM90_TMA_REDUCE_ADD (fmha_bwd.py accumulates dQ so).
        self.reduction_kind = "add" if reduction_kind is None else reduction_kind

    def __repr__(self):
        return f"CopyReduceBulkTensorTileS2GOp({self.reduction_kind})"

    def _atom_kind(self):
        # cute.ReductionOp.ADD / MIN / MAX, or the operation's name ("add", "and" ...).
        kind = self.reduction_kind
        name = kind.lower() if isinstance(kind, str) else getattr(kind, "name", str(kind)).lower()
        return "store_" + name

    def __str__(self):
        return "cp.reduce.async SMEM -> GMEM bulk tensor copy Operation"


class TmaCopyAtom:
    """A TMA copy atom: the C++ atom (box, swizzle, the smem tile layout) and the TMA descriptor
    value. It travels into a kernel as one argument: the descriptor, passed by value as a
    64-byte-aligned __grid_constant__ parameter."""

    def __init__(self, op, atom, desc, ratios=()):
        self.op = op
        self._atom = atom
        self._desc = desc
        # An MMA operand's atom (make_tiled_tma_atom_A/B): the extents of the MMA atom's (X, K)
        # modes, whose views tma_partition takes in MMA order ((atom X, atom K), rest X, rest K).
        self.mma_atom_extents = None
        # A tensor with more than 5 modes to address shares the last tensor-map dimension
        # between its trailing modes: their stride ratios (host values) travel with the descriptor.
        self._ratios = list(ratios)

    @property
    def _copy_atom(self):
        """The C++ copy atom cute.copy takes: the table with the descriptor value this atom holds
        (the host program's, or the kernel parameter it became)."""
        return _core.sm90.make_tma_copy_atom(self._atom, self._desc, self._ratios)

    @property
    def value_type(self):
        return getattr(_numeric, self._atom.value_type)

    @property
    def smem_layout(self):
        return self._atom.smem_layout

    def __extract_mlir_values__(self):
        return [self._desc] + self._ratios

    def __new_from_mlir_values__(self, values):
        new = TmaCopyAtom(self.op, self._atom, values[0], values[1:1 + len(self._ratios)])
        new.mma_atom_extents = self.mma_atom_extents
        return new

    def __str__(self):
        a = self._atom
        copies = f", {a.copies_per_tile} instructions per copy" if a.copies_per_tile > 1 else ""
        return (f"Copy Atom\n  ThrID: 1:0\n  {a.op_name}: box {tuple(a.box)}, swizzle {a.swizzle_bytes} B, "
                f"{a.value_type}{copies}")


class CopyBulkTensorTileG2SNonExecTrait:
    """The TMA load atom that cutlass._mlir.dialects.cute_nvgpu.atom_make_non_exec_tiled_tma_load
    made (its first result): `cute.CopyAtom(op, trait)` is that atom. It executes when cute.copy
    gives it the mbarrier (`tma_bar_ptr=`), as make_tiled_tma_atom's atoms do."""

    def __init__(self, atom):
        self.atom = atom


class TmaInfo:
    """What make_tiled_tma_atom returns: `.atom`, `.tma_tensor`, `.smem_layout`; unpacks as
    (atom, tma_tensor). Passed whole to a kernel, its atom (the descriptor) and its TMA tensor
    (the dynamic extents) become kernel parameters, one group each, and the kernel sees a TmaInfo
    rebuilt from them; the smem layout is static and travels as it is."""

    def __init__(self, atom, tma_tensor, smem_layout):
        self.atom = atom
        self.tma_tensor = tma_tensor
        self.smem_layout = smem_layout

    def __iter__(self):
        return iter((self.atom, self.tma_tensor))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.atom, self.tma_tensor)[i]

    def __extract_mlir_values__(self):
        return [ExtractedValues(self.atom.__extract_mlir_values__(), self.atom),
                ExtractedValues(self.tma_tensor.__extract_mlir_values__(), self.tma_tensor)]

    def __new_from_mlir_values__(self, parts):
        atom, tma_tensor = parts
        return TmaInfo(atom, tma_tensor, self.smem_layout)


def _type_name(internal_type):
    if internal_type is None:
        return ""
    if not isinstance(internal_type, _numeric.NumericMeta):
        raise user_error(f"make_tiled_tma_atom: internal_type must be a cutlass numeric type, got {internal_type!r}",
                         code="TYPE_MISMATCH")
    return internal_type.__name__


def make_tiled_tma_atom(op, gmem_tensor, smem_layout, cta_tiler, num_multicast=1, *, internal_type=None,
                        loc=None, ip=None):
    """A TMA atom copying `cta_tiler`-shaped tiles of `gmem_tensor` into (or out of) a shared
    buffer laid out as `smem_layout` (a trailing stage mode is ignored), and the TMA tensor: the
    coordinate tensor to tile and partition like `gmem_tensor`. `cta_tiler` is the tile (a tuple of
    extents or of layouts), or CuTe's cta_v_map layout (composition(make_identity_layout(gmem.shape),
    tile)), which C++ reads the tile off (cute/atom/tma_cta_v_map_sm90.h)."""
    if not isinstance(op, _TmaOp):
        raise ValueError(f"make_tiled_tma_atom: expected a TMA copy op (CopyBulkTensorTile*Op), got {op!r}")
    atom, desc, tma_tensor, ratios = _core.sm90.make_tiled_tma_atom(op._atom_kind(), gmem_tensor, smem_layout, cta_tiler,
                                                                    int(num_multicast), _type_name(internal_type),
                                                                    *_user_line())
    return TmaInfo(TmaCopyAtom(op, atom, desc, ratios), tma_tensor, smem_layout)


def tma_partition(atom, cta_coord, cta_layout, smem_tensor, gmem_tensor, *, loc=None, ip=None):
    """(smem, gmem) views for this CTA's TMA copies: mode 0 is one copy (one whole tile), the
    other modes index stages / tiles (`tAsA[(None, stage)]`, `tAgA[(None, k)]`). With a multicast
    group (`cta_layout` of num_multicast CTAs) this CTA issues the slice `cta_layout(cta_coord)`
    of each tile, which lands in every CTA of the mask: both views start at that slice. A copy
    whose tile or slice is more than one TMA box issues one instruction per box (`str(atom)`
    tells how many)."""
    a = atom._atom
    n = size(cta_layout)
    if not isinstance(n, int):
        raise user_error("tma_partition: the cta_layout must be static", code="TMA_LAYOUT")
    if n == 1:
        return smem_tensor, gmem_tensor
    if n != a.num_multicast:
        raise user_error(f"tma_partition: the cta_layout has {n} CTAs but the atom was made with "
                         f"num_multicast={a.num_multicast}", code="TMA_LAYOUT")
    index = crd2idx(cta_coord, cta_layout)
    offs = tuple(index * a.mcast_step if m == a.mcast_mode else 0 for m in range(a.tile_rank))
    if atom.mma_atom_extents is not None:
        # MMA-ordered views (mode 0 grouped as ((atom X, atom K), rest X, rest K)): the tile
        # coordinate (x, k) is ((x % atom X, k % atom K), x // atom X, k // atom K) there.
        # A view whose mode 0 is the plain (x, k) tile takes the tile coordinate itself.
        ax, ak = atom.mma_atom_extents
        x, k = offs
        mma = ((x % ax, k % ak), x // ax, k // ak)

        def mma_start(t):
            shape0 = t.shape[0] if rank(t) > 1 or len(t.shape) == 1 else t.shape
            mma_ordered = isinstance(shape0, tuple) and len(shape0) == 3 and isinstance(shape0[0], tuple)
            return ((mma if mma_ordered else offs),) + (0,) * (rank(t) - 1)

        return domain_offset(mma_start(smem_tensor), smem_tensor), domain_offset(mma_start(gmem_tensor), gmem_tensor)

    def start(t):
        # The tile modes are grouped in mode 0 (group_modes(x, 0, 2)), or are the tensor's first modes.
        shape0 = t.shape[0] if rank(t) > 1 else t.shape
        if isinstance(shape0, tuple) and len(shape0) == a.tile_rank:
            return (offs,) + (0,) * (rank(t) - 1)
        return offs + (0,) * (rank(t) - a.tile_rank)

    return domain_offset(start(smem_tensor), smem_tensor), domain_offset(start(gmem_tensor), gmem_tensor)


def prefetch_descriptor(tma_atom, *, loc=None, ip=None):
    """Prefetch the atom's TMA descriptor into the cache (prefetch.tensormap)."""
    _core.sm90.tma_descriptor_op(tma_atom._desc, True)


def fence_tma_desc_acquire(tma_desc, *, loc=None, ip=None):
    """fence.proxy.tensormap::generic.acquire.gpu on the descriptor (after it was modified)."""
    desc = tma_desc._desc if isinstance(tma_desc, TmaCopyAtom) else tma_desc
    _core.sm90.tma_descriptor_op(_pointer_value(desc), False)


def fence_tma_desc_release(*, loc=None, ip=None):
    """fence.proxy.tensormap::generic.release.gpu: descriptor writes become visible to TMA."""
    _core.sm90.fence("tensormap_release")


def copy_tensormap(tma_atom, tensormap_ptr, *, loc=None, ip=None):
    """Copies the atom's TMA descriptor (128 bytes) into the slot at `tensormap_ptr` (global or
    shared memory, 128-byte aligned). Every calling lane copies: call it from one elected lane."""
    _core.sm90_tensormap.copy_tensormap(tma_atom._desc, _pointer_value(tensormap_ptr), *_user_line())


def update_tma_descriptor(tma_atom, gmem_tensor, tma_desc_ptr, *, loc=None, ip=None):
    """Re-points the tensor map at `tma_desc_ptr` (a copy of the atom's descriptor) at
    `gmem_tensor`: its address, extents and byte strides (tensormap.replace, sm_90a). The tensor
    must have the atom's modes, with the same innermost contiguous mode."""
    _core.sm90_tensormap.update_tma_descriptor(tma_atom._atom, gmem_tensor, _pointer_value(tma_desc_ptr),
                                               *_user_line())


def cp_fence_tma_desc_release(tma_desc_global_ptr, tma_desc_shared_ptr, *, loc=None, ip=None):
    """Copies the tensor map in shared memory to its global slot and releases it to the TMA unit
    (tensormap.cp_fenceproxy ... release.gpu; the whole warp executes it)."""
    _core.sm90_tensormap.cp_fence_tma_desc_release(_pointer_value(tma_desc_global_ptr),
                                                   _pointer_value(tma_desc_shared_ptr), *_user_line())


def create_tma_multicast_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode, *, loc=None, ip=None):
    """The CTAs (bits) of the cluster sharing a multicast along `mcast_mode` (make_layout_image_mask)."""
    return make_layout_image_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode)


__all__ = ["LoadCacheMode", "CopyBulkTensorTileG2SNonExecTrait", "CopyG2SOp", "CopyBulkG2SOp", "CopyBulkTensorTileG2SOp", "CopyBulkTensorTileG2SMulticastOp",
           "CopyBulkTensorTileS2GOp", "CopyReduceBulkTensorTileS2GOp", "TmaCopyAtom", "TmaInfo", "make_tiled_tma_atom", "tma_partition",
           "prefetch_descriptor", "fence_tma_desc_acquire", "fence_tma_desc_release", "update_tma_descriptor",
           "copy_tensormap", "cp_fence_tma_desc_release",
           "create_tma_multicast_mask"]
