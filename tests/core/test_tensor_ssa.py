"""cute.TensorSSA: static values against numpy, dynamic values in a host @jit function and in a
kernel on the CPU emulator, the notebook's documented values, and every error message.

TensorSSA elements are in colexicographic order (mode 0 fastest), which is numpy's order="F".
"""
import operator

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._dsl.errors import DSLUserCodeError
from cutlass.cute.tensor_ssa import TensorSSAError

F32, I32 = cutlass.Float32, cutlass.Int32


def ssa(a, dtype):
    a = np.asarray(a)
    return cute.TensorSSA._from_values(a.shape, dtype, a.flatten(order="F").tolist())


def arr(v):
    return np.array([x.value for x in v._values()]).reshape(v.shape, order="F")


# ---- static values -------------------------------------------------------------------------------

FLOAT_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
             operator.pow]


@pytest.mark.parametrize("op", FLOAT_OPS, ids=lambda o: o.__name__)
def test_float_arithmetic_matches_numpy(op):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    r = op(ssa(a, F32), ssa(b, F32))
    assert r.dtype is F32 and r.shape == (3, 4)
    np.testing.assert_allclose(arr(r), op(a, b), rtol=2e-6)


INT_OPS = [operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.and_,
           operator.or_, operator.xor, operator.lshift, operator.rshift]


@pytest.mark.parametrize("op", INT_OPS, ids=lambda o: o.__name__)
def test_int_arithmetic_matches_numpy(op):
    a = np.array([[7, -9, 12], [5, 0, -3]], dtype=np.int32)
    b = np.array([[2, 4, 5], [3, 1, 2]], dtype=np.int32)
    r = op(ssa(a, I32), ssa(b, I32))
    assert r.dtype is I32
    np.testing.assert_array_equal(arr(r), op(a, b))


@pytest.mark.parametrize("op", [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge],
                         ids=lambda o: o.__name__)
def test_comparisons_give_boolean(op):
    a = np.array([1, 2, 3], dtype=np.float32)
    b = np.array([2, 2, 1], dtype=np.float32)
    r = op(ssa(a, F32), ssa(b, F32))
    assert r.dtype is cutlass.Boolean
    np.testing.assert_array_equal(arr(r), op(a, b))


def test_scalars_on_either_side():
    a = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    v = ssa(a, F32)
    np.testing.assert_array_equal(arr(10 - v), 10 - a)
    np.testing.assert_array_equal(arr(v / 2), a / 2)
    np.testing.assert_array_equal(arr(2.0 ** v), 2.0 ** a)
    np.testing.assert_array_equal(arr(F32(3) * v), 3 * a)   # a DSL scalar on the left defers to TensorSSA
    np.testing.assert_array_equal(arr(I32(2) < v), 2 < a)
    np.testing.assert_array_equal(arr(v >= 2), a >= 2)


def test_unary_operators():
    a = np.array([-1.5, 0.0, 2.5], dtype=np.float32)
    np.testing.assert_array_equal(arr(-ssa(a, F32)), -a)
    np.testing.assert_array_equal(arr(abs(ssa(a, F32))), np.abs(a))
    i = np.array([0, 5, -3], dtype=np.int32)
    np.testing.assert_array_equal(arr(~ssa(i, I32)), ~i)
    b = np.array([True, False])
    np.testing.assert_array_equal(arr(~ssa(b, cutlass.Boolean)), ~b)


def test_promotion():
    i = ssa(np.array([1, 2], dtype=np.int32), I32)
    h = ssa(np.array([0.5, 0.25], dtype=np.float16), cutlass.Float16)
    assert (i + h).dtype is F32          # Int32 + Float16 -> Float32 (the float of the wider width)
    assert (h + 1.0).dtype is cutlass.Float16   # a Python float takes the element type (test_python_literals)
    assert (h + F32(1.0)).dtype is F32
    assert (h + h).dtype is cutlass.Float16
    assert (i / 2).dtype is F32          # / on integers gives Float32
    assert (i + cutlass.Uint32(1)).dtype is cutlass.Uint32
    assert (i + cutlass.Int8(1)).dtype is I32
    assert (i + cutlass.Int64(1)).dtype is cutlass.Int64
    np.testing.assert_array_equal(arr(i + h), [1.5, 2.25])


def test_boolean_sum_stays_boolean():
    a = ssa(np.array([True, True, False]), cutlass.Boolean)
    b = ssa(np.array([True, False, False]), cutlass.Boolean)
    s = a + b                            # computed in Int32, then tested != 0
    assert s.dtype is cutlass.Boolean
    np.testing.assert_array_equal(arr(s), [True, True, False])
    np.testing.assert_array_equal(arr(a & b), [True, False, False])
    assert (a * b).dtype is I32


def test_to_converts_each_element():
    a = np.array([-1.7, 2.5, 3.99], dtype=np.float32)
    np.testing.assert_array_equal(arr(ssa(a, F32).to(I32)), a.astype(np.int32))   # truncation
    i = np.array([3, -4], dtype=np.int32)
    r = ssa(i, I32).to(cutlass.Float64)
    assert r.dtype is cutlass.Float64
    np.testing.assert_array_equal(arr(r), i.astype(np.float64))
    np.testing.assert_array_equal(arr(ssa(np.array([300, -1]), I32).to(cutlass.Uint8)), [44, 255])


def test_broadcasting_mode_by_mode():
    # The notebook's example: a (1,3) row plus a (4,1) column.
    row = np.array([[0.0, 1.0, 2.0]], dtype=np.float32)
    col = np.array([[0.0], [1.0], [2.0], [3.0]], dtype=np.float32)
    r = ssa(row, F32) + ssa(col, F32)
    assert r.shape == (4, 3)
    np.testing.assert_array_equal(arr(r), row + col)
    b = ssa(row, F32).broadcast_to((4, 3))
    assert b.shape == (4, 3)
    np.testing.assert_array_equal(arr(b), np.broadcast_to(row, (4, 3)))


def test_broadcasting_pads_on_the_right():
    # Shapes are padded with trailing 1s (CuTe's append), so (3,) meets (3,4) as (3,1).
    v = np.array([1, 2, 3], dtype=np.int32)
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    r = ssa(v, I32) * ssa(m, I32)
    assert r.shape == (3, 4)
    np.testing.assert_array_equal(arr(r), v[:, None] * m)


def test_broadcasting_nested_modes():
    t = cute.full(((2, 2), 1), 1, I32) + cute.TensorSSA._from_values((1, 3), I32, [10, 20, 30])
    assert t.shape == ((2, 2), 3)
    np.testing.assert_array_equal([x.value for x in t._values()], [11] * 4 + [21] * 4 + [31] * 4)


def test_full_and_likes():
    f = cute.full((2, 3), 7, I32)
    assert f.shape == (2, 3) and f.dtype is I32
    np.testing.assert_array_equal(arr(f), np.full((2, 3), 7))
    g = cute.full((4,), 2.5, cutlass.Float64)
    assert g.dtype is cutlass.Float64 and arr(g).tolist() == [2.5] * 4
    like = cute.full_like(f, 1.5)                      # dtype defaults to f's: 1.5 -> Int32 1
    assert like.dtype is I32 and arr(like).tolist() == [[1] * 3] * 2
    z = cute.zeros_like(f, F32)
    assert z.dtype is F32 and not arr(z).any()
    assert arr(cute.ones_like(f)).tolist() == [[1] * 3] * 2
    assert not arr(cute.empty_like(f)).any()           # empty_like is zero-filled


def test_where():
    a = np.array([-1.0, 2.0, -3.0, 4.0], dtype=np.float32)
    v = ssa(a, F32)
    np.testing.assert_array_equal(arr(cute.where(v > 0, v, cute.full_like(v, 0))), np.where(a > 0, a, 0))
    np.testing.assert_array_equal(arr(cute.where(v > 0, 1.0, v)), np.where(a > 0, 1.0, a))
    cond = ssa(np.array([[True], [False]]), cutlass.Boolean)       # broadcast among cond, x and y
    r = cute.where(cond, cute.full((1, 3), 1, I32), cute.full((2, 3), 2, I32))
    np.testing.assert_array_equal(arr(r), [[1, 1, 1], [2, 2, 2]])


def test_where_in_a_dsl_user_op():
    # elementwise_apply's leaky_relu (a @cutlass.dsl_user_op there) passes loc/ip along.
    def leaky_relu(x, alpha, *, loc=None, ip=None):
        return cute.where(x > 0, x, alpha * x, loc=loc, ip=ip)

    a = np.array([-2.0, 3.0], dtype=np.float32)
    np.testing.assert_allclose(arr(leaky_relu(ssa(a, F32), 0.01)), np.where(a > 0, a, np.float32(0.01) * a))


def test_math_elementwise_matches_numpy():
    a = np.array([[0.25, 1.0], [2.0, 4.0]], dtype=np.float32)
    v = ssa(a, F32)
    for name, ref in [("sqrt", np.sqrt), ("sin", np.sin), ("exp2", np.exp2), ("exp", np.exp), ("log", np.log),
                      ("tanh", np.tanh), ("rsqrt", lambda x: 1 / np.sqrt(x))]:
        r = getattr(cute.math, name)(v)
        assert isinstance(r, cute.TensorSSA) and r.shape == (2, 2)
        np.testing.assert_allclose(arr(r), ref(a.astype(np.float64)), rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(arr(cute.math.atan2(v, 2.0)), np.arctan2(a, 2.0), rtol=1e-6)
    assert cute.erf is cute.math.erf                     # cute.math is also exported on cute


def test_notebook_unary_values():
    v = ssa(np.array([4.0, 4.0, 4.0], dtype=np.float32), F32)
    assert [f"{x.value:.6f}" for x in cute.math.sqrt(v)._values()] == ["2.000000"] * 3
    assert [f"{x.value:.6f}" for x in cute.math.sin(v)._values()] == ["-0.756802"] * 3
    assert [f"{x.value:.6f}" for x in cute.math.exp2(v)._values()] == ["16.000000"] * 3


def test_notebook_reductions():
    v = ssa(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32), F32)
    total = v.reduce(cute.ReductionOp.ADD, 0.0, reduction_profile=0)
    assert isinstance(total, F32) and total.value == 21.0
    rows = v.reduce(cute.ReductionOp.ADD, 0.0, reduction_profile=(None, 1))
    assert rows.shape == (2,) and arr(rows).tolist() == [6.0, 15.0]
    cols = v.reduce(cute.ReductionOp.ADD, 1.0, reduction_profile=(1, None))
    assert cols.shape == (3,) and arr(cols).tolist() == [6.0, 8.0, 10.0]


@pytest.mark.parametrize("op,ref", [(cute.ReductionOp.ADD, np.sum), (cute.ReductionOp.MUL, np.prod),
                                    (cute.ReductionOp.MAX, np.max), (cute.ReductionOp.MIN, np.min)],
                         ids=lambda x: getattr(x, "name", ""))
def test_reduce_ops_match_numpy(op, ref):
    a = np.array([[3, -1, 4], [1, -5, 9], [2, 6, -5], [3, 5, 2]], dtype=np.int32)
    init = {"ADD": 0, "MUL": 1, "MAX": -100, "MIN": 100}[op.name]
    v = ssa(a, I32)
    assert v.reduce(op, init, 0).value == ref(a)
    np.testing.assert_array_equal(arr(v.reduce(op, init, (None, 1))), ref(a, axis=1))
    np.testing.assert_array_equal(arr(v.reduce(op, init, (1, None))), ref(a, axis=0))
    same = v.reduce(op, init, None)                     # None reduces nothing
    assert same.shape == v.shape and (arr(same) == a).all()


def test_any_all():
    assert cute.any_(ssa(np.array([0, 0, 3]), I32)).value is True
    assert cute.any_(ssa(np.array([0, 0]), I32)).value is False
    assert cute.all_(ssa(np.array([1, 2]), I32)).value is True
    assert cute.all_(ssa(np.array([1.0, 0.0]), F32)).value is False


def test_indexing_and_slicing_notebook():
    # The notebook loads np.arange(24).reshape(4,2,3): v[10] gives 10.0 and
    # v[(None, 1, None)] the (4,3) slice a[:, 1, :].
    a = np.arange(24).reshape(4, 2, 3).astype(np.float32)
    v = ssa(a, F32)
    assert v[10].value == 10.0 and v[23].value == 23.0     # an integer index counts row-major
    assert v[(3, 1, 2)].value == a[3, 1, 2]
    nested = cute.TensorSSA._from_values((4, (2, 3)), F32, [x.value for x in v._values()])
    assert nested[(1, 4)].value == a[1, 0, 2]              # 4 indexes the (2,3) mode colexicographically
    s = v[(None, 1, None)]
    assert isinstance(s, cute.TensorSSA) and s.shape == (4, 3)
    np.testing.assert_array_equal(arr(s), a[:, 1, :])
    np.testing.assert_array_equal(arr(v[(2, None, None)]), a[2])
    assert v[None].shape == v.shape and (arr(v[None]) == a).all()


def test_str_shape_and_type():
    v = cute.full((3, 4), 0.0, F32)
    assert str(v) == "tensor_value<vector<12xf32> o (3, 4)>"
    assert f"{v[(None, 0)]}" == "tensor_value<vector<3xf32> o (3,)>"
    assert v.type == "vector<12xf32>"
    assert v.element_type is F32 and v.dtype is F32
    assert len(v) == 12
    assert str(cute.full((2,), True, cutlass.Boolean)) == "tensor_value<vector<2xi1> o (2,)>"
    assert isinstance(v, cute.TensorSSA)


def test_values_interface_round_trip():
    vals = [I32(3), 4, 5.9, cutlass.Int8(-1)]
    v = cute.TensorSSA._from_values((2, 2), I32, vals)
    out = v._values()
    assert all(type(x) is I32 for x in out)
    assert [x.value for x in out] == [3, 4, 5, -1]        # converted to the element type


# ---- dynamic values: host @jit ---------------------------------------------------------------

@cute.jit
def _dynamic_arith(x: cutlass.Float32, y: cutlass.Float32):
    a = cute.full((2, 3), x, cutlass.Float32)
    b = cute.TensorSSA._from_values((2, 3), cutlass.Float32, [y, 1.0, 2.0, 3.0, 4.0, 5.0])
    c = a * b + 1.0
    r = cute.where(c > 4.0, c, cute.full_like(c, -1.0))
    rows = r.reduce(cute.ReductionOp.ADD, 0.0, (None, 1))
    return tuple(r._values()) + tuple(rows._values()) + (r.reduce(cute.ReductionOp.MAX, -1e9, 0),)


@pytest.mark.parametrize("x,y", [(2.0, 5.0), (0.5, -3.0), (-1.0, 0.0)])
def test_dynamic_values_in_host_jit(x, y):
    b = np.array([y, 1, 2, 3, 4, 5], dtype=np.float32).reshape((2, 3), order="F")
    c = np.float32(x) * b + np.float32(1)
    r = np.where(c > 4, c, -1).astype(np.float32)
    out = _dynamic_arith(x, y)
    np.testing.assert_allclose(out[:6], r.flatten(order="F"), rtol=1e-6)
    np.testing.assert_allclose(out[6:8], r.sum(axis=1), rtol=1e-6)
    assert out[8] == pytest.approx(r.max())


def test_dynamic_printf(capfd):
    @cute.jit
    def show(x: cutlass.Float32):
        v = cute.full((3,), x, cutlass.Float32) * cute.TensorSSA._from_values((3,), cutlass.Float32, [1, 2, 3])
        cute.printf("{} {} {}", v[0], v[1], v[2])
        cute.printf("{}", cute.math.sqrt(v).reduce(cute.ReductionOp.ADD, 0.0, 0))

    show(4.0)
    lines = capfd.readouterr().out.split("\n")
    assert lines[0] == "4.000000 8.000000 12.000000"
    assert float(lines[1]) == pytest.approx(2 + np.sqrt(8) + np.sqrt(12), rel=1e-6)


def test_static_elements_stay_static_in_a_trace():
    seen = {}

    @cute.jit
    def trace(x: cutlass.Float32):
        v = cute.TensorSSA._from_values((2,), cutlass.Float32, [x, 3.0]) * 2.0
        seen["static"] = [e.is_static() for e in v._values()]
        seen["folded"] = v[1].value

    trace(1.0)
    assert seen == {"static": [False, True], "folded": 6.0}


@cute.jit
def _dynamic_index(i: cutlass.Int32, j: cutlass.Int32):
    v = cute.TensorSSA._from_values((2, 3), cutlass.Int32, [10, 11, 12, 13, 14, 15])
    return v[i], v[(i % 2, j)]


@pytest.mark.parametrize("i,j", [(0, 0), (1, 2), (4, 1), (5, 2)])
def test_dynamic_index_selects_at_run_time(i, j):
    a = np.array([10, 11, 12, 13, 14, 15]).reshape((2, 3), order="F")
    flat_row_major = a.flatten()
    assert _dynamic_index(i, j) == (flat_row_major[i], a[i % 2, j])


# ---- a kernel on the CPU emulator -----------------------------------------------------------

ROWS = 32


@cute.kernel
def _rows_kernel(a: cute.Tensor, out: cute.Tensor, row_sums: cute.Tensor, totals: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    v = cute.TensorSSA._from_values((2, 3), cutlass.Float32, [a[t, k] for k in cutlass.range_constexpr(6)])
    r = cute.where(v > 0.0, v * 2.0, cute.math.exp(v))
    for k in cutlass.range_constexpr(6):
        out[t, k] = r[(k % 2, k // 2)]
    s = r.reduce(cute.ReductionOp.ADD, 0.0, (None, 1))
    row_sums[t, 0] = s[0]
    row_sums[t, 1] = s[1]
    totals[t] = r.reduce(cute.ReductionOp.MAX, -1.0e30, 0)


@cute.jit
def _rows_host(a: cute.Tensor, out: cute.Tensor, row_sums: cute.Tensor, totals: cute.Tensor):
    _rows_kernel(a, out, row_sums, totals).launch(grid=(1, 1, 1), block=(ROWS, 1, 1))


def test_kernel_on_the_emulator():
    a = np.random.default_rng(7).uniform(-2, 2, (ROWS, 6)).astype(np.float32)
    out = np.zeros_like(a)
    row_sums = np.zeros((ROWS, 2), dtype=np.float32)
    totals = np.zeros(ROWS, dtype=np.float32)
    compiled = cute.compile(_rows_host, a, out, row_sums, totals, options="--target cpu")
    compiled(a, out, row_sums, totals)
    ref = np.where(a > 0, a * 2, np.exp(a.astype(np.float64)))
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    v = ref.reshape(ROWS, 3, 2).transpose(0, 2, 1)     # per row: element (i,j) = a[t, i + 2j]
    np.testing.assert_allclose(row_sums, v.sum(axis=2), rtol=1e-5)
    np.testing.assert_allclose(totals, ref.max(axis=1), rtol=1e-6)


# ---- errors ----------------------------------------------------------------------------------

def _located_here(excinfo):
    assert excinfo.value.filename == __file__


def test_error_incompatible_broadcast_names_both_shapes():
    with pytest.raises(ValueError, match=r"cannot broadcast shapes \(3, 4\) and \(2, 4\)") as e:
        cute.full((3, 4), 1.0, F32) + cute.full((2, 4), 1.0, F32)
    assert isinstance(e.value, TensorSSAError) and isinstance(e.value, DSLUserCodeError)
    _located_here(e)


def test_error_broadcast_to():
    with pytest.raises(TensorSSAError, match=r"cannot broadcast a TensorSSA of shape \(2, 3\) to \(1, 3\)") as e:
        cute.full((2, 3), 1.0, F32).broadcast_to((1, 3))
    _located_here(e)


def test_error_where_dtypes_differ():
    v = cute.full((4,), 1.0, F32)
    with pytest.raises(ValueError, match="where: x and y must have the same dtype, got Float32 and Int32") as e:
        cute.where(v > 0, v, 0)          # the int 0 is an Int32: the DSL requires full_like here
    _located_here(e)


def test_error_where_cond_not_boolean():
    v = cute.full((4,), 1.0, F32)
    with pytest.raises(ValueError, match="where: cond must be Boolean, got Float32"):
        cute.where(v, v, v)


def test_error_where_needs_a_tensor():
    with pytest.raises(ValueError, match="where: x or y must be a TensorSSA"):
        cute.where(cutlass.Boolean(True), 1.0, 2.0)


def test_error_where_non_numeric_operand():
    v = cute.full((4,), 1.0, F32)
    with pytest.raises(TypeError, match="where: expected a TensorSSA or a numeric scalar, got str"):
        cute.where(v > 0, v, "0")


def test_error_reduction_profile_mismatch():
    v = cute.full((2, 3), 1.0, F32)
    with pytest.raises(ValueError, match=r"reduction_profile \(None, 1, 1\) does not match the TensorSSA shape "
                                         r"\(2, 3\)") as e:
        v.reduce(cute.ReductionOp.ADD, 0.0, (None, 1, 1))
    _located_here(e)


def test_error_reduction_op():
    with pytest.raises(ValueError, match="op must be a cute.ReductionOp"):
        cute.full((2,), 1.0, F32).reduce("add", 0.0, 0)


def test_error_index_out_of_range():
    v = cute.full((3, 4), 1.0, F32)
    with pytest.raises(ValueError, match=r"index 12 is out of range for the TensorSSA shape \(3, 4\)") as e:
        v[12]
    _located_here(e)
    with pytest.raises(ValueError, match=r"coordinate \(3, 0\) is out of range for the TensorSSA shape \(3, 4\)"):
        v[(3, 0)]
    with pytest.raises(ValueError, match=r"coordinate \(0, 0, 0\) does not match the TensorSSA shape \(3, 4\)"):
        v[(0, 0, 0)]


def test_error_float_index():
    with pytest.raises(TypeError, match="TensorSSA shapes and indices are integers"):
        cute.full((3,), 1.0, F32)[F32(1.0)]


def test_error_slice_needs_static_coordinates():
    @cute.jit
    def bad(i: cutlass.Int32):
        v = cute.full((2, 3), 1.0, cutlass.Float32)
        v[(None, i)]

    with pytest.raises(ValueError, match=r"slicing a TensorSSA needs static coordinates, got \(None, \?\)") as e:
        bad(1)
    _located_here(e)


def test_error_dynamic_shape():
    @cute.jit
    def bad(n: cutlass.Int32):
        cute.full((n, 2), 1.0, cutlass.Float32)

    with pytest.raises(ValueError, match=r"a TensorSSA needs a static shape, got \(\?, 2\)"):
        bad(3)


def test_tensor_reassigned_in_dynamic_loop(capfd):
    # A TensorSSA is loop-carried (every element an IR value); see test_carried_values.py.
    @cute.jit
    def good(n: cutlass.Int32):
        v = cute.full((2,), 1.0, cutlass.Float32)
        for _ in range(n):
            v = v + 1.0
        cute.printf("{} {}", v[0], v[1])

    good(3)
    assert capfd.readouterr().out.split() == ["4.000000", "4.000000"]


def test_error_bad_shapes_and_counts():
    with pytest.raises(ValueError, match=r"a TensorSSA of shape \(2, 3\) holds 6 elements, got 5 values"):
        cute.TensorSSA._from_values((2, 3), F32, [0.0] * 5)
    with pytest.raises(ValueError, match=r"TensorSSA extents must be positive, got shape \(2, 0\)"):
        cute.full((2, 0), 1.0, F32)
    with pytest.raises(TypeError, match="expected an int, a DSL integer, None or a tuple of them, got float"):
        cute.full((2.0, 3), 1.0, F32)


def test_error_bitwise_on_floats():
    v = cute.full((2,), 1.0, F32)
    with pytest.raises(DSLUserCodeError, match="bitwise operators need integer operands"):
        v & v


def test_error_to_non_numeric_type():
    with pytest.raises(TypeError, match="TensorSSA.to expects a DSL numeric type"):
        cute.full((2,), 1.0, F32).to(float)


def test_error_truth_value():
    v = cute.full((2,), 1.0, F32)
    with pytest.raises(DSLUserCodeError, match="a TensorSSA has no truth value"):
        bool(v > 0)


def test_error_math_and_any_operands():
    with pytest.raises(TypeError, match="cute.math.atan2: expected a TensorSSA or a numeric scalar, got list"):
        cute.math.atan2(cute.full((2,), 1.0, F32), [1.0])
    with pytest.raises(TypeError, match="cute.any_ expects a TensorSSA, got int"):
        cute.any_(3)
    with pytest.raises(TypeError, match="cute.all_ expects a TensorSSA, got int"):
        cute.all_(3)


def test_error_unsupported_operand_type():
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'TensorSSA' and 'str'"):
        cute.full((2,), 1.0, F32) + "x"


def test_reshape_reads_the_elements_in_colexicographic_order_as_the_new_shape():
    # NVIDIA's mixed-input decode reshapes a converted K fragment to the tensor-memory store's shape.
    seen = {}

    @cute.jit
    def f():
        t = cute.TensorSSA([cutlass.Float32(i) for i in range(12)], (3, 4), cutlass.Float32)
        r = t.reshape((2, (2, 3)))
        seen["shape"] = r.shape
        seen["values"] = [r[(i, (j, k))] for k in range(3) for j in range(2) for i in range(2)]
        with pytest.raises(TensorSSAError,
                           match="cannot reshape a TensorSSA of shape \\(3, 4\\) \\(12 elements\\) to \\(5,\\)"):
            t.reshape((5,))

    f()
    assert seen["shape"] == (2, (2, 3))
    assert [float(v) for v in seen["values"]] == [float(i) for i in range(12)]


def test_modes_of_one_size_nested_differently_pair_their_elements_in_order():
    # NVIDIA's mixed-input decode multiplies a K fragment of shape ((4, 4), 2) by scales of shape
    # ((4, (2, 2)), 2): the elements pair colexicographically; the first operand's shape is kept.
    seen = {}

    @cute.jit
    def f():
        a = cute.TensorSSA([cutlass.Float32(i) for i in range(32)], ((4, 4), 2), cutlass.Float32)
        b = cute.TensorSSA([cutlass.Float32(100 * i) for i in range(32)], ((4, (2, 2)), 2), cutlass.Float32)
        r = a + b
        seen["shape"] = r.shape
        seen["values"] = [float(v) for v in r._values()]
        seen["reversed"] = (b * a).shape
        with pytest.raises(TensorSSAError, match="cannot broadcast"):
            a + cute.TensorSSA([cutlass.Float32(0)] * 32, ((2, (2, 4)), 2), cutlass.Float32)  # 4 against 2

    f()
    assert seen["shape"] == ((4, 4), 2) and seen["reversed"] == ((4, (2, 2)), 2)
    assert seen["values"] == [101.0 * i for i in range(32)]
