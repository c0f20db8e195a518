"""A global tensor whose data pointer is null at run time (what NVIDIA's export drivers pass to
`print_tensor_kernel`, which `cute.printf`s its tensor argument) prints its header and `(null)`
instead of reading address 0; a non-null tensor printed by the same code prints its data."""
import numpy as np

import cutlass
import cutlass.cute as cute


@cute.kernel
def _printf_kernel(a: cute.Tensor):
    cute.printf("a: {}", a)


@cute.jit
def printf_in_kernel(p: cute.Pointer, n: cutlass.Int32):
    a = cute.make_tensor(p, cute.make_layout((n, 2), stride=(2, 1)))
    _printf_kernel(a).launch(grid=(1, 1, 1), block=(1, 1, 1))


@cute.jit
def print_tensor_on_host(p: cute.Pointer):
    cute.print_tensor(cute.make_tensor(p, cute.make_layout(3)))


def _ptr(address):
    return cute.runtime.make_ptr(cutlass.Float32, address, cute.AddressSpace.gmem)


def test_null_tensor_prints_header_and_null_in_a_kernel(capfd):
    data = np.arange(8, dtype=np.float32)
    f = cute.compile(printf_in_kernel, _ptr(data.ctypes.data), 4, options="--target cpu")
    f(_ptr(0), 4)
    out = capfd.readouterr().out
    assert out == "a: tensor(raw_ptr(0x0000000000000000: f32, gmem, align<4>) o (4,2):(2,1), data=\n       (null))\n"
    f(_ptr(data.ctypes.data), 2)  # the same compiled code prints a real tensor's data
    out = capfd.readouterr().out
    assert out == (f"a: tensor(raw_ptr(0x{data.ctypes.data:016x}: f32, gmem, align<4>) o (2,2):(2,1), data=\n"
                   "       [[ 0.000000,  1.000000, ],\n"
                   "        [ 2.000000,  3.000000, ]])\n")


def test_null_tensor_on_the_host(capfd):
    data = np.array([1, 2, 3], dtype=np.float32)
    f = cute.compile(print_tensor_on_host, _ptr(data.ctypes.data), options="--target cpu")
    f(_ptr(0))
    assert capfd.readouterr().out == ("tensor(raw_ptr(0x0000000000000000: f32, gmem, align<4>) o 3:1, data=\n"
                                      "       (null))\n")
