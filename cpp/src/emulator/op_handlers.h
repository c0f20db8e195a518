// How op families plug into the emulator: each family's file fills a HandlerTable with one handler
// per instruction kind of the emulator's program (device_program.h) it runs
// (register_<family>_handlers); warp_interpreter.cpp builds the table from all of them once, and
// run_warp calls the handler of each instruction: an array index, then the handler runs the
// instruction on the warp's active lanes and says how the warp goes on.
//
// The table is keyed by the instruction kind, not the IR OpCode: lowering (device_lowering.cpp)
// turns one op into kinds of its own (an i32 add into AddI32, a for loop into LoopBegin, ForTest,
// ForStep, Jump, LoopEnd and parallel moves), and the arch families run their ops through one kind
// each whose `code` says which.
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

// Runs instruction `i` on the active lanes of `warp` (of block `w` in launch `c`).
using RunInstFn = Flow (*)(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp);

class HandlerTable {
 public:
  // Throws std::logic_error when `kind` already has a handler: one family owns each kind.
  void add(K kind, RunInstFn fn);
  RunInstFn find(K kind) const { return fns_[size_t(kind)]; }  // nullptr when none
  // Throws std::logic_error when some kind has no handler (every kind the lowering emits runs).
  void check_complete() const;

 private:
  std::array<RunInstFn, kNumInstKinds> fns_{};
};

// Every family's handlers (built on first use).
const HandlerTable& emulator_handlers();

// The core families.
// Integer and float arithmetic, compares, select, fma, math functions, moves, vector lanes:
// scalar_ops.cpp.
void register_scalar_handlers(HandlerTable& t);
// Cast and bitcast: conversions.cpp.
void register_conversion_handlers(HandlerTable& t);
// Loads, stores, pointer arithmetic, local arrays and shared-memory addresses: memory_ops.cpp.
void register_memory_handlers(HandlerTable& t);
// Atomic read-modify-write: device_atomics.cpp.
void register_atomic_handlers(HandlerTable& t);
// The mask stack of if / else and loops, jumps, return: control_flow.cpp.
void register_control_flow_handlers(HandlerTable& t);
// Thread and block indices, sync_threads and named barriers, warp shuffle and vote: thread_ops.cpp.
void register_thread_handlers(HandlerTable& t);
// printf and assert: printf_assert.cpp.
void register_printf_assert_handlers(HandlerTable& t);

// The architecture families.
// SM80 copies (cp.async, commit / wait groups, ldmatrix, stmatrix): sm80_copy.cpp.
void register_sm80_copy_handlers(HandlerTable& t);
// SM80 mma.sync: sm80_mma.cpp.
void register_sm80_mma_handlers(HandlerTable& t);
void register_sm120_mma_handlers(HandlerTable& t);
// SM90 warpgroup MMA (wgmma.mma_async, fence, commit / wait groups): sm90_mma.cpp.
void register_sm90_mma_handlers(HandlerTable& t);
// SM90 asynchronous machinery (mbarrier ops, fences, TMA): sm90_async.cpp.
void register_sm90_async_handlers(HandlerTable& t);
// The Hopper warp / CTA and cluster ops (elect, setmaxnreg, prmt, cluster registers and barrier,
// mapa): sm90_warp.cpp.
void register_sm90_warp_handlers(HandlerTable& t);
// TMA descriptors in device memory (copy, tensormap.replace, cp_fenceproxy): sm90_tensormap.cpp.
void register_sm90_tensormap_handlers(HandlerTable& t);
// Blackwell cluster launch control (try_cancel, query_cancel): cluster_launch_control.cpp.
void register_cluster_launch_control_handlers(HandlerTable& t);
// Blackwell tensor memory (alloc / dealloc / relinquish, tcgen05.ld / st / cp, waits and fences):
// sm100_tmem.cpp.
void register_sm100_tmem_handlers(HandlerTable& t);
// tcgen05.mma and tcgen05.commit: sm100_mma.cpp.
void register_sm100_mma_handlers(HandlerTable& t);

// A warp's registers seen lane by lane: register `reg` of lane `lane` (SoA, device_emulator.h).
struct LaneRegs {
  Scalar* regs;
  Scalar& operator()(int reg, int lane) const { return regs[size_t(reg) * kWarp + size_t(lane)]; }
};

// The active lanes of a mask, lowest first: FOR_LANES(m) { int l = LANE; ... }.
#define FOR_LANES(m) for (uint32_t mm_ = (m); mm_; mm_ &= mm_ - 1)
#define LANE __builtin_ctz(mm_)

}  // namespace opencute::emulator
