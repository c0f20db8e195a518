"""What NVIDIA's Ampere GEMMs and their tutorials lean on, each in a kernel of its own on the
emulator against numpy: DSL integers first used as layout coordinates inside a dynamic region,
`Layout.max_alignment`, user classes with the JIT-argument protocol, and streams left out of a
compiled call."""
import ctypes

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_ptr

CPU = "--target cpu"


def test_integer_first_used_as_a_coordinate_inside_loops_stays_usable_after():
    # A static Int32 made before two dynamic loops and first used as a tensor coordinate inside
    # the first (in a dynamic if): the second loop and the code after still read it.
    @cute.kernel
    def kernel(x: cute.Tensor, n: cutlass.Int32):
        index = cutlass.Int32(0)
        for i in range(n):
            if i > 0:
                x[index] = x[index] + 1.0
        for i in range(n):
            if i > 0:
                x[index + 1] = x[index] + 1.0
        x[index + 2] = x[index] * 10.0

    @cute.jit
    def host(x: cute.Tensor, n: cutlass.Int32):
        kernel(x, n).launch(grid=(1, 1, 1), block=(1, 1, 1))

    x = np.zeros(4, np.float32)
    cute.compile(host, from_dlpack(x), 4, options=CPU)(from_dlpack(x), 4)
    np.testing.assert_array_equal(x, [3.0, 4.0, 30.0, 0.0])


def test_max_alignment_of_static_layouts():
    @cute.jit
    def probe():
        # Contiguous from 0 over both modes: 32 elements; a power of two of what is contiguous.
        assert cute.make_layout((8, 4), stride=(1, 8)).max_alignment == 32
        assert cute.make_layout((6, 4), stride=(1, 6)).max_alignment == 8
        assert cute.make_layout((4, 8), stride=(8, 1)).max_alignment == 1
        assert cute.make_layout((1, 4), stride=(0, 1)).max_alignment == 4  # a size-1 mode moves nothing
        assert cute.make_layout((4, 2), stride=(1, 8)).max_alignment == 4

    cute.compile(probe, options=CPU)


@pytest.mark.parametrize("divisibility,expected", [(16, 16), (48, 16), (8, 8)])
def test_max_alignment_of_a_dynamic_extent_is_its_divisibility(divisibility, expected):
    seen = []

    @cute.jit
    def probe(a: cute.Tensor):
        seen.append((a.layout[0].max_alignment, a.layout[1].max_alignment))

    x = np.zeros((96, 4), np.float32, order="F")
    t = from_dlpack(x, assumed_align=16).mark_layout_dynamic(leading_dim=0).mark_compact_shape_dynamic(
        mode=0, divisibility=divisibility)
    cute.compile(probe, t, options=CPU)
    assert seen == [(expected, 1)]


class Scaled:
    """A user class passed to a jit function through the JIT-argument protocol: a pointer and a
    float scale, each read at call time from the storage __c_pointers__ points at."""

    def __init__(self, ptr, scale, n):
        self.ptr, self.scale, self.n = ptr, scale, n  # n: a compile-time property

    def __get_mlir_types__(self):
        return self.ptr.__get_mlir_types__() + [cutlass.Float32]

    def __c_pointers__(self):
        self._scale_storage = ctypes.c_float(self.scale)
        return self.ptr.__c_pointers__() + [ctypes.addressof(self._scale_storage)]

    def __extract_mlir_values__(self):
        return self.ptr.__extract_mlir_values__() + [self.scale]

    def __new_from_mlir_values__(self, values):
        return Scaled(self.ptr.__new_from_mlir_values__(values[:1]), cutlass.Float32(values[1]), self.n)


@cute.kernel
def _scale_kernel(src: cute.Tensor, dst: cute.Tensor, s: cutlass.Float32):
    i, _, _ = cute.arch.thread_idx()
    dst[i] = src[i] * s


@cute.jit
def _scale(buf: Scaled, out: cute.Tensor):
    src = cute.make_tensor(buf.ptr, cute.make_layout(buf.n))
    _scale_kernel(src, out, buf.scale).launch(grid=(1, 1, 1), block=(buf.n, 1, 1))


def test_user_class_with_the_jit_argument_protocol():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    ptr = make_ptr(cutlass.Float32, x.ctypes.data, cute.AddressSpace.gmem, assumed_align=4)
    f = cute.compile(_scale, Scaled(ptr, 2.0, 8), from_dlpack(out), options=CPU)
    f(Scaled(ptr, 2.0, 8), from_dlpack(out))
    np.testing.assert_array_equal(out, x * 2.0)
    # The values are read on every call: a new scale and a new buffer.
    y = np.full(8, 3.0, np.float32)
    f(Scaled(make_ptr(cutlass.Float32, y.ctypes.data, cute.AddressSpace.gmem, assumed_align=4), -1.5, 8),
      from_dlpack(out))
    np.testing.assert_array_equal(out, np.full(8, -4.5, np.float32))


def test_user_class_whose_pointers_and_types_disagree_is_refused():
    class Broken(Scaled):
        def __c_pointers__(self):
            return self.ptr.__c_pointers__()

    x = np.zeros(8, np.float32)
    ptr = make_ptr(cutlass.Float32, x.ctypes.data, cute.AddressSpace.gmem, assumed_align=4)
    with pytest.raises(cute.DSLUserCodeError, match="__c_pointers__.. gives 1 pointers but __get_mlir_types__.. 2"):
        cute.compile(_scale, Broken(ptr, 2.0, 8), from_dlpack(np.zeros(8, np.float32)), options=CPU)


class FakeCUstream(int):
    """Named as cuda.bindings' stream handle, which is how a jit parameter is seen as a stream."""


FakeCUstream.__name__ = "CUstream"


def test_a_trailing_stream_may_be_left_out_of_a_compiled_call():
    @cute.kernel
    def kernel(x: cute.Tensor):
        i, _, _ = cute.arch.thread_idx()
        x[i] = x[i] + 1.0

    @cute.jit
    def host(x: cute.Tensor, stream: FakeCUstream):
        kernel(x).launch(grid=(1, 1, 1), block=(4, 1, 1), stream=stream)

    x = np.zeros(4, np.float32)
    f = cute.compile(host, from_dlpack(x), stream=FakeCUstream(0), options=CPU)
    f(from_dlpack(x))  # the default stream
    f(from_dlpack(x), FakeCUstream(0))
    np.testing.assert_array_equal(x, np.full(4, 2.0, np.float32))
    with pytest.raises(cute.DSLUserCodeError, match="takes 2 runtime arguments, got 0"):
        f()


@pytest.mark.parametrize("dtype,swizzle", [(cutlass.Float16, (3, 4, 3)), (cutlass.Uint8, (3, 4, 4))])
def test_cp_async_into_swizzled_smem_lands_where_indexing_reads(dtype, swizzle):
    # A 64x32 m-major tile copied by cp.async (16 bytes a call) into shared memory behind a
    # byte-address swizzle, read back element by element: the copy goes through the swizzle.
    M, K = 64, 32
    per = 128 // dtype.width

    @cute.kernel
    def kernel(g: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s_layout = cute.make_layout((M, K), stride=(1, M))
        smem = cutlass.utils.SmemAllocator()
        s = smem.allocate_array(dtype, M * K, byte_alignment=1024)
        s_t = cute.make_tensor(cute.recast_ptr(s, cute.make_swizzle(*swizzle)), s_layout)
        atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(), dtype, num_bits_per_copy=128)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((M // per, 128 // (M // per)), stride=(1, M // per)),
                                        cute.make_layout((per, 1)))
        thr = tiled.get_slice(tidx)
        cute.copy(tiled, thr.partition_S(g), thr.partition_D(s_t))
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        for i in range(tidx, M * K, 128):
            out[i % M, i // M] = s_t[i % M, i // M]

    @cute.jit
    def host(g: cute.Tensor, out: cute.Tensor):
        kernel(g, out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    np_type = np.float16 if dtype is cutlass.Float16 else np.uint8
    g = (np.arange(M * K) % 251).astype(np_type).reshape(K, M).T
    out = np.zeros((K, M), np_type).T
    cute.compile(host, from_dlpack(g, assumed_align=16), from_dlpack(out), options=CPU)(
        from_dlpack(g, assumed_align=16), from_dlpack(out))
    np.testing.assert_array_equal(out, g)
