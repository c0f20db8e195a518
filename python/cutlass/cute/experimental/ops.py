"""The operations of `cute.experimental`: library code over CuTe DSL operations."""
from ... import _core
from ..._dsl.address_space import AddressSpace
from ..._dsl.errors import DSLUserCodeError
from ..._dsl.numeric import Boolean, NumericMeta
from .. import coordinate_shadow as _coordinate_shadow
from ..layout import composition, group_modes, rank, size, zipped_divide
from ..tensor import CopyUniversalOp, make_copy_atom, make_rmem_tensor
from ..tensor import copy as _atom_copy


def is_memory_tensor(value):
    return isinstance(value, _core.cute._Tensor) and value.is_memory


def allocate(dtype, address_space, layout, *, alignment=None, loc=None, ip=None):
    """A tensor of `dtype` elements laid out by `layout` in `address_space` (registers only)."""
    if not isinstance(dtype, NumericMeta):
        raise DSLUserCodeError(f"allocate: {dtype!r} is not a DSL numeric type", code="TYPE_MISMATCH")
    if alignment is not None and (isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < 1
                                  or alignment & (alignment - 1)):
        raise DSLUserCodeError(f"allocate: alignment must be a power of two, got {alignment!r}", code="VALUE_INVALID")
    if address_space != AddressSpace.rmem:
        raise DSLUserCodeError(f"cute.experimental.allocate supports AddressSpace.rmem, not {address_space} "
                               "(use cutlass.utils.SmemAllocator for shared memory)", code="NOT_SUPPORTED")
    return make_rmem_tensor(layout, dtype)  # registers: alignment is the compiler's business


def partition(tensor, thread_idx, *, layout_tv, tiler, loc=None, ip=None):
    """Thread `thread_idx`'s values of `tensor` under the thread-value layout `layout_tv` of a
    `tiler`-shaped tile, repeated over the tiles of `tensor`: ((values), (tiles...))."""
    tiled = zipped_divide(tensor, tiler)  # ((tile), (rest))
    tv = composition(tiled, (layout_tv, None))  # (((threads), (values)), (rest))
    return tv[(thread_idx, None), None]


def _in_bounds(coord, shape):
    coord = coord if isinstance(coord, tuple) else (coord,)
    shape = shape if isinstance(shape, tuple) else (shape,)
    result = True
    for c, s in zip(_flatten(coord), _flatten(shape)):
        inside = c < s
        result = inside if result is True else (result & inside)
    return result


def _flatten(t):
    if isinstance(t, tuple):
        return [x for v in t for x in _flatten(v)]
    return [t]


def _rest_grouped(t):
    r = rank(t)
    return group_modes(t, 1, r) if r > 2 else t


def copy(src, dst, *, copy_atom=None, loc=None, ip=None, **kwargs):
    """Copies `src` to `dst` with `copy_atom` (a SIMT copy when None). Elements outside the shape of
    the kernel argument a side was derived from are left alone: a copy call whose values all lie
    inside uses the atom; one straddling the edge moves its inside elements one by one."""
    if copy_atom is None:
        copy_atom = make_copy_atom(CopyUniversalOp(), src.element_type)
    shadows = [s for s in (_coordinate_shadow.lookup(src), _coordinate_shadow.lookup(dst)) if s is not None]
    if not shadows:
        return _atom_copy(copy_atom, src, dst)
    if rank(src) != rank(dst):
        raise DSLUserCodeError(f"cute.experimental.copy: source and destination ranks differ ({rank(src)} and "
                               f"{rank(dst)})", code="SHAPE_MISMATCH")
    views = [(_rest_grouped(shadow), root) for shadow, root in shadows]
    values = size(src, mode=[0])
    rest = size(src) // values
    per_call = max(1, copy_atom.num_values if hasattr(copy_atom, "num_values") else _atom_values(copy_atom))
    if values % per_call:
        per_call = 1
    calls_per_rest = values // per_call
    inside = [[None] * values for _ in range(rest)]
    for r in range(rest):
        for k in range(values):
            ok = True
            for view, root in views:
                here = _in_bounds(view[(k, r)], root)
                ok = here if ok is True else (ok & here)
            inside[r][k] = ok
    whole = make_rmem_tensor((calls_per_rest * rest,), Boolean)
    part = make_rmem_tensor((values * rest,), Boolean)
    for r in range(rest):
        for c in range(calls_per_rest):
            group = inside[r][c * per_call:(c + 1) * per_call]
            all_in = group[0]
            for g in group[1:]:
                all_in = all_in & g
            whole[r * calls_per_rest + c] = all_in
            for j, g in enumerate(group):
                part[r * values + c * per_call + j] = g & ~all_in if per_call > 1 else Boolean(False)
    _atom_copy(copy_atom, src, dst, pred=whole)
    if per_call > 1:
        scalar = make_copy_atom(CopyUniversalOp(), src.element_type, num_bits_per_copy=src.element_type.width)
        _atom_copy(scalar, src, dst, pred=part)


def _atom_values(atom):
    """Values one call of `atom` moves (its source thread-value layout's value count)."""
    tv = atom.layout_src_tv
    return size(tv, mode=[1])
