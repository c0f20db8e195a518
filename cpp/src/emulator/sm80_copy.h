// CPU semantics of the SM80 copies (cp.async with its commit / wait groups, ldmatrix,
// stmatrix), per the PTX ISA. Private to the emulator: device_lowering.cpp calls
// lower_sm80_copy, the handler registered by register_sm80_copy_handlers runs Inst K::Sm80Copy
// through execute_sm80_copy, and check_access (diagnostics.cpp) consults the block's
// AsyncCopyTracker on every shared-memory access.
//
// cp.async model: a copy reads its source when issued and lands in shared memory when its
// thread's cp.async.wait_group retires the group holding it. Until then the destination bytes
// are "pending": any access to them (a load, a store, an ldmatrix, another cp.async) is a race
// on the GPU and raises an ExecutionError here. After the wait the bytes are visible to the
// issuing thread only; other threads may read them after the next block barrier.
// One exception: copies of other threads may write bytes already pending when they write the same
// values (a warp whose lanes all copy one broadcast scale into one word); the bytes stay pending
// until the last of those copies lands.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "emulator/device_program.h"

namespace opencute::emulator {

class AsyncCopyTracker {
 public:
  // Starts a block: no copies in flight over `smem_size` bytes at `smem`, `threads` threads.
  void reset(char* smem, size_t smem_size, unsigned threads);
  bool active() const { return active_; }

  // Issues a copy of `bytes` to shared address `dst`, whose first `src_bytes` come from `src`
  // (read now) and the rest are zero. Returns an error message, or "" when fine.
  std::string issue(unsigned thread, uintptr_t dst, const void* src, int src_bytes, int bytes, int line);
  void commit(unsigned thread);
  void wait(unsigned thread, int64_t pending_allowed);
  // Lands every cp.async the thread issued so far, committed or not, visible to all threads
  // (cp.async.mbarrier.arrive: completing them now is one order the hardware may choose, and the
  // mbarrier orders them before its waiters).
  void complete_all(unsigned thread);
  // A block barrier: completed copies become visible to every thread.
  void barrier();
  // "" when `thread` may access [addr, addr + bytes) of shared memory, else why not. A cp.async
  // passes the bytes it will write as `copied`: pending bytes of other threads' copies that will
  // land with the same values are no conflict.
  std::string check(unsigned thread, uintptr_t addr, size_t bytes, bool store,
                    const unsigned char* copied = nullptr) const;

 private:
  struct Copy {
    uintptr_t dst;
    int bytes;
    int64_t group;  // -1 until committed
    int line;
    unsigned char data[16];
  };
  enum : uint8_t { kFree = 0, kPending = 1, kPrivate = 2 };
  bool active_ = false;
  char* smem_ = nullptr;
  std::vector<uint8_t> state_;     // per shared byte
  std::vector<uint16_t> owner_;    // the issuing thread of a pending / private byte
  std::vector<int> line_;          // per shared byte: the user's line of the copy in flight
  std::vector<uint8_t> writers_;   // per pending byte: how many copies in flight write it
  std::vector<uint8_t> value_;     // per pending byte: the value they write
  std::vector<std::vector<Copy>> pending_;  // per thread
  std::vector<int64_t> committed_;          // per thread: groups committed so far
  std::vector<std::pair<size_t, int>> private_ranges_;  // (offset, bytes) to publish at the barrier

  // A copy of `thread` lands: its bytes take `landed` once no other copy still writes them.
  void land(const Copy& c, unsigned thread, uint8_t landed);
};

// What execute_sm80_copy needs of the warp it runs on.
struct Sm80WarpContext {
  Scalar* regs = nullptr;  // SoA: register r of lane l at regs[r * 32 + l]
  uint32_t mask = 0;       // active lanes
  unsigned first_thread = 0;
  AsyncCopyTracker* async = nullptr;
  // Bounds and alignment check of one access (raises); `smem` says it must be shared memory.
  // Returns the host address to access (a staged device address's host copy, else `addr`).
  std::function<uintptr_t(int lane, uintptr_t addr, size_t bytes, bool store, bool smem)> check;
  std::function<void(int lane, const std::string& what)> fail;  // raises
};

void execute_sm80_copy(const Inst& i, Sm80WarpContext& w);

// Lowers one of the SM80 copy ops into the program; false when `op` is not one.
bool lower_sm80_copy(DeviceEmulator::Program& p, const ir::Op& op);

}  // namespace opencute::emulator
