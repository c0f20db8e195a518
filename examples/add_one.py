"""The add_one kernel of the CuTe DSL documentation: b = a + 1 over a 1-D float32 tensor.

Runs on the GPU when one is present and checks the result; without a GPU the kernel runs on
OpenCuTe's CPU emulator (numpy inputs) and the result is checked the same way."""
import importlib.util

import numpy as np

import cutlass
import cutlass.cute as cute


@cute.kernel
def device_add_one(a: cute.Tensor, b: cute.Tensor):
    threads_per_block = 128
    cta_x_, _, _ = cute.arch.block_idx()
    tid_x, _, _ = cute.arch.thread_idx()
    tid = cta_x_ * threads_per_block + tid_x
    if tid < a.shape[0]:
        b[tid] = a[tid] + 1.0


@cute.jit
def add_one(a: cute.Tensor, b: cute.Tensor):
    n = a.shape[0]
    threads_per_block = 128
    blocks = (n + threads_per_block - 1) // threads_per_block
    device_add_one(a, b).launch(
        grid=(blocks, 1, 1),
        block=(threads_per_block, 1, 1),
    )


def main():
    n = cute.sym_int()
    a_fake = cute.runtime.make_fake_compact_tensor(cute.Float32, (n,))
    b_fake = cute.runtime.make_fake_compact_tensor(cute.Float32, (n,))
    # The TVM-FFI ABI when its package is installed (pip install apache-tvm-ffi); else the default.
    options = "--enable-tvm-ffi" if importlib.util.find_spec("tvm_ffi") else None
    compiled = cute.compile(add_one, a_fake, b_fake, options=options)
    if not cutlass.cuda.is_available():
        print("No CUDA GPU found: running the kernel on the CPU emulator.")
        a = np.arange(1000, dtype=np.float32)
        b = np.empty_like(a)
        compiled(a, b)
        np.testing.assert_array_equal(b, a + 1.0)
        print("add_one on the CPU emulator : b[:5] =", b[:5].tolist(), "-- result checked, OK")
        return
    import torch
    cutlass.cuda.initialize_cuda_context()
    a = torch.arange(1000, dtype=torch.float32, device="cuda")
    b = torch.empty_like(a)
    compiled(a, b)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(b.cpu().numpy(), a.cpu().numpy() + 1.0)
    print("add_one on", torch.cuda.get_device_name(), ": b[:5] =", b[:5].tolist(), "-- result checked, OK")


if __name__ == "__main__":
    main()
