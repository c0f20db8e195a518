// What an op family's CPU semantics (scalar_ops.cpp, memory_ops.cpp, sm80_copy.cpp, ...) give the
// warp interpreter: one handler per instruction kind of the emulator's program (device_program.h),
// which runs the instruction on the active lanes of a warp and says how the warp goes on. Each
// family registers its handlers in an OpHandlerTable; warp_interpreter.cpp builds the table once,
// and its dispatch is an array index per instruction.
#pragma once
#include <array>
#include <cstdint>

#include "emulator/device_program.h"

namespace opencute::emulator {

struct LaunchCtx;
struct Worker;
struct Warp;

// How the warp goes on after an instruction.
enum class Flow : uint8_t {
  Next,    // to the next instruction
  Jumped,  // to the pc the handler set
  Stop,    // the warp stops running (a barrier, a wait, its end); the handler set its state and pc
};

using OpHandler = Flow (*)(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp);

class OpHandlerTable {
 public:
  void add(K kind, OpHandler handler);  // a kind has one handler: a second one is a logic_error
  // Throws logic_error when some instruction kind has no handler.
  void check_complete() const;
  const OpHandler* data() const { return handlers_.data(); }

 private:
  std::array<OpHandler, kNumInstKinds> handlers_{};
};

// Every family's handlers, registered once (warp_interpreter.cpp).
const OpHandlerTable& op_handlers();

// Each op family's handlers, in its own file.
// Integer and float arithmetic, compares, selects, casts, math functions, moves, vectors and
// special registers: scalar_ops.cpp.
void register_scalar_handlers(OpHandlerTable& t);
// Loads, stores, pointer arithmetic, local and shared-memory addresses: memory_ops.cpp.
void register_memory_handlers(OpHandlerTable& t);
// The mask stack (if / else, loops, jumps), return, sync_threads and named barriers: control_flow.cpp.
void register_control_flow_handlers(OpHandlerTable& t);
// shfl.sync and vote.sync: shuffle_vote.cpp.
void register_shuffle_vote_handlers(OpHandlerTable& t);
// Atomic read-modify-write: device_atomics.cpp.
void register_atomic_handlers(OpHandlerTable& t);
// Device printf and assert: printf_assert.cpp.
void register_printf_assert_handlers(OpHandlerTable& t);
// SM80 copies (cp.async, commit / wait groups, ldmatrix, stmatrix): sm80_copy.cpp.
void register_sm80_copy_handlers(OpHandlerTable& t);
// SM80 mma.sync: sm80_mma.cpp.
void register_sm80_mma_handlers(OpHandlerTable& t);
// SM90 warpgroup MMA (wgmma.mma_async, fence, commit / wait groups): sm90_mma.cpp.
void register_sm90_mma_handlers(OpHandlerTable& t);
// SM90 asynchronous machinery (mbarrier ops, fences, TMA): sm90_async.cpp.
void register_sm90_async_handlers(OpHandlerTable& t);
// TMA descriptors in device memory (copy, tensormap.replace, cp_fenceproxy): sm90_tensormap.cpp.
void register_sm90_tensormap_handlers(OpHandlerTable& t);
// The Hopper warp / CTA and cluster ops (elect, setmaxnreg, prmt, cluster registers and barrier,
// mapa): sm90_warp.cpp.
void register_sm90_warp_handlers(OpHandlerTable& t);

// A warp's registers seen lane by lane: register `reg` of lane `lane` (SoA, device_emulator.h).
struct LaneRegs {
  Scalar* regs;
  Scalar& operator()(int reg, int lane) const { return regs[size_t(reg) * kWarp + size_t(lane)]; }
};

// The active lanes of a mask, lowest first: FOR_LANES(m) { int l = LANE; ... }.
#define FOR_LANES(m) for (uint32_t mm_ = (m); mm_; mm_ &= mm_ - 1)
#define LANE __builtin_ctz(mm_)

}  // namespace opencute::emulator
