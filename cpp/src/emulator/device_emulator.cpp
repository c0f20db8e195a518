#include "emulator/device_emulator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "emulator/device_atomics.h"
#include "emulator/device_program.h"
#include "emulator/sm80_mma.h"
#include "emulator/sm80_copy.h"
#include "emulator/sm90_mma.h"
#include "emulator/sm90_warp.h"
#include "emulator/sm90_async.h"

namespace opencute::emulator {

int default_emulator_threads() {
  if (const char* e = std::getenv("OPENCUTE_EMULATOR_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

// ---- execution ---------------------------------------------------------------------------

namespace {

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
};

struct LaunchCtx {
  const DeviceEmulator::Program* prog;
  const std::string* kernel;
  const LaunchRequest* req;
  const EmulatorConfig* cfg;
  unsigned block_threads;
  int num_warps;
  size_t local_stride;
};

std::string hex(uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)a);
  return buf;
}

std::string dims3(const unsigned d[3]) {
  return "(" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + ")";
}

void thread_coords(const LaunchCtx& c, unsigned lin, unsigned out[3]) {
  out[0] = lin % c.req->block[0];
  out[1] = (lin / c.req->block[0]) % c.req->block[1];
  out[2] = lin / (c.req->block[0] * c.req->block[1]);
}

std::string where(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i) {
  unsigned t[3];
  thread_coords(c, warp.first_thread + unsigned(lane), t);
  std::string s = "in kernel '" + *c.kernel + "'";
  if (i.op && i.op->line) s += " (line " + std::to_string(i.op->line) + ")";
  s += ", block " + dims3(w.block_idx) + " thread " + dims3(t);
  return s;
}

[[noreturn]] void fail_at(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                          const std::string& what) {
  throw ExecutionError(what + " " + where(c, w, warp, lane, i));
}

[[noreturn]] void bad_access(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                             uintptr_t addr, size_t bytes, bool store, bool misaligned) {
  std::string what = std::string(misaligned ? "misaligned " : "out-of-bounds ") + (store ? "store" : "load") +
                     " of " + std::to_string(bytes) + " bytes at address " + hex(addr) + " " +
                     where(c, w, warp, lane, i);
  if (misaligned) {
    what += ": the address is not a multiple of " + std::to_string(bytes);
  } else {
    const MemoryRegion* nearest = nullptr;
    uintptr_t best = ~uintptr_t(0);
    for (const MemoryRegion& r : *c.cfg->regions) {
      uintptr_t d = addr < r.begin ? r.begin - addr : (addr >= r.end ? addr - r.end : 0);
      if (d < best) best = d, nearest = &r;
    }
    what += ": it lies outside every buffer the kernel was given";
    if (nearest) {
      if (addr >= nearest->end)
        what += " (" + std::to_string(addr - nearest->end) + " bytes past the end of " + nearest->name;
      else if (addr + bytes > nearest->end)
        what += " (it runs over the end of " + nearest->name;
      else
        what += " (" + std::to_string(nearest->begin - addr) + " bytes before the start of " + nearest->name;
      what += ", " + std::to_string(nearest->end - nearest->begin) + " bytes at " + hex(nearest->begin) + ")";
    }
  }
  throw ExecutionError(what);
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

inline void check_access(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                         uintptr_t addr, size_t bytes, bool store) {
  if (addr == 0) fail_at(c, w, warp, lane, i, std::string("a ") + (store ? "store" : "load") + " through a null pointer");
  if (w.mbarriers.any_filling() && in_smem(w, addr, bytes)) {  // TMA bytes not yet waited for (sm90_async.h)
    std::string race = const_cast<Worker&>(w).mbarriers.check_filling(addr, bytes, w.smem);
    if (!race.empty()) fail_at(c, w, warp, lane, i, race);
  }
  if (w.async.active() && in_smem(w, addr, bytes)) {
    std::string race = w.async.check(warp.first_thread + unsigned(lane), addr, bytes, store);
    if (!race.empty()) fail_at(c, w, warp, lane, i, race);
  }
  if (store && w.wgmma_reads.active()) {
    std::string race = w.wgmma_reads.check_store(addr, bytes);
    if (!race.empty()) fail_at(c, w, warp, lane, i, race);
  }
  if ((bytes & (bytes - 1)) == 0 && (addr & (std::min<size_t>(bytes, 16) - 1)) != 0)
    bad_access(c, w, warp, lane, i, addr, bytes, store, true);
  // A shared-memory pointer must stay inside the block's shared memory, known or not to the launch.
  if (i.space == ir::AddrSpace::Smem) {
    if (in_smem(w, addr, bytes)) return;
    uintptr_t sb = reinterpret_cast<uintptr_t>(w.smem);
    std::string off = addr >= sb ? "offset " + std::to_string(addr - sb) : std::to_string(sb - addr) + " bytes before it";
    fail_at(c, w, warp, lane, i, std::string("out-of-bounds shared-memory ") + (store ? "store" : "load") + " of " +
                                     std::to_string(bytes) + " bytes at " + off + " of the block's " +
                                     std::to_string(w.smem_size) + " bytes of shared memory (" +
                                     std::to_string(c.prog->static_smem_bytes) + " static, " +
                                     std::to_string(c.req->smem) + " dynamic)");
  }
  // The thread's own local arrays.
  uintptr_t lb = reinterpret_cast<uintptr_t>(warp.local) + uintptr_t(lane) * c.local_stride;
  if (addr >= lb && addr + bytes <= lb + c.local_stride) return;
  if (!c.cfg->regions) return;
  for (const MemoryRegion& r : *c.cfg->regions)
    if (addr >= r.begin && addr + bytes <= r.end) return;
  if (in_smem(w, addr, bytes)) return;
  if (w.cluster->size > 1 && cluster_block_holding(w, addr, bytes)) return;  // distributed shared memory
  if (c.cfg->strict) bad_access(c, w, warp, lane, i, addr, bytes, store, false);
}

#define FOR_LANES(m) for (uint32_t mm_ = (m); mm_; mm_ &= mm_ - 1)
#define LANE __builtin_ctz(mm_)

// ---- clusters: special registers, barrier.cluster, mapa ------------------------------------

void complete_cluster_barrier_if_done(ClusterState& cl) {
  if (cl.barrier_arrived > 0 && cl.barrier_arrived >= cl.live_threads) {
    ++cl.barrier_phase;
    cl.barrier_arrived = 0;
    ++cl.epoch;
  }
}

// Exited threads no longer count at the cluster barrier (PTX: it waits for the non-exited threads).
void warp_exits(Worker& w, Warp& warp) {
  ClusterState& cl = *w.cluster;
  cl.live_threads -= __builtin_popcount(warp.live);
  if (warp.cluster_arrived && warp.cluster_phase == cl.barrier_phase)
    cl.barrier_arrived -= __builtin_popcount(warp.cluster_arrived);
  warp.cluster_arrived = 0;
  ++cl.epoch;
  complete_cluster_barrier_if_done(cl);
}

// False when the warp parks (barrier.cluster.wait before the phase completed).
bool run_cluster_op(const LaunchCtx& c, Worker& w, Warp& warp, const Inst& i) {
  ClusterState& cl = *w.cluster;
  const uint32_t m = warp.mask;
  const int64_t attr = i.imm & 0xffffffff, extra = i.imm >> 32;
  Scalar* R = warp.regs;
  auto at = [R](int reg, int lane) -> Scalar& { return R[size_t(reg) * kWarp + size_t(lane)]; };
  if (!m) return true;
  const int l0 = __builtin_ctz(m);
  switch (i.code) {
    case OpCode::ClusterSreg: {
      const int d = int(extra);
      int64_t v = 0;
      switch (ir::ClusterSregKind(attr)) {
        case ir::ClusterSregKind::ClusterIdx: v = w.cluster_id[d]; break;
        case ir::ClusterSregKind::ClusterDim: v = cl.nclusters[d]; break;
        case ir::ClusterSregKind::BlockInCluster: v = w.in_cluster[d]; break;
        case ir::ClusterSregKind::BlockInClusterDim: v = cl.shape[d]; break;
        case ir::ClusterSregKind::CtaRank: v = w.rank; break;
        case ir::ClusterSregKind::ClusterSize: v = cl.size; break;
      }
      FOR_LANES(m) at(i.dst, LANE).i = v;
      return true;
    }
    case OpCode::ClusterBarrier: {
      const bool aligned = extra != 0;
      if (aligned && m != warp.live)
        fail_at(c, w, warp, l0, i, std::string(ir::ClusterBarrierKind(attr) == ir::ClusterBarrierKind::Wait
                                                   ? "cluster_wait" : "cluster_arrive") +
                                       " (aligned) executed by only some threads of the warp (lanes " + hex(m) +
                                       " of " + hex(warp.live) + "); every thread of the warp must execute it together");
      if (ir::ClusterBarrierKind(attr) != ir::ClusterBarrierKind::Wait) {
        if (warp.cluster_arrived & m)
          fail_at(c, w, warp, __builtin_ctz(warp.cluster_arrived & m), i,
                  "cluster_arrive twice without a cluster_wait in between");
        warp.cluster_arrived |= m;
        warp.cluster_phase = cl.barrier_phase;
        cl.barrier_arrived += __builtin_popcount(m);
        ++cl.epoch;
        complete_cluster_barrier_if_done(cl);
        return true;
      }
      if ((warp.cluster_arrived & m) != m)
        fail_at(c, w, warp, __builtin_ctz(m & ~warp.cluster_arrived), i,
                "cluster_wait by a thread that did not cluster_arrive first");
      if (cl.barrier_phase > warp.cluster_phase) {
        warp.cluster_arrived &= ~m;
        return true;
      }
      warp.state = WarpState::Parked;
      return false;
    }
    case OpCode::MapSharedRank:
      FOR_LANES(m) {
        int l = LANE;
        const uintptr_t p = uintptr_t(at(i.a, l).i);
        const int64_t rank = at(i.b, l).i;
        if (rank < 0 || rank >= int64_t(cl.size))
          fail_at(c, w, warp, l, i, "map_dsmem_ptr to CTA rank " + std::to_string(rank) + ", but the cluster has " +
                                        std::to_string(cl.size) + " CTA(s)");
        const Worker* from = in_smem(w, p, 1) ? &w : cluster_block_holding(w, p, 1);
        if (!from)
          fail_at(c, w, warp, l, i, "map_dsmem_ptr of address " + hex(p) + ", which is not in shared memory");
        const Worker* to = cl.blocks[size_t(rank)];
        at(i.dst, l).i = int64_t(reinterpret_cast<uintptr_t>(to->smem) + (p - reinterpret_cast<uintptr_t>(from->smem)));
      }
      return true;
    default:
      fail_at(c, w, warp, l0, i, std::string("not a cluster op: ") + ir::opcode_name(i.code));
  }
}

// Runs a warp until it reaches a barrier or returns.
void run_warp(const LaunchCtx& c, Worker& w, Warp& warp) {
  const Inst* code = c.prog->code.data();
  Scalar* R = warp.regs;
  auto at = [R](int reg, int lane) -> Scalar& { return R[size_t(reg) * kWarp + size_t(lane)]; };
  std::string err;
  for (;;) {
    const Inst& i = code[warp.pc];
    const uint32_t m = warp.mask;
    switch (i.kind) {
      case K::AddI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) + uint32_t(b[l].i)); } }
        else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(a[l].i) + uint32_t(b[l].i); } }
        break;
      }
      case K::SubI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) - uint32_t(b[l].i)); } }
        else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(uint32_t(a[l].i) - uint32_t(b[l].i)); } }
        break;
      }
      case K::MulI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) * uint32_t(b[l].i)); } }
        else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(a[l].i) * uint32_t(b[l].i); } }
        break;
      }
      case K::AddF32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        FOR_LANES(m) { int l = LANE; d[l].f = double(float(a[l].f + b[l].f)); }
        break;
      }
      case K::MulF32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        FOR_LANES(m) { int l = LANE; d[l].f = double(float(a[l].f * b[l].f)); }
        break;
      }
      case K::Binary:
        for (int k = 0; k < i.width; ++k) {
          FOR_LANES(m) {
            int l = LANE;
            if (!ir::eval_binary(i.code, i.type, at(i.a + k, l), at(i.b + k, l), &at(i.dst + k, l), &err))
              fail_at(c, w, warp, l, i, err);
          }
        }
        break;
      case K::Unary:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = ir::eval_unary(i.code, i.type, at(i.a + k, l)); }
        break;
      case K::CmpI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        auto p = ir::CmpPredicate(i.imm);
        if (i.in_type->is_signed) {
          FOR_LANES(m) {
            int l = LANE;
            int32_t x = int32_t(a[l].i), y = int32_t(b[l].i);
            bool r;
            switch (p) {
              case ir::CmpPredicate::Eq: r = x == y; break;
              case ir::CmpPredicate::Ne: r = x != y; break;
              case ir::CmpPredicate::Lt: r = x < y; break;
              case ir::CmpPredicate::Le: r = x <= y; break;
              case ir::CmpPredicate::Gt: r = x > y; break;
              default: r = x >= y; break;
            }
            d[l].i = r;
          }
        } else {
          FOR_LANES(m) { int l = LANE; d[l].i = ir::eval_cmp(p, i.in_type, a[l], b[l]); }
        }
        break;
      }
      case K::Cmp:
        for (int k = 0; k < i.width; ++k)
          FOR_LANES(m) { int l = LANE; at(i.dst + k, l).i = ir::eval_cmp(ir::CmpPredicate(i.imm), i.in_type, at(i.a + k, l), at(i.b + k, l)); }
        break;
      case K::Select:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a, l).i ? at(i.b + k, l) : at(i.c + k, l); }
        break;
      case K::Cast:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = ir::eval_cast(i.in_type, i.type, at(i.a + k, l)); }
        break;
      case K::Bitcast:
        FOR_LANES(m) { int l = LANE; at(i.dst, l) = ir::eval_bitcast(i.in_type, i.type, at(i.a, l)); }
        break;
      case K::Fma:
        for (int k = 0; k < i.width; ++k)
          FOR_LANES(m) {
            int l = LANE;
            at(i.dst + k, l) = Scalar::of_float(ir::round_float(i.type, at(i.a + k, l).f * at(i.b + k, l).f + at(i.c + k, l).f));
          }
        break;
      case K::Math:
        FOR_LANES(m) {
          int l = LANE;
          w.math_args.resize(i.srcs.size());
          for (size_t k = 0; k < i.srcs.size(); ++k) w.math_args[k] = at(i.srcs[k], l);
          if (!ir::eval_math(i.op->str_attr, i.type, w.math_args, &at(i.dst, l)))
            fail_at(c, w, warp, l, i, "unknown math function " + i.op->str_attr);
        }
        break;
      case K::PtrAdd:
        if (i.imm >= 0) {
          FOR_LANES(m) { int l = LANE; at(i.dst, l).i = at(i.a, l).i + at(i.b, l).i * i.imm; }
        } else {  // packed sub-byte elements: -imm bits each
          FOR_LANES(m) { int l = LANE; at(i.dst, l).i = at(i.a, l).i + ((at(i.b, l).i * -i.imm) >> 3); }
        }
        break;
      case K::Move:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a + k, l); }
        break;
      case K::PMove: {
        const size_t n = i.srcs.size();
        w.scratch.resize(n * kWarp);
        for (size_t k = 0; k < n; ++k) std::memcpy(&w.scratch[k * kWarp], &at(i.srcs[k], 0), sizeof(Scalar) * kWarp);
        for (size_t k = 0; k < n; ++k) {
          Scalar* d = &at(i.dsts[k], 0);
          const Scalar* s = &w.scratch[k * kWarp];
          if (m == 0xffffffffu) std::memcpy(d, s, sizeof(Scalar) * kWarp);
          else FOR_LANES(m) { int l = LANE; d[l] = s[l]; }
        }
        break;
      }
      case K::Load: {
        if (i.imm < 0) {  // packed sub-byte elements (whole bytes: the IR builder's vectors)
          const size_t bytes = (size_t(-i.imm) * size_t(i.width) + 7) / 8;
          FOR_LANES(m) {
            int l = LANE;
            uintptr_t p = uintptr_t(at(i.a, l).i);
            check_access(c, w, warp, l, i, p, bytes, false);
            for (int k = 0; k < i.width; ++k) at(i.dst + k, l) = ir::load_packed_scalar(i.type, reinterpret_cast<const void*>(p), k);
          }
          break;
        }
        const size_t bytes = size_t(i.imm) * size_t(i.width);
        FOR_LANES(m) {
          int l = LANE;
          uintptr_t p = uintptr_t(at(i.a, l).i);
          check_access(c, w, warp, l, i, p, bytes, false);
          for (int k = 0; k < i.width; ++k)
            at(i.dst + k, l) = ir::load_scalar(i.type, reinterpret_cast<const void*>(p + uintptr_t(k * i.imm)));
        }
        break;
      }
      case K::Store: {
        if (i.imm < 0) {
          const size_t bytes = (size_t(-i.imm) * size_t(i.width) + 7) / 8;
          FOR_LANES(m) {
            int l = LANE;
            uintptr_t p = uintptr_t(at(i.b, l).i);
            check_access(c, w, warp, l, i, p, bytes, true);
            for (int k = 0; k < i.width; ++k) ir::store_packed_scalar(i.type, at(i.a + k, l), reinterpret_cast<void*>(p), k);
          }
          break;
        }
        const size_t bytes = size_t(i.imm) * size_t(i.width);
        FOR_LANES(m) {
          int l = LANE;
          uintptr_t p = uintptr_t(at(i.b, l).i);
          check_access(c, w, warp, l, i, p, bytes, true);
          for (int k = 0; k < i.width; ++k)
            ir::store_scalar(i.type, at(i.a + k, l), reinterpret_cast<void*>(p + uintptr_t(k * i.imm)));
        }
        break;
      }
      case K::Alloca:
        FOR_LANES(m) {
          int l = LANE;
          at(i.dst, l).i = int64_t(reinterpret_cast<uintptr_t>(warp.local) + uintptr_t(l) * c.local_stride + uintptr_t(i.imm));
        }
        break;
      case K::VecInsert:
        FOR_LANES(m) {
          int l = LANE;
          for (int k = 0; k < i.width; ++k) at(i.dst + k, l) = at(i.a + k, l);
          at(i.dst + int(i.imm), l) = at(i.b, l);
        }
        break;
      case K::VecSplat:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a, l); }
        break;
      case K::Special: {
        const int d = int(i.imm);
        FOR_LANES(m) {
          int l = LANE;
          int64_t v = 0;
          switch (i.code) {
            case OpCode::ThreadIdx: {
              unsigned t[3];
              thread_coords(c, warp.first_thread + unsigned(l), t);
              v = t[d];
              break;
            }
            case OpCode::BlockIdx: v = w.block_idx[d]; break;
            case OpCode::BlockDim: v = c.req->block[d]; break;
            case OpCode::GridDim: v = c.req->grid[d]; break;
            case OpCode::LaneIdx: v = l; break;
            case OpCode::DynSmemSize: v = c.req->smem; break;
            default: v = warp.index; break;
          }
          at(i.dst, l).i = ir::wrap_int(i.type, v);
        }
        break;
      }
      case K::Printf:
        FOR_LANES(m) {
          int l = LANE;
          w.printf_vals.resize(i.srcs.size());
          for (size_t k = 0; k < i.srcs.size(); ++k) w.printf_vals[k] = at(i.srcs[k], l);
          w.text.clear();
          format_printf(i.op->str_attr, i.types, w.printf_vals, &w.text);
          std::fwrite(w.text.data(), 1, w.text.size(), stdout);
        }
        std::fflush(stdout);
        break;
      case K::Shuffle: {
        const auto kind = ir::ShuffleKind(i.imm);
        FOR_LANES(m) {
          int l = LANE;
          uint32_t member = uint32_t(at(i.srcs[0], l).i);
          if (!((member >> l) & 1))
            fail_at(c, w, warp, l, i, "shuffle_sync by lane " + std::to_string(l) + ", which is not in its member mask " + hex(member));
          // PTX shfl.sync: c packs the clamp (bits 0-4) and the segment mask (bits 8-12).
          const int b = int(at(i.b, l).i & 31), cv = int(at(i.c, l).i);
          const int clamp = cv & 31, seg = (cv >> 8) & 31;
          const int max_lane = (l & seg) | (clamp & ~seg), min_lane = l & seg;
          int j = l;
          bool ok = false;
          switch (kind) {
            case ir::ShuffleKind::Up: j = l - b; ok = j >= max_lane; break;
            case ir::ShuffleKind::Down: j = l + b; ok = j <= max_lane; break;
            case ir::ShuffleKind::Bfly: j = l ^ b; ok = j <= max_lane; break;
            case ir::ShuffleKind::Idx: j = min_lane | (b & ~seg); ok = j <= max_lane; break;
          }
          // An out-of-range source gives the lane its own value (PTX). A source lane that is
          // inactive or outside the mask is undefined on the GPU; here it also gives the own value.
          if (!ok || j < 0 || j >= kWarp || !((m >> j) & 1) || !((member >> j) & 1)) j = l;
          at(i.dst, l) = at(i.a, j);
        }
        break;
      }
      case K::MmaSync: {
        std::string e = run_mma_sync(i, m, R);
        if (!e.empty()) fail_at(c, w, warp, __builtin_ctz(m ? m : 1u), i, e);
        break;
      }
      case K::Wgmma: {
        // Operands still being filled by a TMA load (their mbarrier phase not waited for) are a race.
        std::function<std::string(uintptr_t, size_t)> filling;
        if (w.mbarriers.any_filling())
          filling = [&](uintptr_t addr, size_t bytes) { return w.mbarriers.check_filling(addr, bytes, w.smem); };
        std::string e = run_wgmma(i, m, R, warp.first_thread / kWarp, reinterpret_cast<uintptr_t>(w.smem),
                                  w.smem_size, w.wgmma_reads, filling);
        if (!e.empty()) fail_at(c, w, warp, __builtin_ctz(m ? m : 1u), i, e);
        break;
      }
      case K::Vote: {
        const auto kind = ir::VoteKind(i.imm);
        FOR_LANES(m) {
          int l = LANE;
          uint32_t member = uint32_t(at(i.b, l).i);
          if (!((member >> l) & 1))
            fail_at(c, w, warp, l, i, "vote by lane " + std::to_string(l) + ", which is not in its member mask " + hex(member));
          // The lanes that take part: active (not exited, not branched away) and in the mask.
          uint32_t voters = m & member, ballot = 0;
          for (uint32_t v = voters; v; v &= v - 1) {
            int k = __builtin_ctz(v);
            if (at(i.a, k).i) ballot |= 1u << k;
          }
          int64_t r = 0;
          switch (kind) {
            case ir::VoteKind::Ballot: r = int32_t(ballot); break;
            case ir::VoteKind::Any: r = ballot != 0; break;
            case ir::VoteKind::All: r = ballot == voters; break;
            case ir::VoteKind::Uni: r = ballot == 0 || ballot == voters; break;
          }
          at(i.dst, l).i = r;
        }
        break;
      }
      case K::Atomic: {
        const auto kind = ir::AtomicKind(i.imm);
        const size_t bytes = size_t(i.type->byte_size());
        // Lanes update one after another, in lane order: one of the orders the GPU may pick.
        FOR_LANES(m) {
          int l = LANE;
          uintptr_t p = uintptr_t(at(i.a, l).i);
          check_access(c, w, warp, l, i, p, bytes, true);
          Scalar cmp = i.c >= 0 ? at(i.c, l) : Scalar{};
          at(i.dst, l) = atomic_update(kind, i.type, reinterpret_cast<void*>(p), at(i.b, l), cmp);
        }
        break;
      }
      case K::SmemAddr: {
        const int64_t a = int64_t(reinterpret_cast<uintptr_t>(w.smem)) + i.imm;
        FOR_LANES(m) { int l = LANE; at(i.dst, l).i = a; }
        break;
      }
      case K::Assert:
        FOR_LANES(m) {
          int l = LANE;
          if (at(i.a, l).i) continue;
          unsigned t[3];
          thread_coords(c, warp.first_thread + unsigned(l), t);
          const ir::Op& op = *i.op;
          throw AssertionFailure("device assertion failed in kernel '" + *c.kernel + "', block " + dims3(w.block_idx) +
                                     " thread " + dims3(t) + ": " + op.str_attr + " (" + op.file + ":" +
                                     std::to_string(op.line) + ")",
                                 op.file, op.line);
        }
        break;
      case K::Sm80Copy: {
        Sm80WarpContext ctx;
        ctx.regs = R;
        ctx.mask = m;
        ctx.first_thread = warp.first_thread;
        ctx.async = &w.async;
        ctx.check = [&](int lane, uintptr_t addr, size_t bytes, bool store, bool smem) {
          if (smem && !in_smem(w, addr, bytes))
            fail_at(c, w, warp, lane, i, std::string("a ") + ir::opcode_name(i.code) + " shared-memory address " +
                                             hex(addr) + " (" + std::to_string(bytes) +
                                             " bytes) lies outside the block's shared memory");
          if (addr % std::min<size_t>(bytes, 16))
            fail_at(c, w, warp, lane, i, std::string("misaligned ") + ir::opcode_name(i.code) + " address " +
                                             hex(addr) + ": not a multiple of " + std::to_string(std::min<size_t>(bytes, 16)));
          if (smem && store && w.wgmma_reads.active()) {
            std::string race = w.wgmma_reads.check_store(addr, bytes);
            if (!race.empty()) fail_at(c, w, warp, lane, i, race);
          }
          Inst probe = i;
          probe.space = smem ? ir::AddrSpace::Smem : ir::AddrSpace::Generic;
          if (!smem) check_access(c, w, warp, lane, probe, addr, bytes, store);
        };
        ctx.fail = [&](int lane, const std::string& what) { fail_at(c, w, warp, lane, i, what); };
        execute_sm80_copy(i, ctx);
        break;
      }
      case K::Sm90Warp: {
        int bad = 0;
        std::string e = execute_sm90_warp(i, R, m, warp.live, &bad);
        if (!e.empty()) fail_at(c, w, warp, bad, i, e);
        break;
      }
      case K::Cluster:
        if (!run_cluster_op(c, w, warp, i)) return;  // parked at barrier.cluster.wait
        break;
      case K::Sm90Async: {
        Sm90WarpContext ctx;
        ctx.regs = R;
        ctx.mask = m;
        ctx.table = &w.mbarriers;
        ctx.smem = w.smem;
        ctx.smem_size = w.smem_size;
        // The CTA of rank `rank` in this cluster (without a cluster, a block is rank 0 of one).
        ctx.peer = [&](int64_t rank) -> std::pair<char*, MbarrierTable*> {
          if (rank < 0 || rank >= int64_t(w.cluster->size)) return {nullptr, nullptr};
          Worker* b = w.cluster->blocks[size_t(rank)];
          return {b->smem, &b->mbarriers};
        };
        ctx.fail = [&](int lane, const std::string& what) { fail_at(c, w, warp, lane, i, what); };
        ctx.check_global = [&](int lane, uintptr_t addr, size_t bytes, bool store) {
          check_access(c, w, warp, lane, i, addr, bytes, store);
        };
        // A TMA load refilling shared memory that a wgmma in flight (not yet retired by its
        // warpgroup's wait_group) still reads: on the GPU the MMA may read the new bytes.
        ctx.check_smem_fill = [&](int lane, const char* smem, uintptr_t begin, size_t bytes) {
          for (Worker* b : w.cluster->blocks)
            if (b->smem == smem && b->wgmma_reads.active()) {
              std::string race = b->wgmma_reads.check_store(begin, bytes);
              if (!race.empty()) fail_at(c, w, warp, lane, i, "a TMA load overwrites shared memory: " + race);
            }
        };
        const AsyncStep step = execute_sm90_async(i, ctx);
        if (step == AsyncStep::Continue) break;
        warp.mbar = ctx.wait_addr;
        warp.mbar_parity = ctx.wait_parity;
        warp.mbar_wait = &i;
        if (step == AsyncStep::Block) {  // re-runs the wait when woken
          warp.state = WarpState::AtMbarrier;
          return;
        }
        // A failed try/test wait: let the other warps run. Failing again and again while no
        // barrier changes parks the warp until one does (a spin loop cannot hang the emulator).
        const uint64_t epoch = w.mbarriers.epoch();
        warp.spins = warp.spin_epoch == epoch ? warp.spins + 1 : 1;
        warp.spin_epoch = epoch;
        if (warp.spins >= 3) warp.state = WarpState::Spinning;
        warp.pc++;
        return;
      }
      case K::Barrier:
        warp.pc++;
        warp.state = WarpState::AtBarrier;
        return;
      case K::NamedBarrier: {
        // PTX bar.sync / bar.arrive: the warp counts as 32 threads; the barrier completes when
        // `count` threads arrived, releasing the warps that wait at it.
        if (!m) break;
        const int l0 = __builtin_ctz(m);
        const int64_t id = at(i.a, l0).i, count = at(i.b, l0).i;
        FOR_LANES(m) {
          int l = LANE;
          if (at(i.a, l).i != id || at(i.b, l).i != count)
            fail_at(c, w, warp, l, i, "named barrier with different ids or thread counts across one warp");
        }
        if (id < 0 || id >= kNamedBarriers) fail_at(c, w, warp, l0, i, "named barrier id " + std::to_string(id) +
                                                                          " outside [0, 15]");
        if (count <= 0 || count % kWarp != 0 || count > int64_t(c.num_warps) * kWarp)
          fail_at(c, w, warp, l0, i, "named barrier thread count " + std::to_string(count) +
                                         " is not a positive multiple of 32 up to the block's warps");
        if (w.named_count[id] && w.named_count[id] != count)
          fail_at(c, w, warp, l0, i, "named barrier " + std::to_string(id) + " used with thread counts " +
                                         std::to_string(w.named_count[id]) + " and " + std::to_string(count));
        w.named_count[id] = count;
        w.named_arrived[id] += kWarp;
        warp.pc++;
        if (i.imm == int64_t(ir::NamedBarrierKind::Sync)) {
          warp.state = WarpState::AtNamedBarrier;
          warp.barrier_id = int(id);
        }
        if (w.named_arrived[id] == count) {
          for (Warp& other : w.warps)
            if (other.state == WarpState::AtNamedBarrier && other.barrier_id == int(id)) other.state = WarpState::Running;
          w.named_arrived[id] = w.named_count[id] = 0;
          // Landed cp.async data becomes visible as at a block barrier. Only the participants
          // synchronised, so this may hide a race with a non-participant, never report a false one.
          w.async.barrier();
        }
        if (warp.state != WarpState::Running) return;
        continue;
      }
      case K::If: {
        uint32_t t = 0;
        FOR_LANES(m) { int l = LANE; if (at(i.a, l).i) t |= 1u << l; }
        warp.stack.push_back({m, m & ~t});
        warp.mask = t;
        if (!t) { warp.pc = i.target; continue; }
        break;
      }
      case K::Else:
        warp.mask = warp.stack.back().other;
        if (!warp.mask) { warp.pc = i.target; continue; }
        break;
      case K::EndIf:
      case K::LoopEnd:
        warp.mask = warp.stack.back().saved;
        warp.stack.pop_back();
        break;
      case K::LoopBegin:
        warp.stack.push_back({m, 0});
        break;
      case K::ForTest: {
        uint32_t keep = 0;
        FOR_LANES(m) {
          int l = LANE;
          const Scalar& st = at(i.c, l);
          if (st.i == 0) fail_at(c, w, warp, l, i, "a for loop with a zero step");
          bool up = ir::eval_cmp(ir::CmpPredicate::Gt, i.in_type, st, Scalar::of_int(0));
          if (ir::eval_cmp(up ? ir::CmpPredicate::Lt : ir::CmpPredicate::Gt, i.in_type, at(i.a, l), at(i.b, l)))
            keep |= 1u << l;
        }
        warp.mask = keep;
        if (!keep) { warp.pc = i.target; continue; }
        break;
      }
      case K::ForStep:
        FOR_LANES(m) {
          int l = LANE;
          ir::eval_binary(OpCode::Add, i.in_type, at(i.a, l), at(i.b, l), &at(i.a, l), nullptr);
        }
        break;
      case K::WhileTest: {
        uint32_t keep = 0;
        FOR_LANES(m) { int l = LANE; if (at(i.a, l).i) keep |= 1u << l; }
        warp.mask = keep;
        if (!keep) { warp.pc = i.target; continue; }
        break;
      }
      case K::Jump:
        warp.pc = i.target;
        continue;
      case K::Return:
        warp.state = WarpState::Done;
        warp_exits(w, warp);
        return;
    }
    warp.pc++;
  }
}

#undef FOR_LANES
#undef LANE

void prepare_worker(const LaunchCtx& c, Worker& w) {
  const auto& prog = *c.prog;
  size_t nregs = size_t(std::max(prog.num_regs, 1));
  w.regs.assign(nregs * kWarp * size_t(c.num_warps), Scalar{});
  w.local.assign(c.local_stride * kWarp * size_t(c.num_warps), 0);
  w.warps.assign(size_t(c.num_warps), Warp{});
  for (int k = 0; k < c.num_warps; ++k) {
    Warp& warp = w.warps[size_t(k)];
    warp.regs = w.regs.data() + size_t(k) * nregs * kWarp;
    warp.local = w.local.data() + size_t(k) * c.local_stride * kWarp;
    warp.index = k;
    warp.first_thread = unsigned(k * kWarp);
    unsigned n = std::min<unsigned>(kWarp, c.block_threads - warp.first_thread);
    warp.live = n == 32 ? 0xffffffffu : ((1u << n) - 1);
    warp.stack.reserve(16);
    auto fill = [&](int reg, Scalar v) {
      for (int l = 0; l < kWarp; ++l) warp.regs[size_t(reg) * kWarp + size_t(l)] = v;
    };
    for (auto& [reg, v] : prog.constants) fill(reg, v);
    for (size_t a = 0; a < prog.arg_regs.size(); ++a) fill(prog.arg_regs[a], c.req->args[a]);
  }
  w.scratch.reserve(64 * kWarp);
  w.smem_size = size_t(prog.dyn_smem_offset) + c.req->smem;
  if (w.smem_size) {
    // Byte-address swizzles (CuTe's swizzle_ptr) act on shared-window offsets, which start at 0
    // on the GPU: a 4 KiB-aligned buffer keeps the low address bits equal to those offsets.
    const size_t align = std::max<size_t>(size_t(prog.smem_align), 4096);
    w.smem_storage.assign(w.smem_size + align, 0);
    uintptr_t raw = reinterpret_cast<uintptr_t>(w.smem_storage.data());
    w.smem = reinterpret_cast<char*>((raw + align - 1) / align * align);
  }
}

// A block's state at its start: zeroed shared memory, no copies in flight, every warp at pc 0.
void start_block(const LaunchCtx& c, Worker& w) {
  if (w.smem_size) std::memset(w.smem, 0, w.smem_size);
  w.async.reset(w.smem, w.smem_size, c.block_threads);
  w.wgmma_reads.reset(reinterpret_cast<uintptr_t>(w.smem), w.smem_size, (c.block_threads + kWarp - 1) / kWarp);
  for (int b = 0; b < kNamedBarriers; ++b) w.named_arrived[b] = w.named_count[b] = 0;
  w.mbarriers.reset();
  for (Warp& warp : w.warps) {
    warp.pc = 0;
    warp.mask = warp.live;
    warp.state = WarpState::Running;
    warp.stack.clear();
    warp.cluster_arrived = 0;
    warp.cluster_phase = 0;
    warp.spins = 0;
    warp.spin_epoch = 0;
  }
}

// What a waiting warp waits for, for the deadlock report.
std::string wait_description(const LaunchCtx& c, const Worker& w, const Warp& warp) {
  const ClusterState& cl = *w.cluster;
  std::string s;
  switch (warp.state) {
    case WarpState::AtBarrier: s = "sync_threads"; break;
    case WarpState::AtNamedBarrier:
      s = "named barrier " + std::to_string(warp.barrier_id) + " (" + std::to_string(w.named_arrived[warp.barrier_id]) +
          " of " + std::to_string(w.named_count[warp.barrier_id]) + " threads arrived)";
      break;
    case WarpState::Parked: {
      const Inst& i = c.prog->code[size_t(warp.pc)];
      if (i.kind == K::Cluster && i.code == OpCode::ClusterBarrier)
        s = "cluster_wait (" + std::to_string(cl.barrier_arrived) + " of " + std::to_string(cl.live_threads) +
            " threads of the cluster arrived)";
      else
        s = ir::opcode_name(i.code);
      if (i.op && i.op->line)
        s += " at " + (i.op->file.empty() ? std::string("line ") : i.op->file + ":") + std::to_string(i.op->line);
      break;
    }
    default: s = "?"; break;
  }
  return s;
}

// Every warp is parked and some wait on mbarriers: name each waiting warp, the barrier and
// where it waits, and what the other warps do (with the block of each warp in a cluster).
std::string mbarrier_deadlock(const LaunchCtx& c, const ClusterState& cl) {
  const Worker& first = *cl.blocks[0];
  std::string s = "mbarrier deadlock in kernel '" + *c.kernel + "', " +
                  (cl.size > 1 ? "cluster " + dims3(first.cluster_id) : "block " + dims3(first.block_idx)) +
                  ": every warp waits and none can make progress:";
  for (const Worker* w : cl.blocks)
    for (const Warp& warp : w->warps) {
      s += "\n  " + (cl.size > 1 ? "block " + dims3(w->block_idx) + " " : std::string()) + "warp " +
           std::to_string(warp.index) + " ";
      switch (warp.state) {
        case WarpState::AtMbarrier:
        case WarpState::Spinning: {
          s += warp.state == WarpState::AtMbarrier ? "waits" : "spins on try_wait";
          const ir::Op* op = warp.mbar_wait ? warp.mbar_wait->op : nullptr;
          if (op && op->line)
            s += " at " + (op->file.empty() ? std::string("line ") : op->file + ":") + std::to_string(op->line);
          s += " for phase parity " + std::to_string(warp.mbar_parity) + " of " +
               describe_mbarrier(w->mbarriers, warp.mbar, w->smem);
          break;
        }
        case WarpState::AtBarrier: s += "waits at sync_threads"; break;
        case WarpState::AtNamedBarrier: s += "waits at named barrier " + std::to_string(warp.barrier_id); break;
        case WarpState::Parked: s += "waits at " + wait_description(c, *w, warp); break;
        case WarpState::Done: s += "has finished"; break;
        case WarpState::Running: s += "runs"; break;
      }
    }
  return s;
}

[[noreturn]] void report_deadlock(const LaunchCtx& c, const ClusterState& cl) {
  for (const Worker* w : cl.blocks)
    for (const Warp& warp : w->warps)
      if (warp.state == WarpState::AtMbarrier || warp.state == WarpState::Spinning)
        throw ExecutionError(mbarrier_deadlock(c, cl));
  // One block waiting at named barriers only: the message names the barriers' counts.
  bool only_named = cl.size == 1;
  for (const Warp& warp : cl.blocks[0]->warps)
    only_named = only_named && (warp.state == WarpState::AtNamedBarrier || warp.state == WarpState::Done);
  if (only_named) {
    const Worker& w = *cl.blocks[0];
    std::string stuck;
    for (const Warp& warp : w.warps)
      if (warp.state == WarpState::AtNamedBarrier)
        stuck += (stuck.empty() ? "" : ", ") + std::to_string(warp.index) + " at barrier " +
                 std::to_string(warp.barrier_id) + " (" + std::to_string(w.named_arrived[warp.barrier_id]) + " of " +
                 std::to_string(w.named_count[warp.barrier_id]) + " threads arrived)";
    throw ExecutionError("named barrier deadlock in kernel '" + *c.kernel + "', block " + dims3(w.block_idx) +
                         ": warp(s) " + stuck + " wait, and no other warp can arrive");
  }
  std::string stuck;
  for (const Worker* w : cl.blocks)
    for (const Warp& warp : w->warps)
      if (warp.state != WarpState::Done)
        stuck += std::string(stuck.empty() ? "" : "; ") + "block " + dims3(w->block_idx) + " warp " +
                 std::to_string(warp.index) + " waits at " + wait_description(c, *w, warp);
  std::string where = cl.size > 1 ? "', cluster " + dims3(cl.blocks[0]->cluster_id) : "'";
  throw ExecutionError("deadlock in kernel '" + *c.kernel + where + ": no warp can proceed: " + stuck);
}

// Runs the blocks of one cluster to completion, their warps interleaved round-robin: a warp runs
// until it reaches a barrier, parks at a wait or ends.
void run_cluster(const LaunchCtx& c, ClusterState& cl, uint64_t linear_cluster) {
  const unsigned cc[3] = {unsigned(linear_cluster % cl.nclusters[0]),
                          unsigned((linear_cluster / cl.nclusters[0]) % cl.nclusters[1]),
                          unsigned(linear_cluster / (uint64_t(cl.nclusters[0]) * cl.nclusters[1]))};
  for (unsigned rank = 0; rank < cl.size; ++rank) {
    Worker& w = *cl.blocks[rank];
    w.rank = rank;
    w.in_cluster[0] = rank % cl.shape[0];
    w.in_cluster[1] = (rank / cl.shape[0]) % cl.shape[1];
    w.in_cluster[2] = rank / (cl.shape[0] * cl.shape[1]);
    for (int d = 0; d < 3; ++d) {
      w.cluster_id[d] = cc[d];
      w.block_idx[d] = cc[d] * cl.shape[d] + w.in_cluster[d];
    }
    start_block(c, w);
  }
  cl.barrier_arrived = cl.barrier_phase = 0;
  cl.live_threads = int64_t(cl.size) * c.block_threads;
  cl.epoch = 0;
  for (;;) {
    bool progress = false;
    const uint64_t epoch = cl.epoch;
    for (Worker* w : cl.blocks)
      for (Warp& warp : w->warps) {
        if (warp.state == WarpState::Running) {
          run_warp(c, *w, warp);
          progress = true;
        } else if (warp.state == WarpState::Parked) {
          const int pc = warp.pc;
          warp.state = WarpState::Running;
          run_warp(c, *w, warp);
          progress = progress || warp.state != WarpState::Parked || warp.pc != pc;
        }
      }
    // Wake the warps whose mbarrier moved (a peer CTA's arrival or a TMA landing may do it).
    for (Worker* w : cl.blocks)
      for (Warp& warp : w->warps) {
        if (warp.state == WarpState::AtMbarrier && w->mbarriers.phase_done(warp.mbar, warp.mbar_parity))
          warp.state = WarpState::Running, progress = true;
        else if (warp.state == WarpState::Spinning && warp.spin_epoch != w->mbarriers.epoch())
          warp.state = WarpState::Running, warp.spins = 0, progress = true;
      }
    progress = progress || cl.epoch != epoch;
    bool running = false, unfinished = false;
    for (Worker* w : cl.blocks) {
      int at_barrier = 0, done = 0, other = 0;
      for (const Warp& warp : w->warps) {
        if (warp.state == WarpState::AtBarrier) ++at_barrier;
        else if (warp.state == WarpState::Done) ++done;
        else ++other;
        running = running || warp.state == WarpState::Running;  // released by a named barrier
      }
      unfinished = unfinished || done != int(w->warps.size());
      if (!at_barrier || other) continue;
      if (done) {
        std::string finished, stuck;
        for (const Warp& warp : w->warps) {
          std::string& s = warp.state == WarpState::Done ? finished : stuck;
          s += (s.empty() ? "" : ",") + std::to_string(warp.index);
        }
        throw ExecutionError("sync_threads deadlock in kernel '" + *c.kernel + "', block " + dims3(w->block_idx) +
                             ": warp(s) " + finished + " finished while warp(s) " + stuck +
                             " wait at a barrier (a barrier inside divergent control flow?)");
      }
      // Every warp of the block is at sync_threads: release them.
      w->async.barrier();
      for (Warp& warp : w->warps) warp.state = WarpState::Running;
      running = progress = true;
    }
    if (!unfinished) return;
    if (running) continue;
    if (!progress) report_deadlock(c, cl);
  }
}

}  // namespace

void DeviceEmulator::launch(const LaunchRequest& r, const EmulatorConfig& cfg) const {
  for (int d = 0; d < 3; ++d)
    if (r.grid[d] == 0 || r.block[d] == 0)
      throw ExecutionError("kernel '" + kernel_.name + "' launched with an empty grid or block " + dims3(r.grid) +
                           " x " + dims3(r.block));
  uint64_t threads = uint64_t(r.block[0]) * r.block[1] * r.block[2];
  if (threads > 1024)
    throw ExecutionError("kernel '" + kernel_.name + "' launched with " + std::to_string(threads) +
                         " threads per block; at most 1024 are allowed");
  if (r.num_args != program_->arg_regs.size())
    throw ExecutionError("kernel '" + kernel_.name + "' expects " + std::to_string(program_->arg_regs.size()) +
                         " arguments, got " + std::to_string(r.num_args));
  LaunchCtx c;
  c.prog = program_.get();
  c.kernel = &kernel_.name;
  c.req = &r;
  // A kernel that makes global pointers out of integers it read (grouped GEMM's per-group
  // addresses) reaches buffers no argument describes: their extents are unknown, so trust them.
  EmulatorConfig trusting = cfg;
  trusting.strict = false;
  c.cfg = cfg.strict && forges_pointers_ ? &trusting : &cfg;
  c.block_threads = unsigned(threads);
  c.num_warps = int((threads + kWarp - 1) / kWarp);
  c.local_stride = size_t((program_->local_bytes + 15) / 16 * 16);
  // Clusters: the grid must be a whole number of clusters of at most 16 CTAs (H100's non-portable
  // limit; the GPU launch allows sizes above the portable 8).
  unsigned shape[3] = {1, 1, 1};
  if (r.has_cluster) {
    uint64_t size = 1;
    for (int d = 0; d < 3; ++d) {
      shape[d] = r.cluster[d];
      size *= shape[d];
      if (shape[d] == 0 || r.grid[d] % shape[d] != 0)
        throw ExecutionError("kernel '" + kernel_.name + "' launched with cluster " + dims3(r.cluster) +
                             ", which does not divide the grid " + dims3(r.grid) +
                             ": each grid dimension must be a multiple of the cluster's");
    }
    if (size > 16)
      throw ExecutionError("kernel '" + kernel_.name + "' launched with cluster " + dims3(r.cluster) + " of " +
                           std::to_string(size) + " CTAs; a cluster has at most 16 (8 portably)");
  }
  const unsigned cluster_size = shape[0] * shape[1] * shape[2];
  const unsigned nclusters3[3] = {r.grid[0] / shape[0], r.grid[1] / shape[1], r.grid[2] / shape[2]};
  const uint64_t clusters = uint64_t(nclusters3[0]) * nclusters3[1] * nclusters3[2];

  // One host thread's blocks: a cluster's worth, reused for each cluster the thread runs.
  struct ClusterRunner {
    std::vector<Worker> blocks;
    ClusterState state;
  };
  auto prepare = [&](ClusterRunner& runner) {
    runner.blocks.resize(cluster_size);
    for (int d = 0; d < 3; ++d) {
      runner.state.shape[d] = shape[d];
      runner.state.nclusters[d] = nclusters3[d];
    }
    runner.state.size = cluster_size;
    for (Worker& w : runner.blocks) {
      prepare_worker(c, w);
      w.cluster = &runner.state;
      runner.state.blocks.push_back(&w);
    }
  };

  int nthreads = cfg.threads > 0 ? cfg.threads : default_emulator_threads();
  if (has_printf_) nthreads = 1;  // output in block order
  // A cooperative grid is co-resident on the GPU (the launch checked its size): blocks may wait
  // for each other, so each cluster gets its own host thread and none waits for another to finish.
  if (r.cooperative) nthreads = int(clusters);
  nthreads = int(std::min<uint64_t>(uint64_t(nthreads), clusters));
  if (nthreads <= 1) {
    ClusterRunner runner;
    prepare(runner);
    for (uint64_t k = 0; k < clusters; ++k) run_cluster(c, runner.state, k);
    return;
  }
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex err_mu;
  std::exception_ptr first_error;
  uint64_t first_error_cluster = ~uint64_t(0);
  auto body = [&]() {
    ClusterRunner runner;
    try {
      prepare(runner);
    } catch (...) {
      std::lock_guard<std::mutex> lock(err_mu);
      if (!first_error) first_error = std::current_exception();
      failed = true;
      return;
    }
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      uint64_t k = next.fetch_add(1, std::memory_order_relaxed);
      if (k >= clusters) return;
      try {
        run_cluster(c, runner.state, k);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mu);
        // Report the lowest failing cluster seen, for stable messages.
        if (k < first_error_cluster) first_error_cluster = k, first_error = std::current_exception();
        failed = true;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < nthreads; ++t) pool.emplace_back(body);
  body();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace opencute::emulator
