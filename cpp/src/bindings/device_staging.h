// The GPU memory one emulated call stages through host memory (runtime/host_staging.h), and the
// same call recorded into a CUDA graph being captured. Used by the compiled-function call path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "emulator/device_emulator.h"
#include "ir/scalar_semantics.h"
#include "runtime/cuda_driver.h"
#include "runtime/executor.h"
#include "runtime/host_staging.h"

namespace opencute::bindings {

// One emulated call recorded into a CUDA graph (HostStaging::capture): what each replay runs. The
// graph owns it (DeviceMemory::keep_while_graph_lives).
struct CapturedCall {
  std::shared_ptr<runtime::CompiledProgram> program;
  std::unique_ptr<runtime::DeviceMemory> device;
  std::unique_ptr<runtime::HostStaging> staging;
  std::vector<ir::Scalar> values;  // the call's arguments, pointing at the host buffers
  std::vector<emulator::MemoryRegion> regions;
  bool strict = false;
  void run() { program->run(values.data(), values.size(), regions, strict, staging.get()); }
};

// The GPU memory one emulated call stages through host memory (runtime/host_staging.h): the
// tensors in device memory and the device allocations that pointer arguments point into. Their
// host parameters (data pointers) and memory regions are rewritten to the host copies; device
// addresses the kernels find in memory are resolved by the staging (map()).
class DeviceStaging {
 public:
  bool empty() const { return !staging_; }
  // The emulator's map of device addresses: staging starts, with nothing staged yet, so that the
  // kernels may still reach device memory through pointers they load.
  const emulator::DeviceAddressMap* map() {
    if (!staging_) start(0);
    return staging_.get();
  }
  // Tensor data slot `slot`, whose memory region (device addresses) is regions[region].
  void add_tensor(size_t slot, size_t region, const emulator::MemoryRegion& r) {
    if (r.end <= r.begin) return;  // an empty tensor: nothing to read, its pointer is never used
    start(r.begin);
    staging_->add(r.begin, r.end);
    slots_.push_back(slot);
    regions_.push_back(region);
  }
  // Pointer slot `slot` holding `address`: its allocation is staged when it is device memory.
  void add_pointer(size_t slot, uintptr_t address) {
    const runtime::DeviceAllocation a = runtime::device_allocation_of(address);
    if (!a.device) return;
    start(address, a.context);
    staging_->add(a.begin, a.begin + a.size);
    slots_.push_back(slot);
  }
  void copy_in(ir::Scalar* vals, std::vector<emulator::MemoryRegion>& regions) {
    staging_->copy_in();
    to_host_copies(vals, regions);
  }
  void copy_out() { staging_->copy_out(); }
  // Records the call into the CUDA graph being captured on `stream` instead of running it.
  void capture(void* stream, std::shared_ptr<runtime::CompiledProgram> program, bool strict, const ir::Scalar* vals,
               size_t num_vals, std::vector<emulator::MemoryRegion> regions) {
    map();
    auto call = std::make_unique<CapturedCall>();
    call->program = std::move(program);
    call->values.assign(vals, vals + num_vals);
    call->regions = std::move(regions);
    call->strict = strict;
    CapturedCall* c = call.get();
    staging_->capture(stream, [c] { c->run(); });
    to_host_copies(c->values.data(), c->regions);
    call->device = std::move(device_);
    call->staging = std::move(staging_);
    c->device->keep_while_graph_lives(stream, call.release(), [](void* p) { delete static_cast<CapturedCall*>(p); });
  }

 private:
  void start(uintptr_t address, void* context = nullptr) {
    if (staging_) return;
    if (!context) context = runtime::device_allocation_of(address).context;
    device_ = runtime::cuda_device_memory(context);
    staging_ = std::make_unique<runtime::HostStaging>(*device_);
  }
  void to_host_copies(ir::Scalar* vals, std::vector<emulator::MemoryRegion>& regions) {
    for (size_t slot : slots_) vals[slot] = ir::Scalar::of_int(int64_t(staging_->host_address(uintptr_t(vals[slot].i))));
    for (size_t k : regions_) {
      emulator::MemoryRegion& r = regions[k];
      const uintptr_t size = r.end - r.begin;
      r.begin = staging_->host_address(r.begin);
      r.end = r.begin + size;
    }
  }
  std::unique_ptr<runtime::DeviceMemory> device_;
  std::unique_ptr<runtime::HostStaging> staging_;
  std::vector<size_t> slots_, regions_;
};


// The stream a call's launches go to (`streams`: its stream slots' values) when it is being
// captured into a CUDA graph, else null.
inline void* capturing_stream(const std::vector<int64_t>& streams) {
  for (int64_t handle : streams) {
    void* stream = reinterpret_cast<void*>(uintptr_t(handle));
    if (handle && runtime::stream_is_capturing(stream)) return stream;
  }
  return nullptr;
}

}  // namespace opencute::bindings
