"""Errors of the layout algebra surface as the DSL's error class (a DSLRuntimeError, also a
ValueError), name the function and its layouts, and point at the user's line."""
import os

import pytest

import cutlass
import cutlass.cute as cute

HERE = os.path.abspath(__file__)


def _check(excinfo, *words):
    err = excinfo.value
    assert isinstance(err, cutlass.DSLRuntimeError)
    assert isinstance(err, ValueError)
    assert err.code == "LAYOUT_ALGEBRA"
    assert os.path.abspath(err.filename) == HERE
    text = str(err)
    for w in words:
        assert w in text, (w, text)


def test_incongruent_shape_and_stride():
    with pytest.raises(cute.LayoutError) as e:
        cute.make_layout((4, 8), stride=(1,))
    _check(e, "make_layout", "shape and stride must be congruent", "(4,8)")


def test_rank_mismatch_names_the_called_function():
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.zipped_divide(cute.make_layout((4, 8)), (2, 2, 2))
    _check(e, "zipped_divide", "(4,8):(1,4)", "rank")


def test_mode_out_of_range():
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.select(cute.make_layout((4, 8)), mode=[0, 3])
    _check(e, "select", "out of range")
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.group_modes(cute.make_layout((4, 8)), 1, 1)
    _check(e, "group_modes")


def test_not_divisible():
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.tile_to_shape(cute.make_layout((8, 8)), (12, 16), (0, 1))
    _check(e, "tile_to_shape", "divisible", "(12,16)")


def test_coordinate_mismatch():
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.crd2idx((1, 2, 3), cute.make_layout((4, 8)))
    _check(e, "crd2idx", "(1,2,3)")


def test_bad_swizzle():
    with pytest.raises(cutlass.DSLRuntimeError) as e:
        cute.make_swizzle(3, 4, 2)
    _check(e, "make_swizzle", "S<3,4,2>")


def test_dynamic_where_static_is_required():
    errors = {}

    @cute.jit
    def f(m: cutlass.Int32):
        lay = cute.make_layout((m, 8))
        for name, fn in (("complement", lambda: cute.complement(lay, 1024)),
                         ("right_inverse", lambda: cute.right_inverse(lay)),
                         ("left_inverse", lambda: cute.left_inverse(lay)),
                         ("logical_product", lambda: cute.logical_product(lay, cute.make_layout(4)))):
            try:
                fn()
            except cutlass.DSLRuntimeError as err:
                errors[name] = err

    f(3)
    assert sorted(errors) == ["complement", "left_inverse", "logical_product", "right_inverse"]
    for name, err in errors.items():
        text = str(err)
        assert text.lstrip().startswith(f"error[LAYOUT_ALGEBRA]: {name}:"), text
        assert "(?,8):(1,?)" in text and "static" in text
        assert os.path.abspath(err.filename) == HERE


def test_wrong_argument_types():
    with pytest.raises(TypeError, match="right_inverse"):
        cute.right_inverse((4, 8))
    with pytest.raises(TypeError, match="coalesce"):
        cute.coalesce((2, 3))
    with pytest.raises(TypeError, match="expected an int, a DSL integer or a tuple of them, got float"):
        cute.make_layout((4, 2.5))


def test_non_integer_leaf():
    with pytest.raises(TypeError, match="integer"):
        cute.make_layout((4, cutlass.Float32(2.0)))


def test_an_object_of_another_type_deep_in_a_binding_is_a_type_error_at_the_users_line():
    # cute.rank's mode reaches the C++ core unchecked; the core's failed conversion used to
    # surface as "RuntimeError: std::bad_cast".
    @cute.jit
    def rank_with_a_bad_mode():
        cute.rank(cute.make_layout((2, 3)), mode=object())

    with pytest.raises(TypeError) as e:
        rank_with_a_bad_mode()
    assert isinstance(e.value, cutlass.DSLRuntimeError) and e.value.code == "TYPE_MISMATCH"
    assert "received an object of another type than it takes" in str(e.value)
    assert os.path.abspath(e.value.filename) == HERE
