#include "emulator/diagnostics.h"

#include <algorithm>
#include <cstdio>

namespace opencute::emulator {

std::string hex(uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)a);
  return buf;
}

std::string dims3(const unsigned d[3]) {
  return "(" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + ")";
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
  throw ExecutionError(what + " " + where(c, w, warp, lane, i), i.op ? i.op->file : "", i.op ? i.op->line : 0);
}

[[noreturn]] static void bad_access(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane,
                                    const Inst& i, uintptr_t addr, size_t bytes, bool store, bool misaligned) {
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
  throw ExecutionError(what, i.op ? i.op->file : "", i.op ? i.op->line : 0);
}

uintptr_t check_access(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i, uintptr_t addr,
                       size_t bytes, bool store) {
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
    if (in_smem(w, addr, bytes)) return addr;
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
  if (addr >= lb && addr + bytes <= lb + c.local_stride) return addr;
  if (!c.cfg->regions && !c.cfg->device_memory) return addr;
  if (c.cfg->regions)
    for (const MemoryRegion& r : *c.cfg->regions)
      if (addr >= r.begin && addr + bytes <= r.end) return addr;
  if (in_smem(w, addr, bytes)) return addr;
  if (w.cluster->size > 1 && cluster_block_holding(w, addr, bytes)) return addr;  // distributed shared memory
  // A device address (loaded from memory or computed) stands for its staged host copy. In a strict
  // launch an address the map refuses is reported as any access outside the buffers.
  if (c.cfg->device_memory) {
    uintptr_t host = addr;
    try {
      host = c.cfg->device_memory->host_address(addr, bytes);
    } catch (const ExecutionError& e) {
      if (c.cfg->strict && c.cfg->regions) bad_access(c, w, warp, lane, i, addr, bytes, store, false);
      fail_at(c, w, warp, lane, i, std::string("an access of ") + std::to_string(bytes) + " bytes at address " +
                                       hex(addr) + ": " + e.what());
    }
    // (A host copy keeps its device address's alignment: `addr` was checked above.)
    if (host != addr) return host;
  }
  if (c.cfg->strict && c.cfg->regions) bad_access(c, w, warp, lane, i, addr, bytes, store, false);
  return addr;
}

bool plain_global_run(const LaunchCtx& c, const Worker& w, uintptr_t addr, size_t bytes, uintptr_t* host) {
  if (addr == 0 || bytes == 0) return false;
  auto overlaps = [&](uintptr_t b, size_t n) { return n && addr < b + n && b < addr + bytes; };
  for (const Worker* b : w.cluster->blocks)
    if (overlaps(reinterpret_cast<uintptr_t>(b->smem), b->smem_size)) return false;
  if (overlaps(reinterpret_cast<uintptr_t>(w.local.data()), w.local.size())) return false;
  *host = addr;
  if (!c.cfg->regions && !c.cfg->device_memory) return true;
  if (c.cfg->regions) {
    for (const MemoryRegion& r : *c.cfg->regions)
      if (addr >= r.begin && addr + bytes <= r.end) return true;
    for (const MemoryRegion& r : *c.cfg->regions)
      if (overlaps(r.begin, r.end - r.begin)) return false;  // partly inside a buffer: elements differ
  }
  if (c.cfg->device_memory) {
    try {
      *host = c.cfg->device_memory->host_address(addr, bytes);
    } catch (const ExecutionError&) {
      return false;
    }
    if (*host != addr) return true;
  }
  return !(c.cfg->strict && c.cfg->regions);
}

uintptr_t device_host_address(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                              uintptr_t addr, size_t bytes) {
  if (!c.cfg->device_memory) return addr;
  try {
    return c.cfg->device_memory->host_address(addr, bytes);
  } catch (const ExecutionError& e) {
    fail_at(c, w, warp, lane, i, std::string("an access of ") + std::to_string(bytes) + " bytes at address " + hex(addr) +
                                     ": " + e.what());
  }
}

[[noreturn]] void report_assertion(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i) {
  unsigned t[3];
  thread_coords(c, warp.first_thread + unsigned(lane), t);
  const ir::Op& op = *i.op;
  throw AssertionFailure("device assertion failed in kernel '" + *c.kernel + "', block " + dims3(w.block_idx) +
                             " thread " + dims3(t) + ": " + op.str_attr + " (" + op.file + ":" +
                             std::to_string(op.line) + ")",
                         op.file, op.line);
}

[[noreturn]] void report_sync_threads_deadlock(const LaunchCtx& c, const Worker& w) {
  std::string finished, stuck;
  for (const Warp& warp : w.warps) {
    std::string& s = warp.state == WarpState::Done ? finished : stuck;
    s += (s.empty() ? "" : ",") + std::to_string(warp.index);
  }
  throw ExecutionError("sync_threads deadlock in kernel '" + *c.kernel + "', block " + dims3(w.block_idx) +
                       ": warp(s) " + finished + " finished while warp(s) " + stuck +
                       " wait at a barrier (a barrier inside divergent control flow?)");
}

// What a waiting warp waits for, for the deadlock report.
static std::string wait_description(const LaunchCtx& c, const Worker& w, const Warp& warp) {
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
      else if (i.code == OpCode::TmemAlloc)  // .cta_group::2 (sm100_tmem.h)
        s = "tcgen05.alloc.cta_group::2 for the peer CTA's warp to allocate with it";
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
static std::string mbarrier_deadlock(const LaunchCtx& c, const ClusterState& cl) {
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
      if (warp.state == WarpState::AtMbarrier || warp.state == WarpState::Spinning) {
        // The source frame: where the first waiting warp waits.
        const ir::Op* at = warp.mbar_wait ? warp.mbar_wait->op : nullptr;
        throw ExecutionError(mbarrier_deadlock(c, cl), at ? at->file : "", at ? at->line : 0);
      }
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
  const ir::Op* first = nullptr;  // the source frame: the first wait at a known line
  for (const Worker* w : cl.blocks)
    for (const Warp& warp : w->warps)
      if (warp.state != WarpState::Done) {
        stuck += std::string(stuck.empty() ? "" : "; ") + "block " + dims3(w->block_idx) + " warp " +
                 std::to_string(warp.index) + " waits at " + wait_description(c, *w, warp);
        const Inst& i = c.prog->code[size_t(warp.pc)];
        if (!first && warp.state == WarpState::Parked && i.op && i.op->line) first = i.op;
      }
  std::string where = cl.size > 1 ? "', cluster " + dims3(cl.blocks[0]->cluster_id) : "'";
  throw ExecutionError("deadlock in kernel '" + *c.kernel + where + ": no warp can proceed: " + stuck,
                       first ? first->file : "", first ? first->line : 0);
}

void report_leaked_tmem(const LaunchCtx& c, const Worker& w) {
  int64_t columns = 0;
  const ir::Op* op = w.tmem.leaked(&columns);
  if (!op) return;
  std::string at = op->line ? " (line " + std::to_string(op->line) + ")" : "";
  throw ExecutionError("tensor memory leaked in kernel '" + *c.kernel + "'" + at + ", block " + dims3(w.block_idx) +
                       ": " + std::to_string(columns) +
                       " columns allocated by tcgen05.alloc were never freed (tcgen05.dealloc) before the CTA exited",
                       op->file, op->line);
}

// " at FILE:LINE" (or " at line N") of an op the user wrote, "" when unknown.
static std::string at_line(const ir::Op* op) {
  if (!op || !op->line) return "";
  return " at " + (op->file.empty() ? std::string("line ") : op->file + ":") + std::to_string(op->line);
}

std::string describe_mma_in_flight(const ClusterState& cl, const MmaCompletion::InFlight& m) {
  std::string s = "the tcgen05.mma" + at_line(m.op) + " writing columns [" + std::to_string(m.begin) + ", " +
                  std::to_string(m.end) + ")";
  if (!m.commit)
    return s + " is not followed by a tcgen05.commit, so nothing can tell that it completed (commit it to an "
               "mbarrier, e.g. tcgen05.commit or the pipeline's consumer_release / producer_commit, and wait on that "
               "mbarrier)";
  const Worker& holder = *cl.blocks[m.commit_block];
  const std::string bar = "the mbarrier at shared offset " +
                          std::to_string(int64_t(m.commit_bar - reinterpret_cast<uintptr_t>(holder.smem))) +
                          (cl.size > 1 ? " of block " + dims3(holder.block_idx) : std::string());
  return s + " is committed by the tcgen05.commit" + at_line(m.commit) + " to " + bar +
         ", but no thread has waited for that arrival's phase (mbarrier_wait / the pipeline's consumer_wait)";
}

void report_mma_in_flight_at_exit(const LaunchCtx& c, const Worker& w) {
  const ClusterState& cl = *w.cluster;
  if (!cl.mma_completion.any_in_flight()) return;
  const MmaCompletion::InFlight* m = cl.mma_completion.in_flight(w.rank);
  if (!m) return;
  throw ExecutionError("tcgen05.mma still in flight in kernel '" + *c.kernel + "'" +
                           (m->op && m->op->line ? " (line " + std::to_string(m->op->line) + ")" : std::string()) +
                           ", block " + dims3(w.block_idx) + " exits while " + describe_mma_in_flight(cl, *m),
                       m->op ? m->op->file : "", m->op ? m->op->line : 0);
}

void check_launch_not_empty(const LaunchRequest& r, const std::string& kernel) {
  for (int d = 0; d < 3; ++d)
    if (r.grid[d] == 0 || r.block[d] == 0)
      throw ExecutionError("kernel '" + kernel + "' launched with an empty grid or block " + dims3(r.grid) +
                           " x " + dims3(r.block));
}

void check_launch(const LaunchRequest& r, const std::string& kernel, size_t num_args) {
  check_launch_not_empty(r, kernel);
  uint64_t threads = uint64_t(r.block[0]) * r.block[1] * r.block[2];
  if (threads > 1024)
    throw ExecutionError("kernel '" + kernel + "' launched with " + std::to_string(threads) +
                         " threads per block; at most 1024 are allowed");
  if (r.num_args != num_args)
    throw ExecutionError("kernel '" + kernel + "' expects " + std::to_string(num_args) +
                         " arguments, got " + std::to_string(r.num_args));
  // Clusters: the grid must be a whole number of clusters of at most 16 CTAs (H100's non-portable
  // limit; the GPU launch allows sizes above the portable 8).
  if (r.has_cluster) {
    uint64_t size = 1;
    for (int d = 0; d < 3; ++d) {
      size *= r.cluster[d];
      if (r.cluster[d] == 0 || r.grid[d] % r.cluster[d] != 0)
        throw ExecutionError("kernel '" + kernel + "' launched with cluster " + dims3(r.cluster) +
                             ", which does not divide the grid " + dims3(r.grid) +
                             ": each grid dimension must be a multiple of the cluster's");
    }
    if (size > 16)
      throw ExecutionError("kernel '" + kernel + "' launched with cluster " + dims3(r.cluster) + " of " +
                           std::to_string(size) + " CTAs; a cluster has at most 16 (8 portably)");
  }
}

// Lowering (device_lowering.cpp and the op families' lower_* functions) finds an op it cannot run.
[[noreturn]] void DeviceEmulator::Program::unsupported(const ir::Op& op, const std::string& kernel,
                                                      const std::string& why) {
  throw ExecutionError("operation '" + std::string(ir::opcode_name(op.code)) + "' in kernel '" + kernel +
                       "' is not supported by the CPU emulator" + (why.empty() ? "" : " (" + why + ")") +
                       (op.line ? " (line " + std::to_string(op.line) + ")" : ""));
}

}  // namespace opencute::emulator
