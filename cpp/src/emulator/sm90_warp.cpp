#include "emulator/sm90_warp.h"

#include <cstdio>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {
namespace {

std::string hex32(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%08llx", (unsigned long long)v);
  return buf;
}

}  // namespace

uint32_t prmt_b32(uint32_t a, uint32_t b, uint32_t selector) {
  const uint64_t bytes = uint64_t(a) | (uint64_t(b) << 32);
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) {
    uint32_t nib = (selector >> (4 * k)) & 0xf;
    uint32_t byte = uint32_t(bytes >> (8 * (nib & 7))) & 0xff;
    if (nib & 8) byte = (byte & 0x80) ? 0xff : 0x00;
    r |= byte << (8 * k);
  }
  return r;
}

std::string execute_sm90_warp(const Inst& i, Scalar* R, uint32_t m, uint32_t live, int* lane) {
  auto at = [R](int reg, int l) -> Scalar& { return R[size_t(reg) * kWarp + size_t(l)]; };
  if (!m) return "";
  const int l0 = __builtin_ctz(m);
  *lane = l0;
  switch (i.code) {
    case OpCode::ElectOne:
    case OpCode::SyncWarp: {
      const char* what = i.code == OpCode::ElectOne ? "elect_one" : "sync_warp";
      // Every executing lane must name itself in the member mask, and all of them the same mask.
      const uint32_t member = uint32_t(at(i.a, l0).i);
      for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        if (uint32_t(at(i.a, l).i) != member) {
          *lane = l;
          return std::string(what) + " with different member masks across the warp (" + hex32(member) + " and " +
                 hex32(uint32_t(at(i.a, l).i)) + ")";
        }
        if (!((member >> l) & 1)) {
          *lane = l;
          return std::string(what) + " by lane " + std::to_string(l) + ", which is not in its member mask " + hex32(member);
        }
      }
      if (i.code == OpCode::ElectOne) {
        // The leader is the lowest active lane of the mask (the GPU may pick any one of them).
        for (uint32_t mm = m; mm; mm &= mm - 1) {
          int l = __builtin_ctz(mm);
          at(i.dst, l).i = l == l0 ? 1 : 0;
        }
      }
      return "";
    }
    case OpCode::SetMaxNReg:
      // .sync.aligned: the whole warp executes it together; the register budget itself does not
      // exist on the CPU.
      if (m != live)
        return std::string(i.imm >> 32 ? "setmaxregister_increase" : "setmaxregister_decrease") +
               " (setmaxnreg.sync.aligned) executed by only some threads of the warp (lanes " + hex32(m) + " of " +
               hex32(live) + ")";
      return "";
    case OpCode::Prmt:
      for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        uint32_t r = prmt_b32(uint32_t(at(i.a, l).i), uint32_t(at(i.b, l).i), uint32_t(at(i.c, l).i));
        at(i.dst, l).i = int32_t(r);
      }
      return "";
    case OpCode::WarpUniform: {
      const Scalar first = at(i.a, l0);
      for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        if (at(i.a, l).i != first.i) {
          *lane = l;
          return "make_warp_uniform of a value that differs across the warp (lane " + std::to_string(l0) + ": " +
                 std::to_string(first.i) + ", lane " + std::to_string(l) + ": " + std::to_string(at(i.a, l).i) + ")";
        }
        at(i.dst, l) = at(i.a, l);
      }
      return "";
    }
    default:
      return std::string("not an SM90 warp op: ") + ir::opcode_name(i.code);
  }
}

bool lower_sm90_warp(DeviceEmulator::Program& p, const ir::Op& op) {
  auto reg_or = [&](size_t k) { return k < op.operands.size() ? p.reg(op.operands[k]) : -1; };
  Inst i(K::Sm90Warp);
  i.op = &op;
  i.code = op.code;
  switch (op.code) {
    case OpCode::ElectOne: case OpCode::SyncWarp: case OpCode::SetMaxNReg: case OpCode::Prmt: case OpCode::WarpUniform:
      break;
    case OpCode::ClusterSreg: case OpCode::ClusterBarrier: case OpCode::MapSharedRank:
      i.kind = K::Cluster;
      break;
    default:
      return false;
  }
  i.a = reg_or(0), i.b = reg_or(1), i.c = reg_or(2);
  // int_attr in the low 32 bits, ints[0] (dimension / aligned / increase) above them.
  i.imm = op.int_attr | (op.ints.empty() ? 0 : op.ints[0] << 32);
  if (!op.results.empty()) {
    i.dst = p.reg(op.result());
    i.type = op.result()->type;
  }
  p.emit(std::move(i));
  return true;
}

// ---- the warp interpreter's handlers ---------------------------------------------------------

namespace {

Flow exec_sm90_warp(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  int bad = 0;
  std::string e = execute_sm90_warp(i, warp.regs, m, warp.live, &bad);
  if (!e.empty()) fail_at(c, w, warp, bad, i, e);
  return Flow::Next;
}

// Cluster special registers, barrier.cluster and mapa: they reach the cluster's blocks. Stops the warp
// when it parks at barrier.cluster.wait before the phase completed.
Flow exec_cluster(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  ClusterState& cl = *w.cluster;
  const uint32_t m = warp.mask;
  const int64_t attr = i.imm & 0xffffffff, extra = i.imm >> 32;
  const LaneRegs at{warp.regs};
  if (!m) return Flow::Next;
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
      return Flow::Next;
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
        return Flow::Next;
      }
      // A wait completes the phase its threads arrived in; threads with no arrival pending (none
      // yet, or their last phase already waited for) have none to wait for and go on, as on the GPU
      // (CUTLASS's pipeline_init_wait is a bare cluster_wait).
      if ((warp.cluster_arrived & m) == 0) return Flow::Next;
      if ((warp.cluster_arrived & m) != m)
        fail_at(c, w, warp, __builtin_ctz(m & ~warp.cluster_arrived), i,
                "cluster_wait by a thread that did not cluster_arrive first");
      if (cl.barrier_phase > warp.cluster_phase) {
        warp.cluster_arrived &= ~m;
        return Flow::Next;
      }
      warp.state = WarpState::Parked;
      return Flow::Stop;
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
      return Flow::Next;
    default:
      fail_at(c, w, warp, l0, i, std::string("not a cluster op: ") + ir::opcode_name(i.code));
  }
}

}  // namespace

void register_sm90_warp_handlers(HandlerTable& t) {
  t.add(K::Sm90Warp, exec_sm90_warp);
  t.add(K::Cluster, exec_cluster);
}

}  // namespace opencute::emulator
