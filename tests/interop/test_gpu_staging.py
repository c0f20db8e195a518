"""GPU memory staged through host memory around an emulated launch (runtime/host_staging.h): on a
machine with a CUDA GPU, torch CUDA tensors (directly, or as cute.runtime tensors) and raw device
pointers passed to a function whose kernels run on the emulator for sm_100a are copied to the host
before the launch and back after it, so the result is on the GPU, compared with torch. Two views of
one storage stay one buffer; a launch that writes nothing copies nothing back; input written on a
side stream is seen. The lead runs these on the H100 (`pytest -m gpu tests/interop/test_gpu_staging.py`);
without a GPU they are skipped (the decision logic is tested in cpp/tests/runtime/test_host_staging.cpp)."""
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_ptr

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

OPTIONS = "--target cpu --gpu-arch sm_100a"


@cute.kernel
def axpy_kernel(x: cute.Tensor, y: cute.Tensor):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    i = bidx * 128 + tidx
    y[i] = x[i] * 2.0 + y[i]


@cute.jit
def axpy(x: cute.Tensor, y: cute.Tensor):
    axpy_kernel(x, y).launch(grid=(cute.size(x) // 128, 1, 1), block=(128, 1, 1))


@cute.kernel
def axpy_ptr_kernel(x: cute.Tensor, y: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    y[tidx] = x[tidx] * 2.0 + y[tidx]


@cute.jit
def axpy_ptr(xp: cute.Pointer, yp: cute.Pointer):
    x = cute.make_tensor(xp, cute.make_layout(128))
    y = cute.make_tensor(yp, cute.make_layout(128))
    axpy_ptr_kernel(x, y).launch(grid=(1, 1, 1), block=(128, 1, 1))


@cute.kernel
def read_only_kernel(x: cute.Tensor):
    pass


@cute.jit
def read_only(x: cute.Tensor):
    read_only_kernel(x).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_torch_cuda_tensors_through_a_compiled_function():
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")
    want = x * 2 + y
    compiled = cute.compile(axpy, x, y, options=OPTIONS)
    assert compiled.target == "cpu"
    compiled(x, y)
    torch.testing.assert_close(y, want)


def test_runtime_tensors_and_a_direct_call(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    x = torch.randn(512, device="cuda")
    y = torch.randn(512, device="cuda")
    want = x * 2 + y
    axpy(from_dlpack(x, assumed_align=16), from_dlpack(y, assumed_align=16))
    torch.testing.assert_close(y, want)


def test_two_views_of_one_storage_are_one_buffer():
    # x and y are the two halves of one storage: one host copy stands for both (were they two, a
    # write through one view would not be seen through the other within the launch).
    base = torch.randn(256, device="cuda")
    x, y = base[:128], base[128:]
    want = base.clone()
    want[128:] = want[:128] * 2 + want[128:]
    compiled = cute.compile(axpy, x, y, options=OPTIONS)
    compiled(x, y)
    torch.testing.assert_close(base, want)


def test_raw_device_pointers_stage_their_allocation():
    x = torch.randn(128, device="cuda")
    y = torch.randn(128, device="cuda")
    want = x * 2 + y
    xp, yp = make_ptr(cutlass.Float32, x.data_ptr()), make_ptr(cutlass.Float32, y.data_ptr())
    compiled = cute.compile(axpy_ptr, make_ptr(cutlass.Float32, 16, cute.AddressSpace.gmem, assumed_align=16),
                            make_ptr(cutlass.Float32, 16, cute.AddressSpace.gmem, assumed_align=16), options=OPTIONS)
    compiled(xp, yp)
    torch.testing.assert_close(y, want)


def test_input_written_on_a_side_stream_is_seen():
    x = torch.empty(1024, device="cuda")
    y = torch.zeros(1024, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(10_000_000)  # the fill lands well after the call starts, unless it waits
        x.fill_(3.0)
        compiled = cute.compile(axpy, x, y, options=OPTIONS)
        compiled(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.full_like(y, 6.0))


def test_a_launch_that_writes_nothing_leaves_the_device_alone():
    x = torch.randn(64, device="cuda")
    before = x.clone()
    compiled = cute.compile(read_only, x, options=OPTIONS)
    compiled(x)
    torch.testing.assert_close(x, before)
