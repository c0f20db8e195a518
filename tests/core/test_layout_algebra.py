"""Golden and semantic tests of the cute layout algebra: static layouts in plain Python (no
@jit; results are plain ints and tuples) and the same calls inside @cute.jit."""
import itertools

import pytest

import cutlass
import cutlass.cute as cute


def L(shape, stride=None):
    return cute.make_layout(shape, stride=stride)


def values(layout):
    """The layout as a function over its 1-D domain."""
    return [layout(i) for i in range(cute.size(layout))]


# ---- construction, printing, queries --------------------------------------------------------

def test_make_layout_default_stride_is_column_major():
    assert str(L((4, 8))) == "(4,8):(1,4)"
    assert str(L((2, (3, 4)))) == "(2,(3,4)):(1,(2,6))"
    assert str(L(8)) == "8:1"
    assert str(L(4, 2)) == "4:2"


def test_compact_strides_of_size_one_modes_are_zero():
    # As CuTe's compact layouts: a size-1 mode is never stepped along, so its stride is 0; the
    # elementwise_add notebook's text shows the same in a (1,8) divide.
    assert str(L((4, 1))) == "(4,1):(1,0)"
    assert str(L((1, (1, 8)))) == "(1,(1,8)):(0,(0,1))"
    assert str(L(1)) == "1:0"
    assert str(cute.make_ordered_layout((1, 4, 2), order=(2, 1, 0))) == "(1,4,2):(0,2,1)"
    assert str(cute.zipped_divide(L((2048, 2048), (2048, 1)), (1, 8))) == "((1,8),(2048,256)):((0,1),(2048,8))"


def test_layout_members():
    lay = L((4, 8), (1, 4))
    assert lay.shape == (4, 8)
    assert lay.stride == (1, 4)
    assert str(lay.type) == '!cute.layout<"(4,8):(1,4)">'
    assert repr(lay) == str(lay) == "(4,8):(1,4)"
    assert lay == L((4, 8))
    assert not (lay != L((4, 8)))
    assert lay != L((4, 8), (8, 1))
    assert isinstance(lay, cute.Layout)
    assert [str(m) for m in lay] == ["4:1", "8:4"] and len(lay) == 2


def test_layout_call_and_index():
    lay = L((4, 8), (1, 4))
    assert lay((1, 2)) == 9
    assert lay(9) == 9
    assert L((4, 8), (8, 1))(5) == 8 + 1 * 1  # colexicographic: 5 -> (1,1)
    assert str(lay[1]) == "8:4"
    assert str(lay((None, 3))) == "(4):(1)"
    assert str(lay((2, None))) == "(8):(4)"


def test_make_layout_from_layouts():
    assert str(cute.make_layout([L(4, 2), L(3, 8)])) == "(4,3):(2,8)"


def test_make_ordered_layout():
    assert str(cute.make_ordered_layout((4, 4), order=(1, 0))) == "(4,4):(4,1)"
    assert cute.make_ordered_layout((32, 16, 8), order=(2, 0, 1)).stride == (128, 1, 16)


def test_make_identity_layout():
    lay = cute.make_identity_layout((4, 8))
    assert str(lay) == "(4,8):(1@0,1@1)"
    assert lay((2, 3)) == (2, 3)


def test_size_cosize_rank_depth():
    lay = L((2, (3, 4)), (12, (1, 3)))
    assert cute.size(lay) == 24
    assert cute.size(lay, mode=[1]) == 12
    assert cute.size((2, (3, 4))) == 24
    assert cute.cosize(L((2, 2), (4, 1))) == 6
    assert cute.rank(lay) == 2
    assert cute.rank((1, 2, 3)) == 3
    assert cute.rank(5) == 1
    assert cute.depth(lay) == 2
    assert cute.depth(5) == 0
    assert cute.depth((1, 2)) == 1
    assert cute.depth(((1, 2), 3)) == 2
    # congruence compares profiles (CuTe's is_congruent / is_weakly_congruent); a layout by its shape
    assert cute.is_congruent(lay, (1, (1, 1))) and not cute.is_congruent(lay, ((1, 1), (1, 1)))
    assert cute.is_congruent(cute.logical_divide(L(64, 1), (8,)), ((1, 1),))
    assert cute.is_congruent(5, 7) and not cute.is_congruent(5, (5,))
    assert cute.is_weakly_congruent((1, 1), lay) and not cute.is_weakly_congruent(lay, (1, 1))
    assert cute.shape(lay) == (2, (3, 4))


def test_get_select_group_modes():
    lay = L((4, 8, 16), (32, 4, 1))
    assert str(cute.get(L((2, (3, 4))), mode=[1, 0])) == "3:2"
    assert str(cute.select(lay, mode=[0, 2])) == "(4,16):(32,1)"
    assert str(cute.group_modes(lay, 0, 2)) == "((4,8),16):((32,4),1)"
    assert cute.group_modes((1, 2, 3), 1) == (1, (2, 3))


def test_slice_and_dice():
    lay = L((4, 8), (1, 4))
    assert str(cute.slice_(lay, (None, 3))) == "(4):(1)"
    assert cute.slice_((4, 5, 6), (None, 0, None)) == (4, 6)
    assert str(cute.dice(lay, (1, None))) == "(4):(1)"


def test_crd2idx_idx2crd():
    lay = L((4, 8), (1, 4))
    assert cute.crd2idx((1, 2), lay) == 9
    assert cute.crd2idx((1, 2), (4, 8)) == 9
    assert cute.idx2crd(9, (4, 8)) == (1, 2)
    assert cute.idx2crd(13, (2, (3, 4))) == (1, (0, 2))


def test_tuple_utilities():
    assert cute.product((2, (3, 4))) == 24
    assert cute.product_each((2, (3, 4))) == (2, 12)
    assert cute.inner_product((2, 3), (4, 5)) == 23
    assert cute.flatten((1, (2, 3))) == (1, 2, 3)
    assert str(cute.flatten(L((2, (3, 4))))) == "(2,3,4):(1,2,6)"
    assert cute.ceil_div((10, 6), (3, 4)) == (4, 2)
    assert cute.ceil_div(10, 3) == 4
    assert cute.shape_div((12, 8), 4) == (3, 8)
    assert cute.elem_less((1, 2), (2, 3))
    assert not cute.elem_less((1, 3), (2, 3))
    assert cute.append((4, 4), 2) == (4, 4, 2)
    assert cute.prepend((4, 4), 2) == (2, 4, 4)
    assert str(cute.append(L(4, 1), L(2, 4))) == "(4,2):(1,4)"
    assert str(cute.prepend(L(4, 1), L(2, 4))) == "(2,4):(4,1)"


# ---- the algebra ------------------------------------------------------------------------------

def test_coalesce():
    assert str(cute.coalesce(L((2, (1, 6)), (1, (6, 2))))) == "12:1"
    assert str(cute.coalesce(L((2, (1, 6)), (1, (6, 2))), target_profile=(1, 1))) == "(2,6):(1,2)"
    assert str(cute.coalesce(L(((2, (3, 4)), (3, 2), 1), ((4, (8, 24)), (2, 6), 12)))) == "(24,6):(4,2)"
    assert str(cute.coalesce(L((4, 1, 8), (1, 7, 4)))) == "32:1"


def test_filter():
    assert str(cute.filter_zeros(L((4, 8), (0, 1)))) == "(1,8):(0,1)"
    assert str(cute.filter(L((4, 1, 8), (0, 3, 1)))) == "8:1"


def test_composition():
    assert str(cute.composition(L((6, 2), (8, 2)), L((4, 3), (3, 1)))) == "((2,2),3):((24,2),8)"
    assert str(cute.composition(L((10, 2), (16, 4)), L((5, 4), (1, 5)))) == "(5,(2,2)):(16,(80,4))"
    assert str(cute.composition(L((12, (4, 8)), (59, (13, 1))), (3, 8))) == "(3,(4,2)):(59,(13,1))"
    a, b = L((4, 6), (6, 1)), L((3, 8), (8, 1))
    r = cute.composition(a, b)
    assert values(r) == [a(b(i)) for i in range(cute.size(b))]


def test_complement():
    assert str(cute.complement(L(4, 1), 24)) == "6:4"
    assert str(cute.complement(L(6, 4), 24)) == "4:1"
    assert str(cute.complement(L(4, 2), 24)) == "(2,3):(1,8)"
    assert str(cute.complement(L((2, 2), (1, 6)), 24)) == "(3,2):(2,12)"


def test_inverses():
    assert str(cute.right_inverse(L((4, 8), (1, 4)))) == "32:1"
    ri = cute.right_inverse(L((4, 8), (8, 1)))
    lay = L((4, 8), (8, 1))
    assert [lay(ri(i)) for i in range(32)] == list(range(32))
    li = cute.left_inverse(lay)
    assert [li(lay(i)) for i in range(32)] == list(range(32))


def test_divides():
    assert str(cute.logical_divide(L((4, 2, 3), (2, 1, 8)), L(4, 2))) == "((2,2),(2,3)):((4,1),(2,8))"
    lay = L((9, (4, 8)), (59, (13, 1)))
    tiler = (L(3, 3), L((2, 4), (1, 8)))
    assert str(cute.logical_divide(lay, tiler)) == "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))"
    assert str(cute.zipped_divide(lay, tiler)) == "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))"
    assert str(cute.tiled_divide(lay, tiler)) == "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))"
    assert str(cute.flat_divide(lay, tiler)) == "(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))"
    assert str(cute.zipped_divide(L((8, 6)), (4, 3))) == "((4,3),(2,2)):((1,8),(4,24))"


def test_products():
    assert str(cute.logical_product(L((2, 2), (4, 1)), L(6, 1))) == "((2,2),(2,3)):((4,1),(2,8))"
    a, t = L((2, 5), (5, 1)), L((3, 4), (1, 3))
    assert str(cute.blocked_product(a, t)) == "((2,3),(5,4)):((5,10),(1,30))"
    assert str(cute.raked_product(a, t)) == "((3,2),(4,5)):((10,5),(30,1))"
    assert str(cute.zipped_product(a, t)) == "((2,5),(3,4)):((5,1),(10,30))"
    assert str(cute.tiled_product(a, t)) == "((2,5),3,4):((5,1),10,30)"
    assert str(cute.flat_product(a, t)) == "(2,5,3,4):(5,1,10,30)"


def test_make_layout_tv():
    tiler, tv = cute.make_layout_tv(L((2, 3), (3, 1)), L((2, 2), (2, 1)))
    assert tiler == (4, 6)
    assert str(tv) == "((3,2),(2,2)):((8,2),(4,1))"


def test_tile_to_shape_covers_target():
    atom = L((8, 8), (8, 1))
    r = cute.tile_to_shape(atom, (32, 32), (0, 1))
    assert cute.product_each(r.shape) == (32, 32)
    assert sorted(values(r)) == list(range(1024))
    for m, n in itertools.product(range(8), range(8)):
        assert r((m, n)) == atom((m, n))


def test_recast_layout():
    assert str(cute.recast_layout(16, 8, L((4, 8), (1, 4)))) == "(2,8):(1,2)"
    assert str(cute.recast_layout(8, 16, L((2, 8), (1, 2)))) == "(4,8):(1,4)"


def test_max_common():
    a = L((4, 8), (1, 4))
    assert cute.max_common_vector(a, a) == 32
    assert str(cute.max_common_layout(a, a)) == "32:1"
    assert cute.max_common_vector(a, L((4, 8), (8, 1))) == 1


def test_swizzle_and_composed_layout():
    sw = cute.make_swizzle(3, 4, 3)
    assert str(sw) == "S<3,4,3>"
    assert isinstance(sw, cute.Swizzle)
    assert (sw.num_bits, sw.num_base, sw.num_shift) == (3, 4, 3)
    assert str(cute.make_swizzle(0, 2, 2)) == "S<0,4,3>"
    cl = cute.make_composed_layout(sw, 0, L((8, 64), (64, 1)))
    assert str(cl) == "S<3,4,3> o 0 o (8,64):(64,1)"
    assert str(cl.type) == '!cute.composed_layout<"S<3,4,3> o 0 o (8,64):(64,1)">'
    assert cl.shape == (8, 64)
    assert isinstance(cl, cute.ComposedLayout)
    # S<3,4,3>: bits [7,10) xor-ed into bits [4,7)
    for i in (0, 1, 64, 128, 200, 511):
        off = (i % 8) * 64 + i // 8
        assert cl(i) == off ^ ((off >> 3) & 0x70)


def test_append_and_prepend_a_mode_to_a_composed_layout():
    # The new mode joins the outer layout, so its offsets pass through the swizzle as well
    # (fmha.py pads a swizzled staged smem layout's stage stride this way).
    sw = cute.make_swizzle(3, 4, 3)
    cl = cute.make_composed_layout(sw, 0, L((8, 64), (64, 1)))
    staged = cute.append(cl, L(3, 1024))
    assert str(staged) == "S<3,4,3> o 0 o (8,64,3):(64,1,1024)"
    front = cute.prepend(cl, L(2, 4096))
    assert str(front) == "S<3,4,3> o 0 o (2,8,64):(4096,64,1)"
    swizzled = lambda off: off ^ ((off >> 3) & 0x70)
    for r, c, s in itertools.product((0, 3, 7), (0, 9, 63), (0, 2)):
        assert staged((r, c, s)) == swizzled(r * 64 + c + s * 1024)
        assert front((s, r, c)) == swizzled(r * 64 + c + s * 4096)


def test_scaled_basis():
    e0 = cute.E(0)
    assert str(e0) == "1@0"
    assert str(3 * cute.E(1)) == "3@1"
    assert str(cute.E([0, 2])) == "1@2@0"  # path 0 -> 2, printed innermost-first
    assert cute.ScaledBasis(2, 1) == 2 * cute.E(1)


# ---- the same inside @jit ---------------------------------------------------------------------

def test_static_algebra_inside_jit(capfd):
    @cute.jit
    def f():
        a = cute.make_layout((6, 2), stride=(8, 2))
        b = cute.make_layout((4, 3), stride=(3, 1))
        r = cute.composition(a, b)
        print(r, cute.size(r), cute.cosize(r), r(5))
        print(cute.zipped_divide(cute.make_layout((8, 6)), (4, 3)))
        print(cute.coalesce(r), cute.complement(cute.make_layout(4, stride=2), 24))
        tiler, tv = cute.make_layout_tv(cute.make_layout((2, 3), stride=(3, 1)),
                                        cute.make_layout((2, 2), stride=(2, 1)))
        print(tiler, tv)

    f()
    assert capfd.readouterr().out == ("((2,2),3):((24,2),8) 12 43 32\n"
                                      "((4,3),(2,2)):((1,8),(4,24))\n"
                                      "(2,2,3):(24,2,8) (2,3):(1,8)\n"
                                      "(4, 6) ((3,2),(2,2)):((8,2),(4,1))\n")


# Every plain-Python test above, run again inside a @cute.jit trace: static layouts fold the
# same way there (results are ints, tuples and static layouts; no IR).
_PLAIN_TESTS = sorted(n for n, f in list(globals().items())
                      if n.startswith("test_") and callable(f) and f.__code__.co_argcount == 0)


@pytest.mark.parametrize("name", _PLAIN_TESTS)
def test_same_inside_jit(name):
    body = globals()[name]

    @cute.jit
    def traced():
        body()

    compiled = cute.compile(traced)
    assert "= add" not in compiled.__mlir__ and "= mul" not in compiled.__mlir__


def test_zipped_divide_by_a_nested_tiler_zips_the_sub_modes():
    # CuTe's zip2_by: a by-mode tiler of a nested mode tiles each sub-mode; the tile gathers the
    # sub-modes' tiles and the rest their rests (the Blackwell tutorials' epilogue sub-tiles).
    acc = cute.make_layout(((128, 256), 1, 1), stride=((65536, 1), 0, 0))
    epi = cute.zipped_divide(acc, ((128, 64),))
    assert str(epi) == "(((128,64)),((1,4),1,1)):(((65536,1)),((0,64),0,0))"
