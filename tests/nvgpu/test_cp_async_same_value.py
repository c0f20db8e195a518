"""Several threads' cp.async writing one shared word on the CPU emulator: when they all copy the
same value (a warp whose lanes load one broadcast scale factor, as NVIDIA's blockwise GEMM does
for its per-128-column B scale) the result is the same in any order, so the emulator accepts it;
different values, or a read before the copies have landed, stay races it reports."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync

CPU = "--target cpu"
THREADS, SHARING = 32, 8  # 8 threads per shared word


def _kernel(source_of, read_before_wait):
    @cute.kernel
    def kernel(a: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, THREADS // SHARING, alignment=16),
                             cute.make_layout((THREADS // SHARING,)))
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
        # Thread t copies into word t // 8 either a[t // 8] (source_of 0: one value per word) or a[t].
        src = tidx // SHARING if cutlass.const_expr(source_of == 0) else tidx
        g = cute.make_tensor(a.iterator + src, cute.make_layout((1,)))
        d = cute.make_tensor(s.iterator + tidx // SHARING, cute.make_layout((1,)))
        cute.copy(atom, g, d)
        cute.arch.cp_async_commit_group()
        if cutlass.const_expr(read_before_wait):
            out[tidx] = s[tidx // SHARING]
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        out[tidx] = s[tidx // SHARING] * 2.0

    @cute.jit
    def run(a: cute.Tensor, out: cute.Tensor):
        kernel(a, out).launch(grid=(1, 1, 1), block=(THREADS, 1, 1))

    return run


def test_same_value_copies_into_one_word_land_once():
    a = np.arange(THREADS, dtype=np.float32) + 0.5
    out = np.zeros(THREADS, np.float32)
    cute.compile(_kernel(0, False), a, out, options=CPU)(a, out)
    np.testing.assert_array_equal(out, 2 * a[np.arange(THREADS) // SHARING])


def test_different_values_into_one_word_are_reported():
    a = np.arange(THREADS, dtype=np.float32) + 0.5
    out = np.zeros(THREADS, np.float32)
    f = cute.compile(_kernel(1, False), a, out, options=CPU)
    with pytest.raises(cute.DSLRuntimeError, match=r"a store to shared memory at offset [0-3] that a "
                                                   r"cp.async of thread 0.* still writes"):
        f(a, out)  # 0.5 and 1.5 share their low bytes: the first differing byte is reported


def test_read_before_the_shared_copies_land_is_reported():
    a = np.arange(THREADS, dtype=np.float32) + 0.5
    out = np.zeros(THREADS, np.float32)
    f = cute.compile(_kernel(0, True), a, out, options=CPU)
    with pytest.raises(cute.DSLRuntimeError, match=r"a read of shared memory at offset 0 that a cp.async of "
                                                   r"thread 0.* still writes"):
        f(a, out)
