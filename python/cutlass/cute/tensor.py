"""CuTe tensors, pointers, copy atoms and tiled copies while tracing (`cute.make_tensor`,
`cute.local_tile`, `cute.copy` ...). Every function forwards to C++ (`cutlass._core.cute`); the
few Python additions wrap results in Python-level types (AddressSpace, TensorSSA)."""
from .. import _core
from .._dsl import numeric as _numeric
from .._dsl.address_space import AddressSpace
from .._dsl.extracted_values import ExtractedValues
from .._dsl.tensor import Pointer, Tensor
from .._dsl.errors import user_error
from . import coordinate_shadow as _coordinate_shadow
from .arch import _pointer_value, _user_line
from .layout import ComposedLayout, Layout, composition, make_composed_layout, make_layout, size
from .tensor_ssa import TensorSSA

_C = _core.cute
_Tensor = _C._Tensor
_Pointer = _C._Pointer
for _cls, _name in ((_Tensor, "_Tensor"), (_Pointer, "_Pointer")):
    _cls.__module__ = "cutlass.cute.core"
Tensor.register(_Tensor)
Pointer.register(_Pointer)
_core._set_numeric_wrappers(_numeric.wrap, _numeric.dtype)


def _memspace(self):
    return AddressSpace(self._memspace) if self._memspace >= 0 else None


def _load(self):
    return TensorSSA._from_values(self.shape, self.element_type, self._load_values())


def _store(self, value):
    if isinstance(value, TensorSSA):
        value = value._values()
    self._store_values(value)


_core_setitem = _Tensor.__setitem__
_core_extract = _Tensor.__extract_mlir_values__


def _extract(self):
    return ExtractedValues(_core_extract(self), self)
_core_getitem = _Tensor.__getitem__


def _getitem(self, key):
    out = _core_getitem(self, key)
    if _coordinate_shadow.active:  # a cute.experimental kernel tracks coordinates
        _coordinate_shadow.follow(self, out, lambda s: _core_getitem(s, key))
    return out


def _setitem(self, key, value):
    _core_setitem(self, key, value._t if isinstance(value, TensorSSA) else value)


_Tensor.memspace = property(_memspace)
_Tensor.__setitem__ = _setitem
_Tensor.__getitem__ = _getitem
_Tensor.__extract_mlir_values__ = _extract
_Tensor.load = _load
_Tensor.store = _store
_Pointer.memspace = property(_memspace)


# ---- construction ---------------------------------------------------------------------------

def make_tensor(iterator, layout, *, loc=None, ip=None):
    return _C.make_tensor(iterator, layout)


def make_ptr(dtype, value, mem_space=AddressSpace.generic, *, assumed_align=None, loc=None, ip=None):
    """A pointer to `dtype` in `mem_space` at `value`: an integer address, or a pointer (an
    llvm.addrspacecast result, as NVIDIA's MoE helpers pass) whose address is taken as is."""
    if isinstance(value, _core.Num) and not value.is_static:
        try:
            value = _C.pointer_from_value(value)  # a traced pointer value
        except TypeError:
            pass  # a traced integer
    if isinstance(value, _Pointer):
        value = value.toint()
    return _C.make_ptr(dtype, value, int(mem_space), assumed_align or 0)


def recast_ptr(ptr, swizzle_=None, dtype=None, *, loc=None, ip=None):
    """`ptr` as a pointer to `dtype` carrying the byte-address swizzle `swizzle_` (None: none)."""
    return _C.recast_ptr(ptr, swizzle_, dtype)


def recast_tensor(src, dtype, swizzle_=None, *, loc=None, ip=None):
    """The same bytes seen as elements of `dtype` (pointer recast and recast_layout)."""
    t = _C.recast_tensor(src, dtype)
    if swizzle_ is not None:
        t = _C.make_tensor(_C.recast_ptr(t.iterator, swizzle_, None), t.layout)
    return t


def domain_offset(coord, tensor, *, loc=None, ip=None):
    """`tensor` with its domain shifted by `coord`: element c is the old element coord + c."""
    return _C.domain_offset(coord, tensor)


def _pointer_element(ptr):
    return _C.make_tensor(ptr, 1)


def _pointer_load(self, *, loc=None, ip=None):
    return _pointer_element(self)[0]


def _pointer_store(self, value, *, loc=None, ip=None):
    _pointer_element(self)[0] = value


def _pointer_getitem(self, i):
    return _pointer_element(self + i)[0]


def _pointer_setitem(self, i, value):
    _pointer_element(self + i)[0] = value


_Pointer.load = _pointer_load
_Pointer.store = _pointer_store
_Pointer.__getitem__ = _pointer_getitem
_Pointer.__setitem__ = _pointer_setitem


def make_identity_tensor(shape, *, loc=None, ip=None):
    return _C.make_identity_tensor(shape)


def make_rmem_tensor(layout_or_shape, dtype, *, loc=None, ip=None):
    # The CuTe DSL accepts both argument orders (older code passes the dtype first).
    if isinstance(layout_or_shape, type) and issubclass(layout_or_shape, _numeric.Numeric):
        layout_or_shape, dtype = dtype, layout_or_shape
    return _C.make_rmem_tensor(layout_or_shape, dtype)


make_fragment = make_rmem_tensor


def make_fragment_like(src, dtype=None, *, loc=None, ip=None):
    if isinstance(src, ComposedLayout):
        # A register fragment of a swizzled layout: the outer layout's fragment (registers are
        # not swizzled); the layout alone keeps its swizzle.
        if dtype is None:
            return make_composed_layout(src.inner, src.offset, _C.make_fragment_like(src.outer, None))
        src = src.outer
    result = _C.make_fragment_like(src, dtype)
    if dtype is not None and not isinstance(result, Tensor):  # a layout and a dtype: a register tensor
        return make_rmem_tensor(result, dtype)
    return result


def make_rmem_tensor_like(src, dtype=None, *, loc=None, ip=None):
    if isinstance(src, TensorSSA):
        return make_rmem_tensor(src.shape, dtype or src.dtype)
    if isinstance(src, (Layout, ComposedLayout)) and dtype is None:
        raise TypeError("make_rmem_tensor_like of a layout needs a dtype")
    return make_fragment_like(src, dtype)


def local_tile(input, tiler, coord, proj=None, *, loc=None, ip=None):  # noqa: A002 - CuTe's name
    out = _C.local_tile(input, tiler, coord, proj)
    if _coordinate_shadow.active:  # a cute.experimental kernel tracks coordinates
        _coordinate_shadow.follow(input, out, lambda s: _C.local_tile(s, tiler, coord, proj))
    return out


def local_partition(target, tiler, index, proj=None, *, loc=None, ip=None):
    return _C.local_partition(target, tiler, index, proj)


# ---- copies -----------------------------------------------------------------------------------

class CopyUniversalOp:
    """The SIMT copy: each thread loads and stores its values (`cute.nvgpu.CopyUniversalOp`)."""
    _name = "universal"

    def __str__(self):
        return "universal Copy Operation"


# `atom.op`: the operation a copy atom was made from, rebuilt from what the atom records (its
# op_name, and for ldmatrix / stmatrix its matrices and transposition). The op classes' modules
# register themselves by op_name (cute.nvgpu.warp its matrix copies); epilogues pick the matching
# load of a store atom so (quack: an smem store's stmatrix -> the ldmatrix reading C back).
_COPY_OPS_BY_NAME = {"universal": lambda atom: CopyUniversalOp()}


def register_copy_op(op_name, make_op):
    _COPY_OPS_BY_NAME[op_name] = make_op


def _op_of_copy_atom(atom):
    make_op = _COPY_OPS_BY_NAME.get(atom.op_name)
    if make_op is None:
        raise user_error(f"CopyAtom.op: the operation of a {atom.op_name} copy atom is not available in OpenCuTe yet",
                         code="NOT_SUPPORTED")
    return make_op(atom)


_C.CopyAtom.op = property(_op_of_copy_atom)


def make_copy_atom(op, copy_internal_type, *, num_bits_per_copy=0, loc=None, ip=None, **kwargs):
    if hasattr(op, "_make_copy_atom"):  # the SM80 atoms (nvgpu.cpasync, nvgpu.warp)
        return op._make_copy_atom(copy_internal_type, num_bits_per_copy)
    if not isinstance(op, CopyUniversalOp):
        raise TypeError(f"make_copy_atom: unsupported copy operation {op}")
    return _C.make_copy_atom(op._name, copy_internal_type, int(num_bits_per_copy or 0))


def make_tiled_copy_tv(atom, thr_layout, val_layout, *, loc=None, ip=None):
    return _C.make_tiled_copy_tv(atom, thr_layout, val_layout)


def make_tiled_copy(atom, layout_tv, tiler_mn, *, loc=None, ip=None):
    return _C.make_tiled_copy(atom, layout_tv, tiler_mn)


def make_cotiled_copy(atom, atom_layout_tv, data_layout, *, loc=None, ip=None):
    """`atom` laid over data as `atom_layout_tv` ((thread, value) -> data address) says, tiling
    the part of `data_layout` (data coordinate -> address) it reaches (CuTe's make_cotiled_copy)."""
    return _C.make_cotiled_copy(atom, atom_layout_tv, data_layout)


def make_tiled_copy_S(atom, tiled_copy, *, loc=None, ip=None):
    """`atom` arranged as the source side of `tiled_copy` (CuTe's make_tiled_copy_S)."""
    return _C.make_tiled_copy_S(atom, tiled_copy)


def make_tiled_copy_D(atom, tiled_copy, *, loc=None, ip=None):
    """`atom` arranged as the destination side of `tiled_copy` (CuTe's make_tiled_copy_D)."""
    return _C.make_tiled_copy_D(atom, tiled_copy)


def copy(atom, src, dst, *, pred=None, unroll_factor=None, loc=None, ip=None, tma_bar_ptr=None, mcast_mask=None,
         tma_desc_ptr=None, cache_policy=None, mbar_ptr=None, **kwargs):
    """Copy src to dst with `atom`; C++ runs the atom's implementation with the operands it takes:
    pred= (one Boolean per atom call), and for TMA atoms tma_bar_ptr= (the mbarrier a load
    completes on), mcast_mask= (multicast loads) and tma_desc_ptr= (a copy of the atom's descriptor
    in memory, maybe re-pointed at another tensor; the box and swizzle stay the atom's); for
    non-tensor bulk copies (cpasync.CopyBulkG2SOp) mbar_ptr= (the mbarrier their bytes complete on)."""
    if hasattr(atom, "_refuse_copy"):
        atom._refuse_copy()
    bar = tma_bar_ptr if tma_bar_ptr is not None else mbar_ptr
    _C.copy(atom, src, dst, pred,
            None if bar is None else _pointer_value(bar),
            None if mcast_mask is None else _numeric.num_of(_numeric.as_numeric(mcast_mask)),
            None if tma_desc_ptr is None else _pointer_value(tma_desc_ptr), *_user_line())


def basic_copy(src, dst, *, loc=None, ip=None):
    """Element-by-element copy between two tensors of the same size."""
    atom = _C.make_copy_atom("universal", src.element_type, 0)
    _C.copy(atom, _as_vector(src), _as_vector(dst), None)


def _as_vector(t):
    """t viewed as (size, 1): one value mode holding every element."""
    return t._with_layout(composition(t.layout, make_layout((size(t), 1))))


def autovec_copy(src, dst, *, l1c_evict_priority=None, loc=None, ip=None):
    """Copies `src` to `dst` element by element in vectors as wide as the layouts and alignment
    allow. `l1c_evict_priority` (cute.nvgpu.CacheEvictionPriority) is a cache hint; OpenCuTe does
    not pass it to the PTX (the copy is the same without it)."""
    if l1c_evict_priority is not None and type(l1c_evict_priority).__name__ != "CacheEvictionPriority":
        raise TypeError(f"autovec_copy: l1c_evict_priority must be a cute.nvgpu.CacheEvictionPriority, got "
                        f"{l1c_evict_priority!r}")
    basic_copy(src, dst)


def print_tensor(tensor, *, verbose=False, loc=None, ip=None):
    """Prints a memory or coordinate tensor, or a TensorSSA, when the program runs."""
    _C.print_tensor(tensor._t if isinstance(tensor, TensorSSA) else tensor, verbose)


__all__ = [
    "AddressSpace", "make_tensor", "make_ptr", "recast_ptr", "recast_tensor", "domain_offset", "make_identity_tensor",
    "make_rmem_tensor",
    "make_fragment", "make_fragment_like", "make_rmem_tensor_like", "local_tile", "local_partition",
    "make_copy_atom", "make_tiled_copy_tv", "make_tiled_copy", "make_cotiled_copy", "make_tiled_copy_S", "make_tiled_copy_D", "copy", "basic_copy", "autovec_copy",
    "print_tensor",
]
# `ptr.llvm_ptr`: the pointer as an LLVM-level value, which code calling `cutlass._mlir.dialects`
# ops passes (fmha.py's mbarrier wait). OpenCuTe's IR pointer is typed, so it is the pointer itself.
_Pointer.llvm_ptr = property(lambda self: self)
_Pointer.to_llvm_ptr = lambda self, *, loc=None, ip=None: self  # (the method form, moe_utils.py)
# `ptr.value`: its IR value, which code recasting pointers through cutlass._mlir.dialects.cute passes.
_Pointer.value = property(lambda self: self)
# `tensor.leading_dim`: where its unit-stride mode is (cute.leading_dim of its shape and stride).
_Tensor.leading_dim = property(lambda self: _core.layout.leading_dim(self.shape, self.stride))
# `tensor._dtype`: NVIDIA's examples read the element type under this name too (fmha.py's
# make_rmem_tensor_like(s_max, s_max._dtype)).
_Tensor._dtype = property(lambda self: self.element_type)
# `tensor.value` / `layout.value`: the IR value the MLIR-level builders take
# (cutlass._mlir.dialects.cute_nvgpu); OpenCuTe's objects stand for themselves.
_Tensor.value = property(lambda self: self)
# `tensor.dtype`: and under this one (Blackwell fmha.py's recast_ptr(..., dtype=tOrP.dtype)).
_Tensor.dtype = property(lambda self: self.element_type)
# `ptr.toint(loc=, ip=)`: helper code passes the DSL's location keywords to every op.
_pointer_toint = _Pointer.toint
_Pointer.toint = lambda self, *, loc=None, ip=None: _pointer_toint(self)


class _PointerType:
    """`ptr.type`: the pointer's MLIR-level type as code that reads it sees it; `swizzle_type`
    prints as the CuTe dialect's `!cute.swizzle<"S<b,m,s>">` (FlashAttention-4 parses it to get a
    shared-memory operand's swizzle; an unswizzled pointer's is the identity S<0,4,3>)."""

    def __init__(self, ptr):
        self._ptr = ptr

    @property
    def swizzle_type(self):
        sw = self._ptr.swizzle
        bits, base, shift = (sw.num_bits, sw.num_base, sw.num_shift) if sw is not None else (0, 4, 3)
        return f'!cute.swizzle<"S<{bits},{base},{shift}>">'

    def __str__(self):
        return f"!cute.ptr<{self._ptr.dtype.__name__}, {self._ptr.memspace}, {self.swizzle_type}>"


_Pointer.type = property(_PointerType)
