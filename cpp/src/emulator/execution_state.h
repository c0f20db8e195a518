// The running state of a launch on the CPU emulator: warps (program counter, masks, registers),
// the blocks of a cluster (shared memory, barriers, copies in flight) and the launch itself.
// Private to the emulator: block_scheduler.cpp creates and schedules it, warp_interpreter.cpp
// and the op handlers (op_handlers.h) run instructions on it, diagnostics.cpp describes it.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "emulator/device_program.h"
#include "emulator/sm80_copy.h"
#include "emulator/sm90_async.h"
#include "emulator/sm90_mma.h"
#include "emulator/sm100_mma.h"
#include "emulator/sm100_mma_completion.h"
#include "emulator/sm100_tmem.h"

namespace opencute::emulator {

struct MaskEntry {
  uint32_t saved;  // mask at entry of the if / loop
  uint32_t other;  // the else-side mask of an if
};

// Parked: the warp waits at the instruction at its pc (barrier.cluster.wait, ...), which runs
// again each time the scheduler resumes the warp and parks it again while it cannot complete.
// AtMbarrier: parked by a blocking mbarrier wait; Spinning: parked after failed try/test waits
// while no barrier changed (emulator/sm90_async.h).
enum class WarpState : uint8_t { Running, AtBarrier, AtNamedBarrier, Parked, AtMbarrier, Spinning, Done };
constexpr int kNamedBarriers = 16;

struct Warp {
  int pc = 0;
  uint32_t mask = 0, live = 0;
  WarpState state = WarpState::Running;
  std::vector<MaskEntry> stack;
  Scalar* regs = nullptr;  // num_regs * 32
  char* local = nullptr;   // 32 * local_stride bytes
  unsigned first_thread = 0;
  int index = 0;
  int barrier_id = -1;  // the named barrier a warp in AtNamedBarrier waits at
  // The mbarrier (address, phase parity) a parked or spinning warp waits for, the wait
  // instruction, and the failed try-waits in a row while the barriers' epoch stood still.
  uintptr_t mbar = 0;
  int64_t mbar_parity = 0;
  const Inst* mbar_wait = nullptr;
  uint64_t spin_epoch = 0;
  int spins = 0;
  // tcgen05.ld results not yet waited for (tcgen05.wait::ld): the registers holding them or values
  // computed from them, and the local-memory bytes they were stored to (emulator/sm100_tmem.cpp).
  const ir::Op* tmem_pending_ld = nullptr;
  std::vector<uint8_t> tmem_pending_regs;  // per register (sized on the first tcgen05.ld)
  std::unordered_set<uintptr_t> tmem_pending_local;
  bool tmem_pair_alloc_waiting = false;  // at a tcgen05.alloc.cta_group::2, for the peer CTA's warp
  uint64_t dealloc_seen_steps = ~uint64_t(0);  // at a tcgen05.dealloc: the CTA's steps when it last deferred it
  // barrier.cluster: the lanes that arrived and have not waited yet, and the phase they arrived in.
  uint32_t cluster_arrived = 0;
  int64_t cluster_phase = 0;
};

struct Worker;

// The blocks of one cluster run together on one host thread (interleaved warp by warp), so that
// they can wait for each other (barrier.cluster, mbarriers) and reach each other's shared memory.
// A launch without a cluster runs clusters of one block.
struct ClusterState {
  unsigned shape[3] = {1, 1, 1};      // CTAs per cluster in each dimension
  unsigned size = 1;
  unsigned nclusters[3] = {1, 1, 1};  // clusters in the grid in each dimension
  std::vector<Worker*> blocks;        // by rank in the cluster (x fastest)
  // barrier.cluster: threads arrived in the current phase, phases completed, threads not exited.
  int64_t barrier_arrived = 0;
  int64_t barrier_phase = 0;
  int64_t live_threads = 0;
  // Bumped at every change of a synchronisation object: a scheduling round in which no warp got
  // past a wait and this stayed the same can never make progress (a deadlock, reported).
  uint64_t epoch = 0;
  MmaCompletion mma_completion;  // tcgen05.mma not known to be complete (emulator/sm100_mma_completion.h)
};

// One host thread's state: registers and local memory for every warp of a block, reused for
// every block that thread runs.
struct Worker {
  std::vector<Scalar> regs;
  std::vector<char> local;
  std::vector<Warp> warps;
  std::vector<char> smem_storage;
  char* smem = nullptr;  // the block's shared memory, aligned to Program::smem_align
  size_t smem_size = 0;
  std::vector<Scalar> scratch;
  std::vector<Scalar> math_args;
  std::vector<Scalar> printf_vals;
  std::string text;
  unsigned block_idx[3] = {0, 0, 0};
  ClusterState* cluster = nullptr;
  unsigned rank = 0;                        // in the cluster
  unsigned cluster_id[3] = {0, 0, 0};       // %clusterid
  unsigned in_cluster[3] = {0, 0, 0};       // %cluster_ctaid
  AsyncCopyTracker async;  // cp.async in flight in the block (emulator/sm80_copy.h)
  WgmmaReadTracker wgmma_reads;  // shared memory that wgmma in flight still read (emulator/sm90_mma.h)
  // Named barriers of the running block: threads arrived so far and the count that completes it.
  int64_t named_arrived[kNamedBarriers] = {};
  int64_t named_count[kNamedBarriers] = {};
  MbarrierTable mbarriers;  // the block's mbarriers (emulator/sm90_async.h)
  TensorMemory tmem;        // the block's tensor memory (emulator/sm100_tmem.h)
  // Scheduling turns in which one of the block's warps got further (block_scheduler.cpp): a
  // tcgen05.dealloc waits until they stop changing (exec_tmem).
  uint64_t steps = 0;
};

struct LaunchCtx {
  const DeviceEmulator::Program* prog;
  const std::string* kernel;
  const LaunchRequest* req;
  const EmulatorConfig* cfg;
  unsigned block_threads;
  int num_warps;
  size_t local_stride;
  // The clusters not launched yet: the scheduler launches cluster *next_cluster++ while it is below
  // num_clusters, and clusterlaunchcontrol.try_cancel takes them from the same counter.
  std::atomic<uint64_t>* next_cluster = nullptr;
  uint64_t num_clusters = 0;
};

inline void thread_coords(const LaunchCtx& c, unsigned lin, unsigned out[3]) {
  out[0] = lin % c.req->block[0];
  out[1] = (lin / c.req->block[0]) % c.req->block[1];
  out[2] = lin / (c.req->block[0] * c.req->block[1]);
}

inline bool in_smem(const Worker& w, uintptr_t addr, size_t bytes) {
  uintptr_t sb = reinterpret_cast<uintptr_t>(w.smem);
  return w.smem_size && addr >= sb && addr + bytes <= sb + w.smem_size;
}

// The block of the cluster whose shared memory holds [addr, addr + bytes), or null.
inline Worker* cluster_block_holding(const Worker& w, uintptr_t addr, size_t bytes) {
  for (Worker* b : w.cluster->blocks)
    if (in_smem(*b, addr, bytes)) return b;
  return nullptr;
}

// barrier.cluster bookkeeping (block_scheduler.cpp): completes the phase once every live thread
// of the cluster arrived; a warp that ends no longer counts (PTX: the barrier waits for the
// non-exited threads).
void complete_cluster_barrier_if_done(ClusterState& cl);
void warp_exits(Worker& w, Warp& warp);

// Runs a warp until it reaches a barrier, parks at a wait or ends (warp_interpreter.cpp).
void run_warp(const LaunchCtx& c, Worker& w, Warp& warp);

}  // namespace opencute::emulator
