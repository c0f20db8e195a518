"""The code of NVIDIA's hello_world notebook: a host printf and a one-warp kernel whose thread 0
prints. Runs on the GPU, or on the CPU emulator when there is none."""
import cutlass
import cutlass.cute as cute


@cute.kernel
def kernel():
    # Get the x component of the thread index (y and z components are unused)
    tidx, _, _ = cute.arch.thread_idx()
    # Only the first thread (thread 0) prints the message
    if cutlass.dynamic_expr(tidx == 0):
        cute.printf("Hello world")


@cute.jit
def hello_world():
    # Print hello world from host code
    cute.printf("hello world")

    # Launch kernel
    kernel().launch(
        grid=(1, 1, 1),  # Single thread block
        block=(32, 1, 1),  # One warp (32 threads) per thread block
    )


if __name__ == "__main__":
    cutlass.cuda.initialize_cuda_context()
    print("Running hello_world()...")
    hello_world()
    print("Compiling...")
    hello_world_compiled = cute.compile(hello_world)
    from cutlass.cute import KeepPTX, KeepCUBIN
    print("Compiling with PTX/CUBIN dumped...")
    hello_world_compiled_ptx_on = cute.compile[KeepPTX, KeepCUBIN](hello_world)
    print("Running compiled version...")
    hello_world_compiled()
