#include "runtime/host_staging.h"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "emulator/diagnostics.h"
#include "runtime/cuda_driver.h"

namespace opencute::runtime {
namespace {

constexpr uintptr_t kAlignment = 1024;  // the largest alignment PTX asks of an address (swizzled tiles)
constexpr uintptr_t kPage = 4096;       // the granule of host_mapped's answers

// Page-locked buffers whose graph is gone. They are released by a graph's destructor callback,
// where CUDA may not be called, so they are freed later, when a staged call next waits for the device.
std::mutex unfreed_mu;
std::vector<void*> unfreed;

void free_released_host_buffers() {
  std::vector<void*> now;
  {
    std::lock_guard<std::mutex> lock(unfreed_mu);
    now.swap(unfreed);
  }
  for (void* p : now) CudaDriver::get().mem_free_host(p);
}

class CudaDeviceMemory final : public DeviceMemory {
 public:
  explicit CudaDeviceMemory(void* context) : context_(context) {}
  void synchronize() override {
    enter();
    CudaDriver::get().context_synchronize();
    free_released_host_buffers();  // not inside a capture: freeing may wait for the device
  }
  void copy_to_host(void* host, uintptr_t device, size_t bytes) override {
    enter();
    CudaDriver::get().memcpy_dtoh(host, reinterpret_cast<const void*>(device), bytes);
  }
  void copy_to_device(uintptr_t device, const void* host, size_t bytes) override {
    enter();
    CudaDriver::get().memcpy_htod(reinterpret_cast<void*>(device), host, bytes);
  }
  Range allocation_of(uintptr_t address) override {
    const DeviceAllocation a = device_allocation_of(address);
    if (!a.device) return {};
    if (!context_) context_ = a.context;
    return {a.begin, a.size};
  }
  std::shared_ptr<unsigned char> allocate_host(size_t bytes) override {
    if (void* p = CudaDriver::get().mem_alloc_host(bytes)) {
      return std::shared_ptr<unsigned char>(static_cast<unsigned char*>(p), [](unsigned char* q) {
        std::lock_guard<std::mutex> lock(unfreed_mu);
        unfreed.push_back(q);
      });
    }
    return DeviceMemory::allocate_host(bytes);  // pageable: the copies are still stream-ordered
  }
  void copy_to_host_async(void* host, uintptr_t device, size_t bytes, void* stream) override {
    enter();
    CudaDriver::get().memcpy_dtoh_async(host, reinterpret_cast<const void*>(device), bytes, stream);
  }
  void copy_to_device_async(uintptr_t device, const void* host, size_t bytes, void* stream) override {
    enter();
    CudaDriver::get().memcpy_htod_async(reinterpret_cast<void*>(device), host, bytes, stream);
  }
  void launch_host_function(void* stream, void (*fn)(void*), void* data) override {
    enter();
    CudaDriver::get().launch_host_function(stream, fn, data);
  }
  void keep_while_graph_lives(void* stream, void* owner, void (*destroy)(void*)) override {
    CudaDriver::get().graph_keep_object(stream, owner, destroy);  // else kept for the process
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

bool stream_is_capturing(void* stream) {
  try {
    return CudaDriver::get().available() && CudaDriver::get().stream_is_capturing(stream);
  } catch (const CudaError&) {
    return false;  // the legacy stream beside another stream's capture: the ordinary path reports it
  }
}

bool DeviceMemory::host_mapped(uintptr_t address) {
  // A read of one byte through the kernel fails with EFAULT where a load would crash: unmapped
  // pages, and the inaccessible reservations that hold the GPU's share of a unified address space.
  char byte;
  struct iovec local = {&byte, 1};
  struct iovec remote = {reinterpret_cast<void*>(address), 1};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1) return true;
  if (errno == EFAULT) return false;
  // Where the call is not allowed: msync answers ENOMEM for a page no mapping holds.
  static const uintptr_t page_size = uintptr_t(sysconf(_SC_PAGESIZE));
  void* page = reinterpret_cast<void*>(address & ~(page_size - 1));
  return msync(page, 1, MS_ASYNC) == 0 || errno != ENOMEM;
}

std::shared_ptr<unsigned char> DeviceMemory::allocate_host(size_t bytes) {
  return std::shared_ptr<unsigned char>(new unsigned char[bytes], std::default_delete<unsigned char[]>());
}

void DeviceMemory::copy_to_host_async(void*, uintptr_t, size_t, void*) {
  throw std::logic_error("this device cannot copy in stream order");
}
void DeviceMemory::copy_to_device_async(uintptr_t, const void*, size_t, void*) {
  throw std::logic_error("this device cannot copy in stream order");
}
void DeviceMemory::launch_host_function(void*, void (*)(void*), void*) {
  throw std::logic_error("this device cannot run host functions in stream order");
}
void DeviceMemory::keep_while_graph_lives(void*, void*, void (*)(void*)) {}

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

namespace {
std::atomic<uint64_t> next_staging_id{1};

// Each emulator thread's last answer of host_address(address, bytes): the span (or host page) it
// fell in. A kernel's accesses come in runs over one buffer (a TMA box is one lookup per element),
// which this serves without the lock.
struct LastAnswer {
  uint64_t staging = 0;  // HostStaging::id_, 0 for none
  uintptr_t begin = 0, end = 0;
  uintptr_t host = 0;  // what `begin` stands for (begin itself for host memory)
};
thread_local LastAnswer last_answer;
}  // namespace

HostStaging::HostStaging(DeviceMemory& device) : device_(device), id_(next_staging_id.fetch_add(1)) {}

void HostStaging::add(uintptr_t begin, uintptr_t end) {
  if (end <= begin) return;
  spans_.push_back(Span{begin, end, nullptr, nullptr, nullptr});
}

void HostStaging::merge_spans() {
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
}

void HostStaging::allocate(Span& s, bool for_capture) {
  const size_t n = s.end - s.begin;
  // The host copy keeps the device address's alignment up to kAlignment bytes: kernels check
  // the alignment of what they address (a tensor map must be 64-byte aligned, TMA tiles 128).
  if (for_capture) {
    s.storage = device_.allocate_host(n + kAlignment);
  } else {
    s.storage = std::shared_ptr<unsigned char>(new unsigned char[n + kAlignment], std::default_delete<unsigned char[]>());
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(s.storage.get());
  s.host = s.storage.get() + ((s.begin - base) & (kAlignment - 1));
}

void HostStaging::copy_in() {
  merge_spans();
  if (spans_.empty()) return;
  device_.synchronize();  // the inputs may still be being written by the device
  synchronized_ = true;
  for (Span& s : spans_) {
    const size_t n = s.end - s.begin;
    allocate(s, false);
    s.original.reset(new unsigned char[n]);
    device_.copy_to_host(s.host, s.begin, n);
    std::memcpy(s.original.get(), s.host, n);
  }
  copied_in_ = true;
}

const HostStaging::Span* HostStaging::span_holding(uintptr_t a) const {
  // The last span beginning at or before `a` (spans are sorted and disjoint).
  auto it = std::upper_bound(spans_.begin(), spans_.end(), a, [](uintptr_t v, const Span& s) { return v < s.begin; });
  if (it == spans_.begin()) return nullptr;
  const Span& s = *(it - 1);
  if (a > s.end || !s.host) return nullptr;
  return &s;
}

uintptr_t HostStaging::host_address(uintptr_t a) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  const Span* s = span_holding(a);
  return s ? reinterpret_cast<uintptr_t>(s->host) + (a - s->begin) : a;
}

uintptr_t HostStaging::host_address(uintptr_t address, size_t bytes) const {
  LastAnswer& last = last_answer;
  if (last.staging == id_ && address >= last.begin && address + bytes <= last.end) return last.host + (address - last.begin);
  const uintptr_t page = address & ~(kPage - 1);
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    const Span* s = span_holding(address);
    if (s && address < s->end) {
      if (address + bytes > s->end)
        throw emulator::ExecutionError("it runs over the end of the " + std::to_string(s->end - s->begin) +
                                       " bytes of device memory at " + emulator::hex(s->begin) + " staged for the launch");
      last = LastAnswer{id_, s->begin, s->end, reinterpret_cast<uintptr_t>(s->host)};
      return reinterpret_cast<uintptr_t>(s->host) + (address - s->begin);
    }
    if (host_pages_.count(page) && ((address + bytes - 1) & ~(kPage - 1)) == page) {
      last = LastAnswer{id_, page, page + kPage, page};
      return address;
    }
  }
  // First contact with this memory: one thread at a time asks the driver and stages it.
  std::unique_lock<std::shared_mutex> lock(mu_);
  // A host function replaying a captured launch may not call CUDA: only what was staged is known.
  if (!captured_) {
    const DeviceMemory::Range a = device_.allocation_of(address);
    if (a.size) return stage_allocation(a, address, bytes);
  }
  if (!device_.host_mapped(address) || !device_.host_mapped(address + bytes - 1))
    throw emulator::ExecutionError(
        std::string("the address is neither host memory nor device memory staged for the emulated launch") +
        (captured_ ? " (a launch captured into a CUDA graph stages only the memory its arguments reach: pass that "
                     "memory as a tensor argument)"
                   : ""));
  for (uintptr_t p = page; p <= ((address + bytes - 1) & ~(kPage - 1)); p += kPage) host_pages_.insert(p);
  return address;
}

uintptr_t HostStaging::stage_allocation(const DeviceMemory::Range& a, uintptr_t address, size_t bytes) const {
  // Under mu_, held exclusively. Another thread may have staged the allocation meanwhile.
  if (!span_holding(address) || address >= span_holding(address)->end) {
    if (!synchronized_) {
      device_.synchronize();
      synchronized_ = true;
    }
    // The parts of the allocation that no span covers yet, each its own span: an address inside a
    // span keeps the host copy it already has (an argument viewing this allocation).
    std::vector<Span> gaps;
    uintptr_t at = a.begin;
    const uintptr_t end = a.begin + a.size;
    for (const Span& s : spans_) {
      if (s.end <= at || s.begin >= end) continue;
      if (s.begin > at) gaps.push_back(Span{at, s.begin, nullptr, nullptr, nullptr});
      at = std::max(at, s.end);
    }
    if (at < end) gaps.push_back(Span{at, end, nullptr, nullptr, nullptr});
    for (Span& g : gaps) {
      const size_t n = g.end - g.begin;
      const_cast<HostStaging*>(this)->allocate(g, false);
      g.original.reset(new unsigned char[n]);
      device_.copy_to_host(g.host, g.begin, n);
      std::memcpy(g.original.get(), g.host, n);
      spans_.push_back(std::move(g));
    }
    std::sort(spans_.begin(), spans_.end(), [](const Span& x, const Span& y) { return x.begin < y.begin; });
  }
  const Span* s = span_holding(address);
  if (!s || address + bytes > s->end)
    throw emulator::ExecutionError("it runs over the end of the device memory staged for the launch at " +
                                   emulator::hex(s ? s->begin : address));
  return reinterpret_cast<uintptr_t>(s->host) + (address - s->begin);
}

size_t HostStaging::copy_out() {
  if (!copied_in_ && spans_.empty()) return 0;
  size_t copied = 0;
  for (Span& s : spans_) {
    if (!s.original) continue;
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

namespace {
std::mutex replay_error_mu;
std::string replay_error;
}  // namespace

void HostStaging::capture(void* stream, std::function<void()> launch) {
  merge_spans();
  captured_ = true;
  captured_launch_ = std::move(launch);
  for (Span& s : spans_) {
    allocate(s, true);
    device_.copy_to_host_async(s.host, s.begin, s.end - s.begin, stream);
  }
  device_.launch_host_function(stream, &HostStaging::run_captured, this);
  for (Span& s : spans_) device_.copy_to_device_async(s.begin, s.host, s.end - s.begin, stream);
}

void HostStaging::run_captured(void* self) {
  try {
    static_cast<HostStaging*>(self)->captured_launch_();
  } catch (const std::exception& e) {
    // A host function cannot raise into the program: the error is printed and kept for the next call.
    std::fprintf(stderr, "OpenCuTe: an emulated launch replayed from a CUDA graph failed: %s\n", e.what());
    std::lock_guard<std::mutex> lock(replay_error_mu);
    replay_error = e.what();
  }
}

std::string HostStaging::take_replay_error() {
  std::lock_guard<std::mutex> lock(replay_error_mu);
  std::string e;
  e.swap(replay_error);
  return e;
}

std::vector<std::pair<uintptr_t, uintptr_t>> HostStaging::spans() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  for (const Span& s : spans_) out.emplace_back(s.begin, s.end);
  return out;
}

}  // namespace opencute::runtime
