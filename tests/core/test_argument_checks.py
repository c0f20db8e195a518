"""Every call of a compiled function checks each tensor argument against what the function was
compiled for: element type, memory (host or GPU), alignment of the data pointer, rank and the
static layout entries. A mismatch raises before anything runs, so no kernel ever reinterprets
memory of another type (a float64 array through a float32 kernel used to give garbage)."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def _copy_kernel(src: cute.Tensor, dst: cute.Tensor):
    i = cute.arch.thread_idx()[0]
    dst[i] = src[i]


@cute.jit
def copy4(src: cute.Tensor, dst: cute.Tensor):
    _copy_kernel(src, dst).launch(grid=(1, 1, 1), block=(4, 1, 1))


def _compiled_for_float32():
    a, b = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    return cute.compile(copy4, a, b, options="--target cpu")


def test_matching_arguments_run():
    f = _compiled_for_float32()
    a, b = np.array([10, 11, 12, 13], np.float32), np.zeros(4, np.float32)
    f(a, b)
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("dtype, name", [(np.float64, "float64"), (np.int32, "int32"), (np.float16, "float16"),
                                         (np.uint8, "uint8"), (np.bool_, "bool")])
def test_wrong_element_type_is_a_type_error_and_nothing_runs(dtype, name):
    f = _compiled_for_float32()
    bad = np.array([10, 11, 12, 13]).astype(dtype)
    b = np.full(4, -1, np.float32)
    with pytest.raises(TypeError, match=rf"argument #0 \(src\) has element type {name} but the function was "
                                        r"compiled for float32 \(Float32\)") as e:
        f(bad, b)
    assert isinstance(e.value, cutlass.DSLRuntimeError)
    assert e.value.filename == __file__  # the user's line
    np.testing.assert_array_equal(b, np.full(4, -1, np.float32))


def test_wrong_element_type_of_the_second_argument_is_named():
    f = _compiled_for_float32()
    with pytest.raises(TypeError, match=r"argument #1 \(dst\) has element type int32"):
        f(np.zeros(4, np.float32), np.zeros(4, np.int32))


def test_runtime_tensor_element_type_is_checked():
    f = _compiled_for_float32()
    with pytest.raises(TypeError, match="has element type float64"):
        f(from_dlpack(np.zeros(4, np.float64)).mark_layout_dynamic(), np.zeros(4, np.float32))


def test_reinterpreted_runtime_tensor_is_checked_as_what_it_claims():
    # element_type= views the same storage as another type of the same width: the user chose it.
    f = _compiled_for_float32()
    raw = np.array([1.5, -2.0, 0.25, 8.0], np.float32).view(np.int32)
    src = from_dlpack(raw).mark_layout_dynamic()
    src.element_type = cutlass.Float32
    out = np.zeros(4, np.float32)
    f(src, out)
    np.testing.assert_array_equal(out, raw.view(np.float32))


def test_rank_mismatch():
    f = _compiled_for_float32()
    with pytest.raises(ValueError, match=r"argument #0 has layout \(2,2\):\(2,1\) but the function was compiled"):
        f(np.zeros((2, 2), np.float32), np.zeros(4, np.float32))


def test_static_extent_and_stride_mismatch():
    a = np.zeros(4, np.float32)
    f = cute.compile(copy4, from_dlpack(a), from_dlpack(np.zeros(4, np.float32)), options="--target cpu")
    with pytest.raises(ValueError, match=r"argument #0 has layout \(8\):\(1\) but the function was compiled for "
                                         r"\(4\):\(1\)"):
        f(from_dlpack(np.zeros(8, np.float32)), from_dlpack(np.zeros(4, np.float32)))
    with pytest.raises(ValueError, match=r"argument #1 has layout \(4\):\(2\) but the function was compiled for "
                                         r"\(4\):\(1\)"):
        f(from_dlpack(a), from_dlpack(np.zeros(8, np.float32)[::2]))


def test_misaligned_data_pointer():
    storage = np.zeros(16, np.float32)
    assert storage.ctypes.data % 16 == 0  # numpy aligns allocations of this size to 16 bytes or more
    f = cute.compile(copy4, from_dlpack(storage[:4], assumed_align=16).mark_layout_dynamic(),
                     from_dlpack(np.zeros(4, np.float32)).mark_layout_dynamic(), options="--target cpu")
    # A plain array is passed as it is (from_dlpack would refuse the misaligned view itself).
    with pytest.raises(ValueError, match=r"argument #0 \(src\): data address \d+ is not aligned to the 16 bytes "
                                         "the function was compiled for"):
        f(storage[1:5], np.zeros(4, np.float32))
    dst = np.zeros(4, np.float32)
    storage[4:8] = [1, 2, 3, 4]
    f(storage[4:8], dst)
    np.testing.assert_array_equal(dst, [1, 2, 3, 4])


class _DeviceArray:
    """Looks like a CUDA array (only metadata: nothing may ever read it)."""

    def __init__(self, host):
        self._host = host
        self.__cuda_array_interface__ = {"data": (host.ctypes.data, False), "shape": host.shape,
                                         "typestr": host.dtype.str, "strides": None, "version": 3}


def test_gpu_memory_for_kernels_on_the_emulator():
    f = _compiled_for_float32()
    dev = from_dlpack(_DeviceArray(np.zeros(4, np.float32))).mark_layout_dynamic()
    with pytest.raises(ValueError, match=r"argument #1 \(dst\) is in GPU memory, but this function's kernels run on "
                                         "the CPU emulator, which reads host memory"):
        f(np.zeros(4, np.float32), dev)


def test_fake_gpu_tensors_compile_for_the_emulator_and_take_host_arrays():
    n = cute.sym_int()
    f = cute.compile(copy4, cute.runtime.make_fake_compact_tensor(cute.Float32, (n,)),
                     cute.runtime.make_fake_compact_tensor(cute.Float32, (n,)), options="--target cpu")
    a, b = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    f(a, b)
    np.testing.assert_array_equal(a, b)


@pytest.mark.gpu
def test_host_memory_for_kernels_on_the_gpu():
    import torch
    f = cute.compile(copy4, torch.zeros(4, device="cuda"), torch.zeros(4, device="cuda"), options="--target gpu")
    with pytest.raises(ValueError, match=r"argument #0 \(src\) is in host memory, but this function's kernels run "
                                         "on the GPU"):
        f(torch.zeros(4), torch.zeros(4, device="cuda"))
    with pytest.raises(TypeError, match=r"argument #0 \(src\) has element type float64"):
        f(torch.zeros(4, device="cuda", dtype=torch.float64), torch.zeros(4, device="cuda"))
    src, dst = torch.arange(4, device="cuda", dtype=torch.float32), torch.zeros(4, device="cuda")
    f(src, dst)
    torch.cuda.synchronize()
    assert dst.tolist() == [0, 1, 2, 3]


def test_tensors_in_a_list_are_checked_each():
    @cute.jit
    def total(ts: list):
        acc = cutlass.Float32(0)
        for t in ts:
            acc = acc + t[0]
        return acc

    xs = [np.ones(2, np.float32), np.full(2, 2, np.float32)]
    f = cute.compile(total, xs)
    assert f(xs) == 3.0
    with pytest.raises(TypeError, match=r"argument #1 \(ts\[1\]\) has element type float64"):
        f([xs[0], np.full(2, 2, np.float64)])


def test_host_code_tensors_are_checked_too():
    @cute.jit
    def first(t: cute.Tensor):
        return t[0]

    f = cute.compile(first, np.array([7], np.int32))
    assert f(np.array([9], np.int32)) == 9
    with pytest.raises(TypeError, match="has element type int64 but the function was compiled for int32"):
        f(np.array([9], np.int64))


@pytest.mark.gpu
def test_numpy_arrays_on_a_gpu_machine_without_torch_raise_the_memory_error(tmp_path):
    # A fresh process that never touched CUDA: the runtime makes a context current itself, and
    # the host arrays are refused by name instead of faulting inside the kernel.
    import subprocess
    import sys
    script = tmp_path / "numpy_on_gpu.py"
    script.write_text('''
import numpy as np, cutlass.cute as cute
@cute.kernel
def k(a: cute.Tensor):
    a[cute.arch.thread_idx()[0]] = 1.0
@cute.jit
def f(a: cute.Tensor):
    k(a).launch(grid=(1, 1, 1), block=(4, 1, 1))
try:
    f(np.zeros(4, np.float32))
except ValueError as e:
    print("raised:", e)
''')
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "argument #0 (a) is in host memory, but this function's kernels run on the GPU" in p.stdout
    assert "--target cpu" in p.stdout


def test_stride_divisibility_is_not_asked_of_a_size_one_mode():
    # tensorop_gemm marks (L, M, K) tensors dynamic with strides divisible by 8; with L = 1 torch
    # gives mode 0 stride 1, which no access ever multiplies by anything but 0.
    @cute.jit
    def total(t: cute.Tensor):
        acc = cutlass.Float32(0)
        for i in range(t.shape[1]):
            acc = acc + t[0, i]
        return acc

    def marked(a):
        return from_dlpack(a).mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(
            mode=1, stride_order=(0, 1), divisibility=4)

    f = cute.compile(total, marked(np.zeros((2, 16), np.float32)))
    storage = np.ones(3 * 42, np.float32)

    class Rows:  # rows of 12 elements, 42 apart (numpy would report a size-1 mode's stride as 12)
        def __init__(self, rows):
            self.__array_interface__ = {"data": (storage.ctypes.data, False), "shape": (rows, 12),
                                        "typestr": "<f4", "strides": (42 * 4, 4), "version": 3}

    one_row = from_dlpack(Rows(1)).mark_layout_dynamic(leading_dim=1)
    assert one_row.stride == (42, 1)  # 42 is not a multiple of 4
    assert f(one_row) == 12.0
    with pytest.raises(ValueError, match=r"stride mode 0 \(42\) is not divisible by 4"):
        f(from_dlpack(Rows(3)).mark_layout_dynamic(leading_dim=1))


def test_stride_divisibility_of_a_size_one_mode_with_tvm_ffi():
    pytest.importorskip("tvm_ffi")
    from numpy.lib.stride_tricks import as_strided

    @cute.jit
    def total(t: cute.Tensor):
        acc = cutlass.Float32(0)
        for i in range(t.shape[1]):
            acc = acc + t[0, i]
        return acc

    marked = from_dlpack(np.zeros((2, 16), np.float32)).mark_layout_dynamic(leading_dim=1) \
        .mark_compact_shape_dynamic(mode=1, stride_order=(0, 1), divisibility=4)
    f = cute.compile(total, marked, options="--enable-tvm-ffi --target cpu")
    storage = np.ones(3 * 42, np.float32)
    one_row = as_strided(storage, shape=(1, 12), strides=(42 * 4, 4))
    assert f(one_row) == 12.0
    with pytest.raises(ValueError, match="stride"):
        f(as_strided(storage, shape=(3, 12), strides=(42 * 4, 4)))
