#include "runtime/gpu_launch.h"

#include "emulator/launch_parameters.h"
#include "ir/scalar_semantics.h"
#include "runtime/cuda_driver.h"

namespace opencute::runtime {

void launch_on_gpu(void* fn, const emulator::LaunchRequest& r, bool discard) {
  // Each parameter gets an 8-byte slot; the driver copies the bytes each param points at.
  constexpr size_t kMaxParams = 256;
  if (r.num_args > kMaxParams) throw emulator::ExecutionError("too many kernel parameters");
  alignas(8) unsigned char storage[kMaxParams][8];
  void* params[kMaxParams];
  for (size_t i = 0; i < r.num_args; ++i)
    params[i] = const_cast<void*>(emulator::launch_parameter_bytes(r, i, storage[i]));
  if (discard) {
    asm volatile("" : : "r"(params) : "memory");  // the packed parameters count as used
    return;
  }
  CudaDriver& drv = CudaDriver::get();
  if (r.smem > 48 * 1024) drv.set_max_dynamic_smem(fn, int(r.smem));
  if (r.has_cluster && uint64_t(r.cluster[0]) * r.cluster[1] * r.cluster[2] > 8) drv.allow_non_portable_cluster_size(fn);
  CudaDriver::LaunchAttributes la;
  la.has_cluster = r.has_cluster;
  for (int i = 0; i < 3; ++i) la.cluster[i] = r.cluster[i];
  la.cooperative = r.cooperative;
  la.pdl = r.pdl;
  la.completion_event = r.completion_event;
  la.completion_event_flags = r.completion_event_flags;
  la.programmatic_event = r.programmatic_event;
  la.programmatic_event_flags = r.programmatic_event_flags;
  la.programmatic_trigger_at_block_start = r.programmatic_trigger_at_block_start;
  if (la.any())
    drv.launch_ex(fn, r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2], la, r.smem, r.stream, params);
  else
    drv.launch(fn, r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2], r.smem, r.stream, params);
}

void launch_on_gpu_in_context(void* fn, const emulator::LaunchRequest& r, void* context) {
  try {
    launch_on_gpu(fn, r);
  } catch (const CudaError& e) {
    if (e.code() != CudaDriver::kInvalidContext) throw;
    // Nothing was queued: a launch that finds no context fails before it starts.
    CudaDriver& drv = CudaDriver::get();
    drv.forget_context_on_this_thread();
    drv.ensure_context_current_on_this_thread(context);
    launch_on_gpu(fn, r);
  }
}

}  // namespace opencute::runtime
