// A kernel launch on the GPU from a host program's launch request: the arguments packed as
// kernel parameters, and cuLaunchKernel (cuLaunchKernelEx when the request has launch
// attributes: clusters, cooperative, programmatic dependent launch, events). Shared by the JIT
// executor and exported programs.
#pragma once
#include "emulator/host_interpreter.h"

namespace opencute::runtime {

// `discard`: pack the parameters but stop short of the driver (host-cost measurements).
void launch_on_gpu(void* function, const emulator::LaunchRequest& request, bool discard = false);
// launch_on_gpu of a function loaded into `context`, which the caller made current on this thread
// with CudaDriver::ensure_context_current_on_this_thread. Should the launch find no context (the
// thread's was popped or unset since), it makes `context` current again and launches once more.
void launch_on_gpu_in_context(void* function, const emulator::LaunchRequest& request, void* context);

}  // namespace opencute::runtime
