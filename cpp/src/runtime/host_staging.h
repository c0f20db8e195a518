// GPU memory staged through host memory around a launch on the CPU emulator, so that a program
// whose kernels are emulated can still be given CUDA tensors and device pointers (NVIDIA's
// examples allocate their data with torch on the GPU and check it there).
//
// A call collects the device spans its kernels may reach (each tensor's extent, each device
// pointer's allocation), then copies them to host memory after the GPU's pending work, runs the
// emulated launch on the host copies, and copies back only the bytes that the launch changed.
// Spans that overlap become one host buffer, so two arguments viewing the same storage stay
// views of one buffer (a write through one is seen through the other, as on the GPU).
//
// The device is reached through DeviceMemory (the CUDA driver in a call, a fake in tests), so
// the merging, address translation and write-back rules are tested without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace opencute::runtime {

// What staging needs of the device.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // Waits for the device's pending work (the framework's current stream included) to finish.
  virtual void synchronize() = 0;
  virtual void copy_to_host(void* host, uintptr_t device, size_t bytes) = 0;
  virtual void copy_to_device(uintptr_t device, const void* host, size_t bytes) = 0;
};

// The CUDA driver as DeviceMemory, in `context` (a CUcontext: the staged memory's): synchronizing
// it waits for all of its streams, the framework's current stream among them.
std::unique_ptr<DeviceMemory> cuda_device_memory(void* context);

// Where a pointer points, as the CUDA driver knows it: device memory (with its allocation), or
// anything else (host memory, managed memory, an address the driver does not know). Never throws;
// without a driver every address is `Other`.
struct DeviceAllocation {
  bool device = false;  // plain device memory: the emulator cannot read it
  uintptr_t begin = 0;
  size_t size = 0;
  void* context = nullptr;  // the CUcontext it belongs to
};
DeviceAllocation device_allocation_of(uintptr_t address);

class HostStaging {
 public:
  explicit HostStaging(DeviceMemory& device) : device_(device) {}
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // A device span [begin, end) the launch may read or write. Empty spans are ignored.
  void add(uintptr_t begin, uintptr_t end);
  bool empty() const { return spans_.empty(); }

  // Merges overlapping spans, waits for the device, copies every span into host memory.
  void copy_in();
  // The host address that stands for device address `a` after copy_in (an address inside, or
  // one past the end of, a span added); any other address is returned unchanged.
  uintptr_t host_address(uintptr_t a) const;
  // Copies back to the device the bytes of each span that differ from what copy_in read (the
  // launch's writes), then waits for the copies. Returns the number of bytes copied back.
  size_t copy_out();

  // The merged spans, [begin, end) each (after copy_in), for tests and messages.
  std::vector<std::pair<uintptr_t, uintptr_t>> spans() const;

 private:
  struct Span {
    uintptr_t begin, end;
    std::unique_ptr<unsigned char[]> storage;   // holds `host`
    unsigned char* host = nullptr;              // what the launch reads and writes
    std::unique_ptr<unsigned char[]> original;  // what copy_in read, to find the writes
  };
  DeviceMemory& device_;
  std::vector<Span> spans_;  // sorted and disjoint after copy_in
  bool copied_in_ = false;
};

}  // namespace opencute::runtime
