// The PTX executor's run-time state: a launch, its clusters, CTAs and threads, and the context an
// instruction runs in (register access, operand values, address translation per state space).
//
// Addresses: generic and global addresses are host addresses (the launch's buffers). A
// shared::cta address is an offset into the CTA's shared window (symbols start at 0, the dynamic
// window 1024-aligned after the static variables), so swizzle bits the kernel computes are the
// GPU's. As on the GPU, each CTA's shared::cta window is its part of the cluster's shared::cluster
// window: bits 24..31 of every shared address hold the CTA's rank in its cluster (a symbol's
// address, cvta.to.shared, mapa), so a shared::cta address is also the shared::cluster address
// of the same bytes, and a kernel may compute a peer's address from its own (2-CTA MMA code
// clears bit 24 to name the pair's even CTA). Local addresses are offsets into the thread's local
// window, param addresses offsets into the launch's parameter buffer; cvta turns each into a
// host address and back.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "emulator/device_emulator.h"
#include "emulator/ptx/ptx_program.h"

namespace opencute::emulator::ptx {

enum class ThreadState : uint8_t {
  Ready,
  AtCollective,   // at a warp / warpgroup collective (pc), until its group has arrived
  AtBarrier,      // bar.sync / barrier.sync (barrier_id)
  AtMbarrier,     // mbarrier.try_wait (wait_addr, wait_parity)
  AtClusterBarrier,
  Exited,
};

struct Thread {
  std::vector<uint64_t> regs;
  uint32_t pc = 0;
  ThreadState state = ThreadState::Ready;
  unsigned tid[3] = {0, 0, 0};
  int linear = 0, lane = 0, warp = 0;
  std::vector<uint8_t> local;
  int barrier_id = 0;
  uint64_t wait_addr = 0;  // host address of the mbarrier waited on
  uint32_t wait_parity = 0;
  uint64_t cluster_phase = 0;  // barrier.cluster phases this thread arrived at
  bool cluster_arrived = false;
  // How its last turn ended: at a failed try_wait (spin_pc: that instruction), or out of its slice.
  bool yielded_at_wait = false, out_of_slice = false;
  uint32_t spin_pc = 0;
};

struct Mbarrier {
  int64_t expected = 0, pending = 0, tx = 0;
  uint64_t phase = 0;  // completed phases
};

struct NamedBarrier {
  int arrived = 0;
  int expected = 0;  // the thread count of this phase (0: every live thread of the CTA)
};

struct Cluster;

// Where a CTA's rank sits in its shared addresses (bits 24..31).
constexpr int kSharedRankShift = 24;
constexpr uint64_t kSharedOffsetMask = (uint64_t(1) << kSharedRankShift) - 1;

struct Cta {
  unsigned ctaid[3] = {0, 0, 0};
  int rank = 0;  // in its cluster
  uint8_t* smem = nullptr;
  uint64_t smem_size = 0;
  std::unique_ptr<uint8_t, void (*)(void*)> smem_owner{nullptr, nullptr};
  std::vector<Thread> threads;
  NamedBarrier bars[16];
  Cluster* cluster = nullptr;
  // Async groups (cp.async, cp.async.bulk, wgmma) complete when issued: their waits are no-ops.
  // Tensor memory (sm_100, ptx_tcgen05_tmem.cpp): 128 lanes x 512 columns of 32 bits, lane-major,
  // made on the first tcgen05.alloc; which columns are allocated, and whether the permit to
  // allocate was given up.
  std::vector<uint32_t> tmem;
  std::vector<bool> tmem_allocated;
  // Per cell, what wrote it since its columns were allocated (TmemWriter): a block-scaled MMA
  // reports scale factors that no tcgen05.cp / st wrote, or that an accumulator overwrote.
  std::vector<uint8_t> tmem_writer;
  bool tmem_relinquished = false;
  // tcgen05.mma / tcgen05.cp issued and not yet committed (ptx_tcgen05_mma.cpp): the issuing
  // thread, the instruction and its operands' values; each runs at that thread's next
  // tcgen05.commit, in issue order.
  struct Tcgen05Issued {
    int thread;
    const Inst* inst;
    uint64_t ops[7];  // block-scaled MMAs: [d], a, b, idesc, [sfa], [sfb], enable-input-d
  };
  std::vector<Tcgen05Issued> tcgen05_issued;
};

enum TmemWriter : uint8_t { TmemUnwritten, TmemCopyOrStore, TmemAccumulator };

struct Launch;

struct Cluster {
  std::vector<Cta> ctas;
  std::map<uint64_t, Mbarrier> mbarriers;  // by host address
  uint64_t cluster_phase = 0;  // completed barrier.cluster phases
  int cluster_arrived = 0;
  unsigned id[3] = {0, 0, 0};
  const Launch* launch = nullptr;
  uint64_t changes = 0;  // bumped by every event that may release a waiting thread
};

struct Launch {
  const Module* module = nullptr;
  const Kernel* kernel = nullptr;
  unsigned grid[3], block[3], cluster[3];
  bool has_cluster = false;
  uint64_t dynamic_smem = 0;
  std::vector<uint8_t> params_storage;
  uint8_t* params = nullptr;  // 64-byte aligned within params_storage
  const EmulatorConfig* config = nullptr;
  int threads_per_cta = 0;
};

// Formats a failure at `pc` of `th` (kernel, CTA, thread, PTX line and text).
[[noreturn]] void fail_at(const Launch& L, const Cta& cta, const Thread& th, const Inst& i, const std::string& what);

struct ThreadCtx {
  const Launch& L;
  Cluster& cl;
  Cta& cta;
  Thread& th;
  const Inst* inst = nullptr;

  uint64_t* regs() { return th.regs.data(); }
  [[noreturn]] void fail(const std::string& what) const { fail_at(L, cta, th, *inst, what); }
  uint64_t special(Special s) const;
  // The operand's raw bits (a register, immediate, special register, or a symbol's address).
  uint64_t get(const Operand& o) const {
    if (o.kind == Operand::Reg) {
      uint64_t v = th.regs[size_t(o.reg)];
      return o.negate ? uint64_t(!v) : v;
    }
    if (o.kind == Operand::Imm) return uint64_t(o.imm) | shared_rank_bits(o);
    if (o.kind == Operand::Spec) return special(o.special);
    fail("operand '" + o.symbol + "' has no value here");
  }
  void set(const Operand& o, uint64_t v) {
    if (o.kind == Operand::Reg) th.regs[size_t(o.reg)] = v;
    else if (o.kind != Operand::Sink) fail("operand '" + o.symbol + "' is not a register");
  }
  bool pred(const Operand& o) const { return get(o) & 1; }
  // The address an [address] operand names, in the instruction's state space.
  uint64_t address(const Operand& o) const {
    if (o.kind == Operand::Addr) return (o.reg >= 0 ? th.regs[size_t(o.reg)] : 0) + uint64_t(o.imm) + shared_rank_bits(o);
    return get(o);
  }
  // A shared variable's address lies in this CTA's part of the cluster's shared window.
  uint64_t shared_rank_bits(const Operand& o) const {
    return o.space == Space::Shared ? uint64_t(cta.rank) << kSharedRankShift : 0;
  }
  // A host pointer to `bytes` bytes at `addr` of `space`, checked (bounds of shared, local and
  // param memory; the launch's buffers for global memory when they are known; alignment).
  uint8_t* host(uint64_t addr, Space space, uint64_t bytes, bool store, uint64_t align = 0);
  // Generic <-> state-space addresses (cvta).
  uint64_t to_generic(uint64_t addr, Space space);
  uint64_t from_generic(uint64_t addr, Space space);
  // The CTA a shared::cluster address names (its rank bits), and the offset in its window.
  Cta& cluster_cta(uint64_t addr, uint64_t* offset);
  // This CTA's shared address of `offset` in its window (its rank in bits 24..31).
  uint64_t own_shared(uint64_t offset) const { return offset | (uint64_t(cta.rank) << kSharedRankShift); }
};

// A warp- or warpgroup-collective instruction's group: threads in lane order (warpgroup: warp
// by warp), with the member mask of the first warp (shfl.sync ...).
struct CollectiveCtx {
  const Launch& L;
  Cluster& cl;
  Cta& cta;
  std::vector<Thread*> threads;  // 32 (warp) or 128 (warpgroup) slots; null where no thread
  uint32_t mask = 0;             // lanes taking part
  const Inst* inst = nullptr;
  ThreadCtx ctx(int slot) { return ThreadCtx{L, cl, cta, *threads[size_t(slot)], inst}; }
  [[noreturn]] void fail(const std::string& what);
};

// Register access of a thread (for collectives reading each lane's operands).
inline uint64_t reg_of(const Thread& t, const Operand& o) {
  if (o.kind == Operand::Reg) return t.regs[size_t(o.reg)];
  if (o.kind == Operand::Imm) return uint64_t(o.imm);
  return 0;
}

}  // namespace opencute::emulator::ptx
