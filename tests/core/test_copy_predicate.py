"""A copy's predicate may hold one entry for a whole value mode that spans several atom calls.

quack copies fp32 rows in 8-element vectors (two 128-bit atoms each) and predicates each vector
with one entry: its predicate (1, rest) mirrors the partition ((8,1), rest). Each vector is copied
whole or not at all."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


@cute.jit
def copy_vectors_below(src: cute.Tensor, dst: cute.Tensor, limit: cutlass.Int32):
    copy_vectors_kernel(src, dst, limit).launch(grid=(1, 1, 1), block=(1, 1, 1))


@cute.kernel
def copy_vectors_kernel(src: cute.Tensor, dst: cute.Tensor, limit: cutlass.Int32):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
    vectors = cute.make_layout(((8, 1), 3), stride=((1, 0), 8))  # three vectors of 8 fp32
    s = cute.make_tensor(src.iterator, vectors)
    d = cute.make_tensor(dst.iterator, vectors)
    pred = cute.make_rmem_tensor((1, 3), cutlass.Boolean)
    for v in cutlass.range_constexpr(3):
        pred[0, v] = v * 8 < limit
    cute.copy(atom, s, d, pred=pred)


@pytest.mark.parametrize("limit", [0, 5, 8, 9, 17, 24])
def test_one_predicate_entry_guards_a_vector_of_two_atoms(limit):
    src = np.arange(24, dtype=np.float32) + 1
    dst = np.zeros(24, dtype=np.float32)
    s, d = from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16)
    cute.compile(copy_vectors_below, s, d, limit, options="--target cpu")(s, d, limit)
    expected = np.zeros(24, dtype=np.float32)
    for v in range(3):
        if v * 8 < limit:
            expected[v * 8:(v + 1) * 8] = src[v * 8:(v + 1) * 8]
    np.testing.assert_array_equal(dst, expected)


def test_a_predicate_of_neither_form_is_refused():
    @cute.kernel
    def kernel(src: cute.Tensor, dst: cute.Tensor):
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
        vectors = cute.make_layout(((8, 1), 3), stride=((1, 0), 8))
        pred = cute.make_rmem_tensor((1, 2), cutlass.Boolean)  # 2 entries for 3 vectors
        cute.copy(atom, cute.make_tensor(src.iterator, vectors), cute.make_tensor(dst.iterator, vectors), pred=pred)

    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor):
        kernel(src, dst).launch(grid=(1, 1, 1), block=(1, 1, 1))

    a = np.zeros(24, dtype=np.float32)
    with pytest.raises(ValueError, match=r"needs one entry per atom call \(6\)"):
        cute.compile(launch, from_dlpack(a, assumed_align=16), from_dlpack(a.copy(), assumed_align=16),
                     options="--target cpu")
