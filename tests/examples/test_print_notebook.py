"""The cells of NVIDIA's `print` notebook (examples/python/CuTeDSL/notebooks/print.ipynb, BSD-3), run
with the same calls; each asserts the output stored in the notebook, with pointer addresses masked.

The host functions run on the CPU interpreter. In the stored output of the slice cell, Jupyter
interleaved Python's `print` with the C printf stream ("[Slice output:\\n 6.000000"); the test
checks the two streams in program order instead.
"""
import numpy as np

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack
from print_format import printed as _out


@cute.jit
def print_example(a: cutlass.Int32, b: cutlass.Constexpr[int]):
    print(">>>", b)
    print(">>>", a)
    cute.printf(">?? {}", a)
    cute.printf(">?? {}", b)
    print(">>>", type(a))
    print(">>>", type(b))
    layout = cute.make_layout((a, b))
    print(">>>", layout)
    cute.printf(">?? {}", layout)


STATIC = ">>> 2\n>>> ?\n>>> Int32\n>>> <class 'int'>\n>>> (?,2):(1,?)\n"
DYNAMIC = ">?? 8\n>?? 2\n>?? (8,2):(1,8)\n"


def test_print_example_direct_run(capfd):
    print_example(cutlass.Int32(8), 2)
    assert _out(capfd) == STATIC + DYNAMIC


def test_print_example_compile_then_call(capfd):
    print_example_compiled = cute.compile(print_example, cutlass.Int32(8), 2)
    assert _out(capfd) == STATIC
    print_example_compiled(cutlass.Int32(8))
    assert _out(capfd) == DYNAMIC


def test_format_string_example(capfd):
    @cute.jit
    def format_string_example(a: cutlass.Int32, b: cutlass.Constexpr[int]):
        print(f"a: {a}, b: {b}")
        layout = cute.make_layout((a, b))
        print(f"layout: {layout}")

    print("Direct run output:")
    format_string_example(cutlass.Int32(8), 2)
    assert _out(capfd) == "Direct run output:\na: ?, b: 2\nlayout: (?,2):(1,?)\n"


@cute.jit
def print_tensor_basic(x: cute.Tensor):
    print("Basic output:")
    cute.print_tensor(x)


@cute.jit
def print_tensor_verbose(x: cute.Tensor):
    print("Verbose output:")
    cute.print_tensor(x, verbose=True)


@cute.jit
def print_tensor_slice(x: cute.Tensor, coord: tuple):
    sliced_data = cute.slice_(x, coord)
    y = cute.make_fragment(sliced_data.layout, sliced_data.element_type)
    y.store(sliced_data.load())
    print("Slice output:")
    cute.print_tensor(y)


def test_print_tensor_basic(capfd):
    data = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    print_tensor_basic(from_dlpack(data))
    assert _out(capfd) == (
        "Basic output:\n"
        "tensor(raw_ptr(0x<addr>: f32, generic, align<4>) o (4,3,2):(6,2,1), data=\n"
        "       [[[ 0.000000,  2.000000,  4.000000, ],\n"
        "         [ 6.000000,  8.000000,  10.000000, ],\n"
        "         [ 12.000000,  14.000000,  16.000000, ],\n"
        "         [ 18.000000,  20.000000,  22.000000, ]],\n"
        "\n"
        "        [[ 1.000000,  3.000000,  5.000000, ],\n"
        "         [ 7.000000,  9.000000,  11.000000, ],\n"
        "         [ 13.000000,  15.000000,  17.000000, ],\n"
        "         [ 19.000000,  21.000000,  23.000000, ]]])\n")


def test_print_tensor_verbose(capfd):
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    print_tensor_verbose(from_dlpack(data))
    lines = "".join(f"\t({i},{j})= {3 * i + j}.000000\n" for i in range(4) for j in range(3))
    assert _out(capfd) == ("Verbose output:\n"
                           "tensor(raw_ptr(0x<addr>: f32, generic, align<4>) o (4,3):(3,1), data= (\n"
                           + lines + ")\n")


def test_print_tensor_slice(capfd):
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    print_tensor_slice(from_dlpack(data), (None, 0))
    print_tensor_slice(from_dlpack(data), (1, None))
    assert _out(capfd) == (
        "Slice output:\n"
        "tensor(raw_ptr(0x<addr>: f32, rmem, align<32>) o (4):(3), data=\n"
        "       [ 0.000000, ],\n"
        "       [ 3.000000, ],\n"
        "       [ 6.000000, ],\n"
        "       [ 9.000000, ])\n"
        "Slice output:\n"
        "tensor(raw_ptr(0x<addr>: f32, rmem, align<32>) o (3):(1), data=\n"
        "       [ 3.000000, ],\n"
        "       [ 4.000000, ],\n"
        "       [ 5.000000, ])\n")
