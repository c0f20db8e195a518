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
// Device addresses that the kernel finds in memory (a table of pointers, a tensor map written on
// the device) are not arguments: the staging is the emulator's DeviceAddressMap, which resolves
// each access to such an address to its host copy. An allocation that no argument reaches is
// staged whole on its first access (device memory reached only through device memory); an
// address that is neither staged, nor device memory, nor mapped host memory is an error, where
// dereferencing it would crash the process.
//
// A launch on a stream that is being captured into a CUDA graph cannot wait for the device nor
// copy synchronously; it is recorded instead (capture()): stream-ordered copies of the spans to
// host memory, a host function that runs the emulated launch, and copies of every span back.
// Each replay of the graph repeats the three. Only memory the arguments reach is staged then,
// since a host function may not call CUDA.
//
// The device is reached through DeviceMemory (the CUDA driver in a call, a fake in tests), so
// the merging, address translation, write-back and capture rules are tested without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "emulator/device_emulator.h"

namespace opencute::runtime {

// What staging needs of the device.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // Waits for the device's pending work (the framework's current stream included) to finish.
  virtual void synchronize() = 0;
  virtual void copy_to_host(void* host, uintptr_t device, size_t bytes) = 0;
  virtual void copy_to_device(uintptr_t device, const void* host, size_t bytes) = 0;
  // The device allocation holding `address` as [begin, begin + size), or size 0 when `address` is
  // not plain device memory (host, managed or unknown memory).
  struct Range {
    uintptr_t begin = 0;
    size_t size = 0;
  };
  virtual Range allocation_of(uintptr_t address) {
    (void)address;
    return {};
  }
  // Whether the host page holding `address` is mapped in this process (readable without a crash).
  virtual bool host_mapped(uintptr_t address);

  // Stream-ordered work, for a launch recorded into a CUDA graph captured on `stream` (a CUstream).
  // Host memory the copies may use while the graph lives (page-locked where the device allows).
  virtual std::shared_ptr<unsigned char> allocate_host(size_t bytes);
  virtual void copy_to_host_async(void* host, uintptr_t device, size_t bytes, void* stream);
  virtual void copy_to_device_async(uintptr_t device, const void* host, size_t bytes, void* stream);
  // fn(data) runs on the host in stream order; it may not call CUDA.
  virtual void launch_host_function(void* stream, void (*fn)(void*), void* data);
  // Hands `owner` to the graph being captured on `stream`: destroy(owner) runs when the graph is
  // destroyed (never, where the driver cannot tell).
  virtual void keep_while_graph_lives(void* stream, void* owner, void (*destroy)(void*));
};

// The CUDA driver as DeviceMemory, in `context` (a CUcontext: the staged memory's): synchronizing
// it waits for all of its streams, the framework's current stream among them. A null context is
// taken from the first allocation it is asked about.
std::unique_ptr<DeviceMemory> cuda_device_memory(void* context);
// True when `stream` (a CUstream) is being captured into a CUDA graph. Never throws.
bool stream_is_capturing(void* stream);

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

class HostStaging final : public emulator::DeviceAddressMap {
 public:
  explicit HostStaging(DeviceMemory& device);
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

  // The emulator's DeviceAddressMap (after copy_in or capture): a staged address's host copy;
  // else, outside a capture, a device allocation staged now, whole (the parts of it no span
  // covers yet); else the address itself when its host page is mapped; else ExecutionError.
  uintptr_t host_address(uintptr_t address, size_t bytes) const override;

  // Records on `stream`, which is being captured into a CUDA graph, the staged launch: copies of
  // every span into host buffers, a host function calling `launch` (which reads the host copies
  // through host_address), and copies of every span back (whole: the graph cannot know the
  // launch's writes in advance). `launch` reports failure by throwing; the message is printed and
  // kept (take_replay_error). The staging must outlive the graph (DeviceMemory::keep_while_graph_lives).
  void capture(void* stream, std::function<void()> launch);
  // What the last replayed launch of any captured staging threw, or empty; cleared by reading.
  static std::string take_replay_error();

  // The merged spans, [begin, end) each (after copy_in), for tests and messages.
  std::vector<std::pair<uintptr_t, uintptr_t>> spans() const;

 private:
  struct Span {
    uintptr_t begin, end;
    std::shared_ptr<unsigned char> storage;     // holds `host`
    unsigned char* host = nullptr;              // what the launch reads and writes
    std::unique_ptr<unsigned char[]> original;  // what copy_in read, to find the writes
  };
  void merge_spans();
  void allocate(Span& s, bool for_capture);
  const Span* span_holding(uintptr_t a) const;  // under mu_
  uintptr_t stage_allocation(const DeviceMemory::Range& a, uintptr_t address, size_t bytes) const;  // under mu_
  static void run_captured(void* self);

  DeviceMemory& device_;
  const uint64_t id_;  // unique for the process: names this staging in each thread's cache of its last answer
  // Sorted and disjoint after copy_in. Spans staged during the launch (host_address) are added
  // under mu_, from the emulator's threads; their host buffers never move.
  mutable std::vector<Span> spans_;
  mutable std::shared_mutex mu_;
  mutable std::set<uintptr_t> host_pages_;  // pages found to be mapped host memory
  mutable bool synchronized_ = false;
  bool copied_in_ = false;
  bool captured_ = false;  // recorded into a graph: no CUDA call while the launch runs
  std::function<void()> captured_launch_;
};

}  // namespace opencute::runtime
