"""cute.arch.cp_async_mbarrier_arrive_noinc (cp.async.mbarrier.arrive.noinc, FlashAttention-4's
cp.async producer): the consumer waits on the mbarrier alone, no cp_async_wait_group, and reads what
each producer thread's cp.async brought; the PTX names the instruction."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass.cute.nvgpu import cpasync
import toolchain

CPU = "--target cpu"


@cute.kernel
def producer_consumer_kernel(a: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
    buf = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, 128, alignment=16), cute.make_layout(128))
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 32)  # the producer warp's 32 threads arrive through noinc
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if tidx < 32:
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128)
        src = cute.make_tensor(a.iterator + tidx * 4, cute.make_layout((4, 1)))
        dst = cute.make_tensor(buf.iterator + tidx * 4, cute.make_layout((4, 1)))
        cute.copy(atom, src, dst)
        cute.arch.cp_async_mbarrier_arrive_noinc(bar)
    else:
        cute.arch.mbarrier_wait(bar, 0)
        for k in cutlass.range_constexpr(4):
            out[(tidx - 32) * 4 + k] = buf[(tidx - 32) * 4 + k] * 2.0


@cute.jit
def producer_consumer(a: cute.Tensor, out: cute.Tensor):
    producer_consumer_kernel(a, out).launch(grid=(1, 1, 1), block=(64, 1, 1))


def _args():
    a = np.arange(128, dtype=np.float32) + 1
    out = np.zeros(128, dtype=np.float32)
    return a, out


def test_the_consumer_sees_the_copies_after_the_noinc_arrivals():
    a, out = _args()
    cute.compile(producer_consumer, a, out, options=CPU)(a, out)
    np.testing.assert_array_equal(out, a * 2)


def test_ptx_names_the_noinc_arrive():
    a, out = _args()
    ptx = toolchain.ptx_of(cute.compile(producer_consumer, a, out, options=f"{CPU} --gpu-arch sm_90a"))
    assert "cp.async.mbarrier.arrive.noinc.shared.b64" in ptx


@pytest.mark.gpu
def test_on_the_gpu():
    torch = pytest.importorskip("torch")
    a = torch.arange(128, dtype=torch.float32, device="cuda") + 1
    out = torch.zeros(128, dtype=torch.float32, device="cuda")
    from cutlass.cute.runtime import from_dlpack
    producer_consumer(from_dlpack(a), from_dlpack(out))
    torch.cuda.synchronize()
    assert torch.equal(out, a * 2)
