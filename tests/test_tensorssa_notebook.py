"""The cells of NVIDIA's `tensorssa` notebook (examples/python/CuTeDSL/notebooks, BSD-3), run on
numpy arrays with the same calls; each asserts the output text stored in the notebook.

The notebook imports torch; none of these cells uses it, so the import is left out. The
`cute.print_tensor` calls are left out too (print_tensor is tested on its own): the cells that
made them are checked by the values their tensors hold after the call, which are the values the
notebook printed. Those cells store several results into one tensor in turn, so each result is
checked by running the cell's expression alone (`op` chooses which one).
"""
import operator

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


def test_load_and_store(capfd):
    @cute.jit
    def load_and_store(res: cute.Tensor, a: cute.Tensor, b: cute.Tensor):
        a_vec = a.load()
        print(f"a_vec: {a_vec}")      # prints `a_vec: vector<12xf32> o (3, 4)`
        b_vec = b.load()
        print(f"b_vec: {b_vec}")      # prints `b_vec: vector<12xf32> o (3, 4)`
        res.store(a_vec + b_vec)

    a = np.ones(12).reshape((3, 4)).astype(np.float32)
    b = np.ones(12).reshape((3, 4)).astype(np.float32)
    c = np.zeros(12).reshape((3, 4)).astype(np.float32)
    load_and_store(from_dlpack(c), from_dlpack(a), from_dlpack(b))
    assert capfd.readouterr().out == ("a_vec: tensor_value<vector<12xf32> o (3, 4)>\n"
                                      "b_vec: tensor_value<vector<12xf32> o (3, 4)>\n")
    np.testing.assert_array_equal(c, np.full((3, 4), 2.0, dtype=np.float32))


@cute.jit
def apply_slice(src: cute.Tensor, dst: cute.Tensor, indices: cutlass.Constexpr):
    src_vec = src.load()
    dst_vec = src_vec[indices]
    print(f"{src_vec} -> {dst_vec}")
    if cutlass.const_expr(isinstance(dst_vec, cute.TensorSSA)):
        dst.store(dst_vec)
    else:
        dst[0] = dst_vec


def test_slice_1(capfd):
    src_shape = (4, 2, 3)
    dst_shape = (4, 3)
    indices = (None, 1, None)
    a = np.arange(np.prod(src_shape)).reshape(*src_shape).astype(np.float32)
    dst = np.random.randn(*dst_shape).astype(np.float32)
    apply_slice(from_dlpack(a), from_dlpack(dst), indices)
    assert capfd.readouterr().out == ("tensor_value<vector<24xf32> o (4, 2, 3)> -> "
                                      "tensor_value<vector<12xf32> o (4, 3)>\n")
    np.testing.assert_array_equal(dst, [[3, 4, 5], [9, 10, 11], [15, 16, 17], [21, 22, 23]])


def test_slice_2(capfd):
    src_shape = (4, 2, 3)
    dst_shape = (1,)
    indices = 10
    a = np.arange(np.prod(src_shape)).reshape(*src_shape).astype(np.float32)
    dst = np.random.randn(*dst_shape).astype(np.float32)
    apply_slice(from_dlpack(a), from_dlpack(dst), indices)
    assert capfd.readouterr().out == "tensor_value<vector<24xf32> o (4, 2, 3)> -> ?\n"
    np.testing.assert_array_equal(dst, [10.0])


# The notebook's comments give each result: a = 1, b = c = 2.
BINARY_RESULTS = [(operator.add, 3.0), (operator.sub, -1.0), (operator.mul, 2.0), (operator.truediv, 0.5),
                  (operator.floordiv, 0.0), (operator.mod, 1.0)]


@pytest.mark.parametrize("op,expected", BINARY_RESULTS, ids=lambda x: getattr(x, "__name__", ""))
def test_binary_op_1(op, expected):
    @cute.jit
    def binary_op_1(res: cute.Tensor, a: cute.Tensor, b: cute.Tensor, op: cutlass.Constexpr):
        a_vec = a.load()
        b_vec = b.load()
        res.store(op(a_vec, b_vec))

    a = np.empty((3,), dtype=np.float32)
    a.fill(1.0)
    b = np.empty((3,), dtype=np.float32)
    b.fill(2.0)
    res = np.empty((3,), dtype=np.float32)
    binary_op_1(from_dlpack(res), from_dlpack(a), from_dlpack(b), op)
    np.testing.assert_array_equal(res, [expected] * 3)


@pytest.mark.parametrize("op,expected", BINARY_RESULTS, ids=lambda x: getattr(x, "__name__", ""))
def test_binary_op_2(op, expected):
    @cute.jit
    def binary_op_2(res: cute.Tensor, a: cute.Tensor, c: cutlass.Constexpr, op: cutlass.Constexpr):
        a_vec = a.load()
        res.store(op(a_vec, c))

    a = np.empty((3,), dtype=np.float32)
    a.fill(1.0)
    c = 2.0
    res = np.empty((3,), dtype=np.float32)
    binary_op_2(from_dlpack(res), from_dlpack(a), c, op)
    np.testing.assert_array_equal(res, [expected] * 3)


def test_binary_op_3():
    @cute.jit
    def binary_op_3(res: cute.Tensor, a: cute.Tensor, b: cute.Tensor):
        a_vec = a.load()
        b_vec = b.load()

        gt_res = a_vec > b_vec
        res.store(gt_res)

    a = np.array([1, 2, 3], dtype=np.float32)
    b = np.array([2, 1, 4], dtype=np.float32)
    res = np.empty((3,), dtype=np.bool_)
    binary_op_3(from_dlpack(res), from_dlpack(a), from_dlpack(b))
    assert str(res) == "[False  True False]"


def test_binary_op_4():
    @cute.jit
    def binary_op_4(res: cute.Tensor, a: cute.Tensor, b: cute.Tensor):
        a_vec = a.load()
        b_vec = b.load()

        xor_res = a_vec ^ b_vec
        res.store(xor_res)

    a = np.array([1, 2, 3], dtype=np.int32)
    b = np.array([2, 2, 4], dtype=np.int32)
    res = np.empty((3,), dtype=np.int32)
    binary_op_4(from_dlpack(res), from_dlpack(a), from_dlpack(b))
    assert str(res) == "[3 0 7]"


@pytest.mark.parametrize("fn,expected", [(cute.math.sqrt, "2.000000"), (cute.math.sin, "-0.756802"),
                                         (cute.math.exp2, "16.000000")], ids=lambda x: getattr(x, "__name__", ""))
def test_unary_op_1(fn, expected):
    @cute.jit
    def unary_op_1(res: cute.Tensor, a: cute.Tensor, fn: cutlass.Constexpr):
        a_vec = a.load()
        res.store(fn(a_vec))

    a = np.array([4.0, 4.0, 4.0], dtype=np.float32)
    res = np.empty((3,), dtype=np.float32)
    unary_op_1(from_dlpack(res), from_dlpack(a), fn)
    assert [f"{x:.6f}" for x in res] == [expected] * 3    # print_tensor's %f


def test_reduction_op(capfd):
    @cute.jit
    def reduction_op(a: cute.Tensor):
        a_vec = a.load()
        red_res = a_vec.reduce(
            cute.ReductionOp.ADD,
            0.0,
            reduction_profile=0
        )
        cute.printf(red_res)        # prints 21.000000

        red_res = a_vec.reduce(
            cute.ReductionOp.ADD,
            0.0,
            reduction_profile=(None, 1)
        )
        res = cute.make_fragment(red_res.shape, cutlass.Float32)
        res.store(red_res)

        red_res = a_vec.reduce(
            cute.ReductionOp.ADD,
            1.0,
            reduction_profile=(1, None)
        )
        res = cute.make_fragment(red_res.shape, cutlass.Float32)
        res.store(red_res)

    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    reduction_op(from_dlpack(a))
    assert capfd.readouterr().out == "21.000000\n"


@pytest.mark.parametrize("init,profile,expected", [(0.0, (None, 1), [6.0, 15.0]), (1.0, (1, None), [6.0, 8.0, 10.0])])
def test_reduction_op_profiles(init, profile, expected):
    # The fragments the notebook printed, copied out to a numpy array.
    @cute.jit
    def reduction_op(a: cute.Tensor, out: cute.Tensor, init: cutlass.Constexpr, profile: cutlass.Constexpr):
        a_vec = a.load()
        red_res = a_vec.reduce(cute.ReductionOp.ADD, init, reduction_profile=profile)
        res = cute.make_fragment(red_res.shape, cutlass.Float32)
        res.store(red_res)
        out.store(res.load())

    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    out = np.zeros(len(expected), dtype=np.float32)
    reduction_op(from_dlpack(a), from_dlpack(out), init, profile)
    np.testing.assert_array_equal(out, expected)
