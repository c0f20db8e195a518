"""The cells of NVIDIA's `tensor` notebook (examples/python/CuTeDSL/notebooks/tensor.ipynb, BSD-3),
run with the same calls and checked against the output stored in the notebook (addresses masked).

The notebook builds its inputs with torch on the CPU; the `torch` tests run those cells as written
(skipped where torch is not installed), and each has a numpy twin (numpy supports DLPack too) so
the cells also run on machines without torch. Cells printing random data are checked against a
reference rendering of the same data (`print_format.render`).
"""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.cute.runtime as cute_rt
from cutlass.cute.runtime import from_dlpack
from print_format import printed as _out, render


def _torch():
    return pytest.importorskip("torch")


# ---- Example usage: a tensor over a pointer -----------------------------------------------------

@cute.jit
def create_tensor_from_ptr(ptr: cute.Pointer):
    layout = cute.make_layout((8, 5), stride=(5, 1))
    tensor = cute.make_tensor(ptr, layout)
    tensor.fill(1)
    cute.print_tensor(tensor)


ONES_8x5 = render(np.ones((8, 5)), "tensor(raw_ptr(0x<addr>: f32, generic, align<4>) o (8,5):(5,1), data=")


def test_stored_output_of_ones_matches_reference_render():
    # The reference renderer reproduces the notebook's stored text exactly.
    assert ONES_8x5 == (
        "tensor(raw_ptr(0x<addr>: f32, generic, align<4>) o (8,5):(5,1), data=\n"
        + "       [[ 1.000000,  1.000000,  1.000000,  1.000000,  1.000000, ],\n"
        + "        [ 1.000000,  1.000000,  1.000000,  1.000000,  1.000000, ],\n" * 2
        + "        ...\n"
        + "        [ 1.000000,  1.000000,  1.000000,  1.000000,  1.000000, ],\n" * 2
        + "        [ 1.000000,  1.000000,  1.000000,  1.000000,  1.000000, ]])\n")


def test_create_tensor_from_ptr_numpy(capfd):
    a = np.random.randn(8, 5).astype(np.float32)
    ptr_a = cute_rt.make_ptr(cutlass.Float32, a.ctypes.data)
    create_tensor_from_ptr(ptr_a)
    assert _out(capfd) == ONES_8x5
    np.testing.assert_array_equal(a, np.ones((8, 5), np.float32))


def test_create_tensor_from_ptr_torch(capfd):
    torch = _torch()
    from cutlass.torch import dtype as torch_dtype
    a = torch.randn(8, 5, dtype=torch_dtype(cutlass.Float32))
    ptr_a = cute_rt.make_ptr(cutlass.Float32, a.data_ptr())
    create_tensor_from_ptr(ptr_a)
    assert _out(capfd) == ONES_8x5


# ---- DLPack support ---------------------------------------------------------------------------

@cute.jit
def print_tensor_dlpack(src: cute.Tensor):
    print(src)
    cute.print_tensor(src)


def _expected_dlpack(a, layout):
    return f"tensor<ptr<f32, generic> o {layout}>\n" + render(
        a, f"tensor(raw_ptr(0x<addr>: f32, generic, align<4>) o {layout}, data=")


def test_print_tensor_dlpack_torch(capfd):
    torch = _torch()
    from cutlass.torch import dtype as torch_dtype
    a = torch.randn(8, 5, dtype=torch_dtype(cutlass.Float32))
    print_tensor_dlpack(from_dlpack(a))
    assert _out(capfd) == _expected_dlpack(a.numpy(), "(8,5):(5,1)")


def test_print_tensor_dlpack_numpy(capfd):
    a = np.random.randn(8, 8).astype(np.float32)
    print_tensor_dlpack(from_dlpack(a))
    assert _out(capfd) == _expected_dlpack(a, "(8,8):(8,1)")


# ---- Tensor evaluation --------------------------------------------------------------------------

@cute.jit
def tensor_access_item(a: cute.Tensor):
    cute.printf("a[2] = {} (equivalent to a[{}])", a[2],
                cute.make_identity_tensor(a.layout.shape)[2])
    cute.printf("a[9] = {} (equivalent to a[{}])", a[9],
                cute.make_identity_tensor(a.layout.shape)[9])
    cute.printf("a[2,0] = {}", a[2, 0])
    cute.printf("a[2,4] = {}", a[2, 4])
    cute.printf("a[(2,4)] = {}", a[2, 4])
    a[2, 3] = 100.0
    a[2, 4] = 101.0
    cute.printf("a[2,3] = {}", a[2, 3])
    cute.printf("a[(2,4)] = {}", a[(2, 4)])


ACCESS_OUTPUT = ("a[2] = 10.000000 (equivalent to a[(2,0)])\n"
                 "a[9] = 6.000000 (equivalent to a[(1,1)])\n"
                 "a[2,0] = 10.000000\n"
                 "a[2,4] = 14.000000\n"
                 "a[(2,4)] = 14.000000\n"
                 "a[2,3] = 100.000000\n"
                 "a[(2,4)] = 101.000000\n")


def _expected_after_access():
    e = np.arange(40, dtype=np.float32).reshape(8, 5)
    e[2, 3], e[2, 4] = 100, 101
    return e


def test_tensor_access_item_numpy(capfd):
    data = np.arange(0, 8 * 5, dtype=np.float32).reshape(8, 5)
    tensor_access_item(from_dlpack(data))
    assert _out(capfd) == ACCESS_OUTPUT
    np.testing.assert_array_equal(data, _expected_after_access())


def test_tensor_access_item_torch(capfd):
    torch = _torch()
    data = torch.arange(0, 8 * 5, dtype=torch.float32).reshape(8, 5)
    tensor_access_item(from_dlpack(data))
    print(data)
    assert _out(capfd) == ACCESS_OUTPUT + (
        "tensor([[  0.,   1.,   2.,   3.,   4.],\n"
        "        [  5.,   6.,   7.,   8.,   9.],\n"
        "        [ 10.,  11.,  12., 100., 101.],\n"
        "        [ 15.,  16.,  17.,  18.,  19.],\n"
        "        [ 20.,  21.,  22.,  23.,  24.],\n"
        "        [ 25.,  26.,  27.,  28.,  29.],\n"
        "        [ 30.,  31.,  32.,  33.,  34.],\n"
        "        [ 35.,  36.,  37.,  38.,  39.]])\n")


@cute.kernel
def print_tensor_gpu(ptr: cute.Pointer):
    layout = cute.make_layout((8, 5), stride=(5, 1))
    tensor = cute.make_tensor(ptr, layout)
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 0:
        cute.print_tensor(tensor)


@cute.jit
def launch_print_tensor_gpu(ptr: cute.Pointer):
    print_tensor_gpu(ptr).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_print_tensor_in_a_kernel_on_the_emulator(capfd, monkeypatch):
    # The notebook defines this kernel without launching it; here one thread of a block prints.
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    data = np.arange(40, dtype=np.float32).reshape(8, 5)
    launch_print_tensor_gpu(cute_rt.make_ptr(cutlass.Float32, data.ctypes.data))
    assert _out(capfd) == render(data, "tensor(raw_ptr(0x<addr>: f32, generic, align<4>) o (8,5):(5,1), data=")


# ---- Coordinate tensors -------------------------------------------------------------------------

@cute.jit
def print_tensor_coord(a: cute.Tensor):
    coord_tensor = cute.make_identity_tensor(a.layout.shape)
    print(coord_tensor)


def test_print_tensor_coord_numpy(capfd):
    print_tensor_coord(from_dlpack(np.random.randn(8, 4).astype(np.float32)))
    assert _out(capfd) == "tensor<(0,0) o (8,4):(1@0,1@1)>\n"


def test_print_tensor_coord_torch(capfd):
    torch = _torch()
    from cutlass.torch import dtype as torch_dtype
    a = torch.randn(8, 4, dtype=torch_dtype(cutlass.Float32))
    print_tensor_coord(from_dlpack(a))
    assert _out(capfd) == "tensor<(0,0) o (8,4):(1@0,1@1)>\n"
