#include "runtime/host_staging.h"

#include <algorithm>
#include <cstring>

#include "runtime/cuda_driver.h"

namespace opencute::runtime {
namespace {

constexpr uintptr_t kAlignment = 1024;  // the largest alignment PTX asks of an address (swizzled tiles)

class CudaDeviceMemory final : public DeviceMemory {
 public:
  explicit CudaDeviceMemory(void* context) : context_(context) {}
  void synchronize() override {
    enter();
    CudaDriver::get().context_synchronize();
  }
  void copy_to_host(void* host, uintptr_t device, size_t bytes) override {
    enter();
    CudaDriver::get().memcpy_dtoh(host, reinterpret_cast<const void*>(device), bytes);
  }
  void copy_to_device(uintptr_t device, const void* host, size_t bytes) override {
    enter();
    CudaDriver::get().memcpy_htod(reinterpret_cast<void*>(device), host, bytes);
  }

 private:
  // The calling thread (a Python thread that may never have touched CUDA) needs a context.
  void enter() {
    if (context_) CudaDriver::get().ensure_context_current_on_this_thread(context_);
  }
  void* context_;
};

}  // namespace

std::unique_ptr<DeviceMemory> cuda_device_memory(void* context) {
  return std::make_unique<CudaDeviceMemory>(context);
}

DeviceAllocation device_allocation_of(uintptr_t address) {
  constexpr int kDeviceMemoryType = 2;  // CU_MEMORYTYPE_DEVICE
  const CudaDriver::PointerInfo info = CudaDriver::get().pointer_info(reinterpret_cast<const void*>(address));
  DeviceAllocation a;
  // Managed memory is host-addressable: the emulator reads it in place.
  if (info.memory_type != kDeviceMemoryType || info.managed || info.range_size == 0) return a;
  a.device = true;
  a.begin = info.range_begin;
  a.size = info.range_size;
  a.context = info.context;
  return a;
}

void HostStaging::add(uintptr_t begin, uintptr_t end) {
  if (end <= begin) return;
  spans_.push_back(Span{begin, end, nullptr, nullptr, nullptr});
}

void HostStaging::copy_in() {
  std::sort(spans_.begin(), spans_.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  // Overlapping spans become one: views of one storage share one host buffer. Touching spans stay
  // apart: two allocations can be neighbours in the address space, and one copy may not span both
  // (cuMemcpy answers CUDA_ERROR_INVALID_VALUE; NVIDIA's rmsnorm passes three such pointers).
  std::vector<Span> merged;
  for (Span& s : spans_) {
    if (!merged.empty() && s.begin < merged.back().end) merged.back().end = std::max(merged.back().end, s.end);
    else merged.push_back(std::move(s));
  }
  spans_ = std::move(merged);
  if (spans_.empty()) return;
  device_.synchronize();  // the inputs may still be being written by the device
  for (Span& s : spans_) {
    const size_t n = s.end - s.begin;
    // The host copy keeps the device address's alignment up to kAlignment bytes: kernels check
    // the alignment of what they address (a tensor map must be 64-byte aligned, TMA tiles 128).
    s.storage.reset(new unsigned char[n + kAlignment]);
    const uintptr_t base = reinterpret_cast<uintptr_t>(s.storage.get());
    s.host = s.storage.get() + ((s.begin - base) & (kAlignment - 1));
    s.original.reset(new unsigned char[n]);
    device_.copy_to_host(s.host, s.begin, n);
    std::memcpy(s.original.get(), s.host, n);
  }
  copied_in_ = true;
}

uintptr_t HostStaging::host_address(uintptr_t a) const {
  // The last span beginning at or before `a` (spans are sorted and disjoint).
  auto it = std::upper_bound(spans_.begin(), spans_.end(), a, [](uintptr_t v, const Span& s) { return v < s.begin; });
  if (it == spans_.begin()) return a;
  const Span& s = *(it - 1);
  if (a > s.end || !s.host) return a;
  return reinterpret_cast<uintptr_t>(s.host) + (a - s.begin);
}

size_t HostStaging::copy_out() {
  if (!copied_in_) return 0;
  size_t copied = 0;
  for (Span& s : spans_) {
    const size_t n = s.end - s.begin;
    const unsigned char* now = s.host;
    const unsigned char* was = s.original.get();
    // The first and last changed byte: one copy of the range between them. Bytes the launch did
    // not change are left alone on the device.
    size_t first = 0;
    while (first < n && now[first] == was[first]) ++first;
    if (first == n) continue;
    size_t last = n;
    while (now[last - 1] == was[last - 1]) --last;
    device_.copy_to_device(s.begin + first, now + first, last - first);
    copied += last - first;
  }
  // A copy from pageable memory may return before it lands: wait, so later work sees it.
  if (copied) device_.synchronize();
  return copied;
}

std::vector<std::pair<uintptr_t, uintptr_t>> HostStaging::spans() const {
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  for (const Span& s : spans_) out.emplace_back(s.begin, s.end);
  return out;
}

}  // namespace opencute::runtime
