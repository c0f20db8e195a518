"""cute.TensorSSA(tensor_ssa, shape, dtype): another TensorSSA's elements (colexicographic order)
seen with `shape` and converted to `dtype`, as NVIDIA's mixed-input GEMMs re-wrap a scale
fragment's load() with the shape of the A fragment it multiplies. Reference: numpy's Fortran-order
reshape of the same values."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute


@cute.kernel
def rewrap_kernel(a: cute.Tensor, out: cute.Tensor):
    r = cute.make_rmem_tensor((8,), cutlass.Float32)
    for i in cutlass.range_constexpr(8):
        r[i] = a[i]
    w = cute.TensorSSA(r.load(), (2, 4), cutlass.Float16)  # 8 values seen as (2, 4), then half precision
    o = cute.make_rmem_tensor((2, 4), cutlass.Float16)
    o.store(w * cutlass.Float16(2))
    for i in cutlass.range_constexpr(2):
        for j in cutlass.range_constexpr(4):
            out[i, j] = o[i, j].to(cutlass.Float32)


@cute.jit
def rewrap(a: cute.Tensor, out: cute.Tensor):
    rewrap_kernel(a, out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_tensor_ssa_rewrapped_with_another_shape():
    a = np.arange(8, dtype=np.float32) + 0.5
    out = np.zeros((2, 4), np.float32)
    cute.compile(rewrap, a, out, options="--target cpu")(a, out)
    np.testing.assert_array_equal(out, 2 * a.reshape((2, 4), order="F"))


def test_rewrap_needs_as_many_elements():
    @cute.kernel
    def bad(a: cute.Tensor):
        r = cute.make_rmem_tensor((8,), cutlass.Float32)
        cute.TensorSSA(r.load(), (3, 3), cutlass.Float32)

    @cute.jit
    def run(a: cute.Tensor):
        bad(a).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with pytest.raises(cutlass.DSLUserCodeError, match=r"a TensorSSA of shape \(3, 3\) holds 9 elements, got 8"):
        cute.compile(run, np.zeros(8, np.float32), options="--target cpu")
