"""The cells of NVIDIA's `tensorssa` notebook (examples/python/CuTeDSL/notebooks, BSD-3), run on
numpy arrays with the same calls; each asserts the output text stored in the notebook (pointer
addresses masked) and the values left in the arrays.

The notebook imports torch; none of these cells uses it, so the import is left out.
"""
import numpy as np

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack
from print_format import printed as _out


def _column(values, space="generic", align=4, layout=None):
    """print_tensor's text for a rank-1 f32 tensor, as the notebook stores it."""
    layout = layout or f"({len(values)}):(1)"
    rows = ",\n".join(f"       [{v}, ]" for v in values)
    return f"tensor(raw_ptr(0x<addr>: f32, {space}, align<{align}>) o {layout}, data=\n{rows})\n"


def test_load_and_store(capfd):
    @cute.jit
    def load_and_store(res: cute.Tensor, a: cute.Tensor, b: cute.Tensor):
        a_vec = a.load()
        print(f"a_vec: {a_vec}")      # prints `a_vec: vector<12xf32> o (3, 4)`
        b_vec = b.load()
        print(f"b_vec: {b_vec}")      # prints `b_vec: vector<12xf32> o (3, 4)`
        res.store(a_vec + b_vec)
        cute.print_tensor(res)

    a = np.ones(12).reshape((3, 4)).astype(np.float32)
    b = np.ones(12).reshape((3, 4)).astype(np.float32)
    c = np.zeros(12).reshape((3, 4)).astype(np.float32)
    load_and_store(from_dlpack(c), from_dlpack(a), from_dlpack(b))
    assert _out(capfd) == (
        "a_vec: tensor_value<vector<12xf32> o (3, 4)>\n"
        "b_vec: tensor_value<vector<12xf32> o (3, 4)>\n"
        "tensor(raw_ptr(0x<addr>: f32, generic, align<4>) o (3,4):(4,1), data=\n"
        "       [[ 2.000000,  2.000000,  2.000000,  2.000000, ],\n"
        "        [ 2.000000,  2.000000,  2.000000,  2.000000, ],\n"
        "        [ 2.000000,  2.000000,  2.000000,  2.000000, ]])\n")
    np.testing.assert_array_equal(c, np.full((3, 4), 2.0, dtype=np.float32))


@cute.jit
def apply_slice(src: cute.Tensor, dst: cute.Tensor, indices: cutlass.Constexpr):
    src_vec = src.load()
    dst_vec = src_vec[indices]
    print(f"{src_vec} -> {dst_vec}")
    if cutlass.const_expr(isinstance(dst_vec, cute.TensorSSA)):
        dst.store(dst_vec)
        cute.print_tensor(dst)
    else:
        dst[0] = dst_vec
        cute.print_tensor(dst)


def test_slice_1(capfd):
    src_shape = (4, 2, 3)
    dst_shape = (4, 3)
    indices = (None, 1, None)
    a = np.arange(np.prod(src_shape)).reshape(*src_shape).astype(np.float32)
    dst = np.random.randn(*dst_shape).astype(np.float32)
    apply_slice(from_dlpack(a), from_dlpack(dst), indices)
    assert _out(capfd) == (
        "tensor_value<vector<24xf32> o (4, 2, 3)> -> tensor_value<vector<12xf32> o (4, 3)>\n"
        "tensor(raw_ptr(0x<addr>: f32, generic, align<4>) o (4,3):(3,1), data=\n"
        "       [[ 3.000000,  4.000000,  5.000000, ],\n"
        "        [ 9.000000,  10.000000,  11.000000, ],\n"
        "        [ 15.000000,  16.000000,  17.000000, ],\n"
        "        [ 21.000000,  22.000000,  23.000000, ]])\n")
    np.testing.assert_array_equal(dst, [[3, 4, 5], [9, 10, 11], [15, 16, 17], [21, 22, 23]])


def test_slice_2(capfd):
    src_shape = (4, 2, 3)
    dst_shape = (1,)
    indices = 10
    a = np.arange(np.prod(src_shape)).reshape(*src_shape).astype(np.float32)
    dst = np.random.randn(*dst_shape).astype(np.float32)
    apply_slice(from_dlpack(a), from_dlpack(dst), indices)
    assert _out(capfd) == ("tensor_value<vector<24xf32> o (4, 2, 3)> -> ?\n" + _column([" 10.000000"]))
    np.testing.assert_array_equal(dst, [10.0])


# What the notebook printed for a = 1, b = c = 2: add, sub, mul, div, floordiv, mod.
BINARY_OUTPUT = "".join(_column([v] * 3) for v in
                        (" 3.000000", "-1.000000", " 2.000000", " 0.500000", " 0.000000", " 1.000000"))


def test_binary_op_1(capfd):
    @cute.jit
    def binary_op_1(res: cute.Tensor, a: cute.Tensor, b: cute.Tensor):
        a_vec = a.load()
        b_vec = b.load()

        add_res = a_vec + b_vec
        res.store(add_res)
        cute.print_tensor(res)        # prints [3.000000, 3.000000, 3.000000]

        sub_res = a_vec - b_vec
        res.store(sub_res)
        cute.print_tensor(res)        # prints [-1.000000, -1.000000, -1.000000]

        mul_res = a_vec * b_vec
        res.store(mul_res)
        cute.print_tensor(res)        # prints [2.000000, 2.000000, 2.000000]

        div_res = a_vec / b_vec
        res.store(div_res)
        cute.print_tensor(res)        # prints [0.500000, 0.500000, 0.500000]

        floor_div_res = a_vec // b_vec
        res.store(floor_div_res)
        cute.print_tensor(res)        # prints [0.000000, 0.000000, 0.000000]

        mod_res = a_vec % b_vec
        res.store(mod_res)
        cute.print_tensor(res)        # prints [1.000000, 1.000000, 1.000000]

    a = np.empty((3,), dtype=np.float32)
    a.fill(1.0)
    b = np.empty((3,), dtype=np.float32)
    b.fill(2.0)
    res = np.empty((3,), dtype=np.float32)
    binary_op_1(from_dlpack(res), from_dlpack(a), from_dlpack(b))
    assert _out(capfd) == BINARY_OUTPUT
    np.testing.assert_array_equal(res, [1.0] * 3)


def test_binary_op_2(capfd):
    @cute.jit
    def binary_op_2(res: cute.Tensor, a: cute.Tensor, c: cutlass.Constexpr):
        a_vec = a.load()

        add_res = a_vec + c
        res.store(add_res)
        cute.print_tensor(res)        # prints [3.000000, 3.000000, 3.000000]

        sub_res = a_vec - c
        res.store(sub_res)
        cute.print_tensor(res)        # prints [-1.000000, -1.000000, -1.000000]

        mul_res = a_vec * c
        res.store(mul_res)
        cute.print_tensor(res)        # prints [2.000000, 2.000000, 2.000000]

        div_res = a_vec / c
        res.store(div_res)
        cute.print_tensor(res)        # prints [0.500000, 0.500000, 0.500000]

        floor_div_res = a_vec // c
        res.store(floor_div_res)
        cute.print_tensor(res)        # prints [0.000000, 0.000000, 0.000000]

        mod_res = a_vec % c
        res.store(mod_res)
        cute.print_tensor(res)        # prints [1.000000, 1.000000, 1.000000]

    a = np.empty((3,), dtype=np.float32)
    a.fill(1.0)
    c = 2.0
    res = np.empty((3,), dtype=np.float32)
    binary_op_2(from_dlpack(res), from_dlpack(a), c)
    assert _out(capfd) == BINARY_OUTPUT


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


def test_unary_op_1(capfd):
    @cute.jit
    def unary_op_1(res: cute.Tensor, a: cute.Tensor):
        a_vec = a.load()

        sqrt_res = cute.math.sqrt(a_vec)
        res.store(sqrt_res)
        cute.print_tensor(res)        # prints [2.000000, 2.000000, 2.000000]

        sin_res = cute.math.sin(a_vec)
        res.store(sin_res)
        cute.print_tensor(res)        # prints [-0.756802, -0.756802, -0.756802]

        exp2_res = cute.math.exp2(a_vec)
        res.store(exp2_res)
        cute.print_tensor(res)        # prints [16.000000, 16.000000, 16.000000]

    a = np.array([4.0, 4.0, 4.0], dtype=np.float32)
    res = np.empty((3,), dtype=np.float32)
    unary_op_1(from_dlpack(res), from_dlpack(a))
    assert _out(capfd) == "".join(_column([v] * 3) for v in (" 2.000000", "-0.756802", " 16.000000"))


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
        # We can't print the TensorSSA directly at this point, so we store it to a new Tensor and print it.
        res = cute.make_fragment(red_res.shape, cutlass.Float32)
        res.store(red_res)
        cute.print_tensor(res)        # prints [6.000000, 15.000000]

        red_res = a_vec.reduce(
            cute.ReductionOp.ADD,
            1.0,
            reduction_profile=(1, None)
        )
        res = cute.make_fragment(red_res.shape, cutlass.Float32)
        res.store(red_res)
        cute.print_tensor(res)        # prints [6.000000, 8.000000, 10.000000]

    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    reduction_op(from_dlpack(a))
    assert _out(capfd) == ("21.000000\n"
                           + _column([" 6.000000", " 15.000000"], space="rmem", align=32)
                           + _column([" 6.000000", " 8.000000", " 10.000000"], space="rmem", align=32))
