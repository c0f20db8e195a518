// Runs a kernel Function of the IR on the CPU: a SIMT emulator over the same IR the GPU backend
// lowers, so kernels run (and can be checked) on machines without a GPU.
//
// Construction lowers the structured IR once into a linear program of instructions over
// register numbers, with explicit mask-stack control instructions (if / else / end-if, loop
// entry, loop test, jump), like a GPU's reconvergence stack. Registers are SoA per warp:
// register r of lane l lives at regs[r * 32 + l]. Because the program is linear, a warp can
// stop at a barrier and resume at the next instruction.
//
// Scheduling: the 32 lanes of a warp run in lock-step under an active mask (divergent branches
// run each side with its mask, loops iterate while any lane is active). A block's warps run
// round-robin, each until it reaches sync_threads or ends; when every live warp waits at the
// barrier, all are released. Warps that end while others wait is an error naming the kernel and
// block. The blocks of one thread-block cluster (launch(cluster=...); without one, each block is
// its own cluster) run together on one host thread, their warps interleaved, so they can wait for
// each other (barrier.cluster; mbarriers) and reach each other's shared memory (mapa). A warp
// that waits parks at the waiting instruction, which runs again whenever the warp is resumed; a
// scheduling round in which no warp got further and no synchronisation object changed is a
// deadlock, reported with what each warp waits for, never a hang. Clusters are independent and
// are spread over a pool of host threads; a race-free kernel gives the same result for any
// thread count. Kernels that call printf run their blocks in
// order on one thread so that output is deterministic.
//
// Memory: global memory is host memory. Each load and store is checked for natural alignment
// and, when the launch registered the buffers the kernel may reach (tensor arguments with their
// extents), that the access lies inside one of them, inside the thread's local arrays, or inside
// the block's shared memory; otherwise it raises an ExecutionError naming the kernel, the block
// and thread indices and the address, instead of corrupting memory. A launch whose buffers are
// GPU memory copied to the host (runtime/host_staging.h) also gives the emulator a
// DeviceAddressMap: an address that no buffer covers, such as a device address the kernel loaded
// from memory, is then looked up there and accessed at the host address that stands for it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulator/host_interpreter.h"
#include "ir/ir.h"
#include "ir/scalar_semantics.h"

namespace opencute::emulator {

// A buffer a kernel may access: [begin, end) in host memory.
struct MemoryRegion {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  std::string name;  // e.g. "tensor argument `a` (#0)", for error messages
};

// Device memory the launch reaches through host copies (runtime/host_staging.h). The kernel's own
// arguments already point at the copies; device addresses that it reads from memory or computes
// (a table of pointers, a tensor map written on the device) still name the device, and every
// access the launch's buffers do not cover is resolved here.
class DeviceAddressMap {
 public:
  virtual ~DeviceAddressMap() = default;
  // The host address to access for the `bytes` at `address`, or `address` itself when it is host
  // memory the launch may access in place. Thread-safe. Throws ExecutionError (without the
  // kernel's place, which the caller adds) when it is neither, or runs out of a staged span.
  virtual uintptr_t host_address(uintptr_t address, size_t bytes) const = 0;
};

struct EmulatorConfig {
  // Buffers the kernel may reach. With `strict`, an access outside all of them (and outside
  // local and shared memory) is an error; without, unknown addresses are trusted (a kernel given
  // raw pointers whose extents nobody knows).
  const std::vector<MemoryRegion>* regions = nullptr;
  bool strict = false;
  // Device memory staged through host memory, or null when the launch reaches none.
  const DeviceAddressMap* device_memory = nullptr;
  int threads = 0;  // host threads for blocks; 0: default_emulator_threads()
};

// OPENCUTE_EMULATOR_THREADS when set, else std::thread::hardware_concurrency().
int default_emulator_threads();

class DeviceEmulator {
 public:
  // Throws ExecutionError when the kernel uses an operation the emulator does not support.
  explicit DeviceEmulator(const ir::Function& kernel);
  ~DeviceEmulator();

  // Runs the whole grid; returns when every block has finished. Thread-safe.
  void launch(const LaunchRequest& request, const EmulatorConfig& config) const;

  const std::string& name() const { return kernel_.name; }
  bool has_printf() const { return has_printf_; }
  int num_registers() const { return num_regs_; }
  size_t num_instructions() const;

  // Shared memory hook: the IR has no op that names shared memory yet. Each block gets a
  // zero-initialised buffer of the launch's dynamic smem size, and accesses inside it pass the
  // bounds check; an op that yields the block's shared base pointer would read it from
  // Worker::smem (see execution_state.h).
  struct Program;

 private:
  const ir::Function& kernel_;
  std::unique_ptr<Program> program_;
  int num_regs_ = 0;
  bool has_printf_ = false;
  bool forges_pointers_ = false;  // makes global pointers from integers (see forges_global_pointers)
};

}  // namespace opencute::emulator
