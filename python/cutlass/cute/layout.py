"""The CuTe layout algebra (`cute.make_layout`, `cute.composition`, `cute.zipped_divide` ...).

Every function forwards to C++ (`cutlass._core.layout`), which converts the arguments (Python
ints are static leaves, DSL integers dynamic ones, `None` is `_`), runs the algebra and returns
ints / tuples / DSL integers / layouts. Static layouts work in plain Python; dynamic leaves need
a @cute.jit trace, where their arithmetic becomes IR.
"""
from .. import _core
from .._dsl import numeric as _numeric
from .._dsl.errors import DSLUserCodeError
from .._dsl.tensor import Tensor as _Tensor
from . import coordinate_shadow as _coordinate_shadow

_L = _core.layout

Layout = _L.Layout
ComposedLayout = _L.ComposedLayout
Swizzle = _L.Swizzle
ScaledBasis = _L.ScaledBasis
for _cls in (Layout, ComposedLayout, Swizzle, ScaledBasis):
    _cls.__module__ = "cutlass.cute"
# `layout.value`: the IR value the MLIR-level builders take (cutlass._mlir.dialects.cute_nvgpu);
# a layout stands for itself.
for _cls in (Layout, ComposedLayout):
    _cls.value = property(lambda self: self)


class LayoutError(DSLUserCodeError, ValueError):
    """An error of the layout algebra (incongruent or non-divisible arguments, a dynamic value
    where a static one is needed); the message names the function and its layouts."""


_L._set_error_class(LayoutError)


# DSL integers with divisibility (dynamic layout leaves, cute.assume): the C++ algebra returns them.
_int_value_class, _wrap_int = _numeric._int_value_class, _numeric._wrap_int
_L._set_int_wrapper(_wrap_int)

IntValue = _int_value_class(_numeric.Int32)


def _alg(x):
    """Tensors take part in the algebra through their layout."""
    if isinstance(x, _Tensor):
        return x.layout
    return x


def _on_tensor(fn):
    """A layout function that, given a tensor, returns the tensor with the transformed layout."""
    def apply(x, *args, **kwargs):
        if isinstance(x, _Tensor):
            out = x._with_layout(fn(x.layout, *args, **kwargs))
            if _coordinate_shadow.active:  # a cute.experimental kernel tracks coordinates
                _coordinate_shadow.follow(x, out, lambda s: s._with_layout(fn(s.layout, *args, **kwargs)))
            return out
        return fn(x, *args, **kwargs)
    apply.__name__ = fn.__name__
    apply.__doc__ = fn.__doc__
    apply.__wrapped__ = fn
    return apply


# ---- construction ---------------------------------------------------------------------------

def make_layout(shape, *, stride=None, loc=None, ip=None):
    return _L.make_layout(shape, stride)


def make_ordered_layout(shape, order, *, loc=None, ip=None):
    return _L.make_ordered_layout(shape, order)


def make_identity_layout(shape, *, loc=None, ip=None):
    return _L.make_identity_layout(shape)


def make_swizzle(b, m, s, *, loc=None, ip=None):
    return _L.make_swizzle(b, m, s)


def make_composed_layout(inner, offset, outer, *, loc=None, ip=None):
    if callable(inner) and not isinstance(inner, (Layout, Swizzle, ComposedLayout)):
        return _FunctionComposedLayout(inner, offset, outer)
    return _L.make_composed_layout(inner, offset, outer)


class _FunctionComposedLayout:
    """`inner o offset o outer` whose inner is a Python function (CuTe DSL allows it for the
    algebra only; it cannot back a tensor): coord -> inner(offset + outer(coord))."""

    def __init__(self, inner, offset, outer):
        if not isinstance(outer, Layout):
            raise TypeError(f"make_composed_layout: outer must be a Layout, got {type(outer).__name__}")
        self.inner, self.offset, self.outer = inner, offset, outer

    shape = property(lambda self: self.outer.shape)
    is_normal = False

    def __call__(self, coord):
        return self.inner(_L.offset_add(self.offset, self.outer(coord)))

    def __str__(self):
        name = getattr(self.inner, "__name__", type(self.inner).__name__)
        return f"{name} o {_L.pretty_str(self.offset)} o {self.outer}"

    __repr__ = __str__


def make_layout_tv(thr_layout, val_layout, *, loc=None, ip=None):
    return _L.make_layout_tv(thr_layout, val_layout)


def tile_to_shape(atom, trg_shape, order=None, *, loc=None, ip=None):
    return _L.tile_to_shape(atom, trg_shape, order)


def recast_layout(new_type_bits, old_type_bits, src_layout, *, loc=None, ip=None):
    return _L.recast_layout(new_type_bits, old_type_bits, src_layout)


def E(mode):
    """The basis element 1@mode (`mode` an int or a path); E([]) is 1."""
    if isinstance(mode, (list, tuple)) and len(mode) == 0:
        return 1
    return ScaledBasis(1, mode)


# ---- queries and tuple utilities --------------------------------------------------------------

def size(a, mode=None, *, loc=None, ip=None):
    if mode is None and getattr(a, "__cute_static__", False) and hasattr(a, "size"):
        return a.size  # TiledCopy / TiledMma: the thread count
    return _L.size(_alg(a), mode)


def cosize(a, mode=None, *, loc=None, ip=None):
    return _L.cosize(_alg(a), mode)


def size_in_bytes(dtype, layout, *, loc=None, ip=None):
    """Bytes that `layout`'s codomain spans in elements of `dtype`: ceil(cosize * width / 8);
    swizzled layouts count their outer layout; None -> 0."""
    if layout is None:
        return 0
    return (cosize(layout) * dtype.width + 7) // 8


def rank(a, mode=None):
    return _L.rank(_alg(a), mode)


def depth(a):
    return _L.depth(_alg(a))


def is_congruent(a, b):
    """Whether a and b have the same profile (the nesting of their shapes; a layout counts by its shape)."""
    return _L.is_congruent(_alg(a), _alg(b))


def is_weakly_congruent(a, b):
    """Whether a's profile is a prefix of b's: each of a's leaves stands for a whole mode of b."""
    return _L.is_weakly_congruent(_alg(a), _alg(b))


def shape(x, *, mode=None, loc=None, ip=None):
    return _L.shape(_alg(x), mode)


def get(x, mode, *, loc=None, ip=None):
    return _L.get(_alg(x), mode)


@_on_tensor
def select(x, mode, *, loc=None, ip=None):
    return _L.select(_alg(x), mode)


@_on_tensor
def group_modes(x, begin, end=None, *, loc=None, ip=None):
    return _L.group_modes(_alg(x), begin, end)


def slice_(src, coord, *, loc=None, ip=None):
    if isinstance(src, _Tensor):
        return src[coord]
    if isinstance(src, ComposedLayout):
        # inner o (offset + outer(c)) for the sliced-away coordinates c: the outer layout sliced,
        # the offset advanced by where the slice starts (a stage of a staged smem layout).
        def zeros(c):
            return tuple(zeros(x) for x in c) if isinstance(c, tuple) else (0 if c is None else c)
        start = crd2idx(zeros(coord), src.outer)
        return make_composed_layout(src.inner, src.offset + start, _L.slice_(src.outer, coord))
    return _L.slice_(src, coord)


def dice(src, dicer, *, loc=None, ip=None):
    return _L.dice(_alg(src), dicer)


def prepend(x, elem=None, up_to_rank=None, *, loc=None, ip=None):
    return _L.prepend(_alg(x), elem, up_to_rank)


def append(x, elem=None, up_to_rank=None, *, loc=None, ip=None):
    return _L.append(_alg(x), elem, up_to_rank)


def prepend_ones(x, up_to_rank=None, *, loc=None, ip=None):
    """`x` (a layout, tensor or tuple) with modes of extent 1 (stride 0) put in front until its
    rank is `up_to_rank`."""
    return _ones(x, up_to_rank, prepend)


def append_ones(x, up_to_rank=None, *, loc=None, ip=None):
    """`x` (a layout, tensor or tuple) with modes of extent 1 (stride 0) added at the end until
    its rank is `up_to_rank`."""
    return _ones(x, up_to_rank, append)


def _ones(x, up_to_rank, extend):
    if hasattr(x, "iterator") and hasattr(x, "layout"):  # a tensor: its layout, same engine
        return _core.cute.make_tensor(x.iterator, _ones(x.layout, up_to_rank, extend))
    if isinstance(x, tuple) or isinstance(x, int) or not hasattr(x, "shape"):
        return extend(x, 1, up_to_rank)
    return extend(x, make_layout(1, stride=0), up_to_rank)


@_on_tensor
def flatten(x, *, loc=None, ip=None):
    return _L.flatten(_alg(x))


def flatten_to_tuple(x, *, loc=None, ip=None):
    """The leaves of a (nested) tuple in order, as a flat tuple (a non-tuple becomes a 1-tuple)."""
    if not isinstance(x, tuple):
        return (x,)
    out = []
    for e in x:
        out.extend(flatten_to_tuple(e))
    return tuple(out)


def is_static(x):
    """Whether `x` (an int, a DSL number, a tuple of them, a layout, a tensor's layout) is known at
    compile time throughout."""
    if isinstance(x, bool) or isinstance(x, int) or x is None:
        return True
    if isinstance(x, tuple):
        return all(is_static(e) for e in x)
    if hasattr(x, "is_static"):
        return bool(x.is_static())
    if hasattr(x, "layout") and hasattr(x, "iterator"):
        return is_static(x.layout)
    return False


def crd2idx(coord, layout, *, loc=None, ip=None):
    return _L.crd2idx(coord, _alg(layout))


def idx2crd(idx, shape, *, loc=None, ip=None):
    return _L.idx2crd(idx, _alg(shape))


def product(a, *, loc=None, ip=None):
    return _L.product(a)


def product_each(a, *, loc=None, ip=None):
    return _L.product_each(a)


def product_like(a, target_profile, *, loc=None, ip=None):
    return _L.product_like(a, target_profile)


def inner_product(a, b, *, loc=None, ip=None):
    return _L.inner_product(a, b)


def shape_div(lhs, rhs, *, loc=None, ip=None):
    return _L.shape_div(lhs, rhs)


def ceil_div(a, tiler, *, loc=None, ip=None):
    return _L.ceil_div(a, tiler)


def round_up(a, b, *, loc=None, ip=None):
    """Element-wise ceil(a / b) * b; `b` is padded with 1s to the rank of `a`."""
    return _L.round_up(a, b)


def elem_less(lhs, rhs, *, loc=None, ip=None):
    return _L.elem_less(lhs, rhs)


def leading_dim(shape, stride, *, loc=None, ip=None):
    """Position (an int, or a path tuple inside a nested mode) of the first mode with a static
    stride of 1 and a shape that is not static 1; None when there is none."""
    return _L.leading_dim(shape, stride)


def assume(src, divby=1, *, loc=None, ip=None):
    return _L.assume(src, divby)


def repeat_like(x, target, *, loc=None, ip=None):
    """A tuple with the nesting of `target` whose every leaf is `x` (x itself for a leaf)."""
    if isinstance(target, (tuple, list)):
        return tuple(repeat_like(x, t) for t in target)
    return x


def pretty_str(x):
    return _L.pretty_str(x)


# ---- the algebra ------------------------------------------------------------------------------

@_on_tensor
def coalesce(input, *, target_profile=None, loc=None, ip=None):  # noqa: A002 - CuTe's name
    return _L.coalesce(_alg(input), target_profile)


@_on_tensor
def filter_zeros(input, *, target_profile=None, loc=None, ip=None):  # noqa: A002
    return _L.filter_zeros(_alg(input), target_profile)


def filter(input, *, loc=None, ip=None):  # noqa: A001,A002
    return _L.filter(_alg(input))


@_on_tensor
def composition(lhs, rhs, *, loc=None, ip=None):
    return _L.composition(_alg(lhs), rhs)


def complement(input, cotarget=None, *, loc=None, ip=None):  # noqa: A002
    return _L.complement(_alg(input), cotarget)


def right_inverse(input, *, loc=None, ip=None):  # noqa: A002
    return _L.right_inverse(input)


def left_inverse(input, *, loc=None, ip=None):  # noqa: A002
    return _L.left_inverse(input)


@_on_tensor
def logical_divide(target, tiler, *, loc=None, ip=None):
    return _L.logical_divide(_alg(target), tiler)


@_on_tensor
def zipped_divide(target, tiler, *, loc=None, ip=None):
    return _L.zipped_divide(_alg(target), tiler)


@_on_tensor
def tiled_divide(target, tiler, *, loc=None, ip=None):
    return _L.tiled_divide(_alg(target), tiler)


@_on_tensor
def flat_divide(target, tiler, *, loc=None, ip=None):
    return _L.flat_divide(_alg(target), tiler)


def logical_product(block, tiler, *, loc=None, ip=None):
    return _L.logical_product(_alg(block), tiler)


def zipped_product(block, tiler, *, loc=None, ip=None):
    return _L.zipped_product(_alg(block), tiler)


def tiled_product(block, tiler, *, loc=None, ip=None):
    return _L.tiled_product(_alg(block), tiler)


def flat_product(block, tiler, *, loc=None, ip=None):
    return _L.flat_product(_alg(block), tiler)


def blocked_product(block, tiler, *, loc=None, ip=None):
    return _L.blocked_product(_alg(block), tiler)


def raked_product(block, tiler, *, loc=None, ip=None):
    return _L.raked_product(_alg(block), tiler)


def max_common_layout(a, b, *, loc=None, ip=None):
    return _L.max_common_layout(_alg(a), _alg(b))


def max_common_vector(a, b, *, loc=None, ip=None):
    return _L.max_common_vector(_alg(a), _alg(b))


def make_layout_image_mask(layout, coord, mode, *, loc=None, ip=None):
    """Bit mask (an Int16) of the codomain points `layout` reaches from `coord` when mode `mode`
    runs over its whole extent and the other modes stay at `coord`: the CTAs of a cluster that
    share a TMA multicast. `layout` must be static with a cosize of at most 16; `coord` may hold
    dynamic values (the mask is then computed at run time)."""
    if not isinstance(layout, Layout) or not layout.is_static():
        raise ValueError("make_layout_image_mask: the layout must be a static Layout")
    if cosize(layout) > 16:
        raise ValueError(f"make_layout_image_mask: the layout's cosize {cosize(layout)} exceeds 16 (a 16-bit mask)")
    coords = list(coord) if isinstance(coord, (tuple, list)) else [coord]
    if not 0 <= mode < len(coords) or len(coords) != rank(layout):
        raise ValueError(f"make_layout_image_mask: mode {mode} of a coordinate with {len(coords)} modes for a layout "
                         f"of rank {rank(layout)}")
    mask = 0
    for i in range(size(layout, mode=[mode])):
        c = list(coords)
        c[mode] = i
        mask = mask | (1 << crd2idx(tuple(c), layout))
    return _numeric.Int16(mask)


__all__ = [
    "make_layout_image_mask",
    "Layout", "ComposedLayout", "Swizzle", "ScaledBasis", "IntValue", "LayoutError", "E",
    "size_in_bytes", "make_layout", "make_ordered_layout", "make_identity_layout", "make_swizzle", "make_composed_layout",
    "make_layout_tv", "tile_to_shape", "recast_layout",
    "size", "cosize", "rank", "depth", "is_congruent", "is_weakly_congruent", "shape", "get", "select", "group_modes", "slice_", "dice", "prepend",
    "append", "prepend_ones", "append_ones", "flatten", "flatten_to_tuple", "is_static", "crd2idx", "idx2crd", "product", "product_each", "product_like", "inner_product",
    "shape_div", "ceil_div", "elem_less", "leading_dim", "round_up", "assume", "pretty_str", "repeat_like",
    "coalesce", "filter_zeros", "filter", "composition", "complement", "right_inverse", "left_inverse",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product",
    "tiled_product", "flat_product", "blocked_product", "raked_product", "max_common_layout",
    "max_common_vector",
]
