#include "emulator/cluster_launch_control.h"

#include <atomic>
#include <cstring>
#include <string>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

bool lower_cluster_launch_control(DeviceEmulator::Program& p, const ir::Op& op) {
  Inst i(K::ClusterLaunchControl);
  i.op = &op;
  i.code = op.code;
  switch (op.code) {
    case OpCode::ClcTryCancel:
      i.a = p.reg(op.operands[0]), i.b = p.reg(op.operands[1]);
      i.imm = !op.ints.empty() && op.ints[0];
      break;
    case OpCode::ClcQueryCancel:
      i.a = p.reg(op.operands[0]);
      for (int k = 0; k < 4; ++k) i.dsts.push_back(p.reg(op.result(k)));
      break;
    default:
      return false;
  }
  p.emit(std::move(i));
  return true;
}

namespace {

// The shared-memory offset of a lane's pointer operand, checked: inside the block's shared memory
// and aligned to `align` bytes.
size_t smem_offset(const LaunchCtx& c, Worker& w, Warp& warp, int lane, const Inst& i, int reg, size_t bytes,
                   size_t align, const char* what) {
  const uintptr_t addr = uintptr_t(LaneRegs{warp.regs}(reg, lane).i);
  if (!in_smem(w, addr, bytes))
    fail_at(c, w, warp, lane, i, std::string(ir::opcode_name(i.code)) + ": the " + what + " at " + hex(addr) +
                                     " lies outside the block's shared memory");
  const size_t offset = addr - reinterpret_cast<uintptr_t>(w.smem);
  if (offset % align)
    fail_at(c, w, warp, lane, i, std::string(ir::opcode_name(i.code)) + ": the " + what + " at shared offset " +
                                     std::to_string(offset) + " is not " + std::to_string(align) + "-byte aligned");
  return offset;
}

// Takes the next cluster not launched yet, if any: its index, else -1.
int64_t cancel_next_cluster(const LaunchCtx& c) {
  const uint64_t k = c.next_cluster->fetch_add(1, std::memory_order_relaxed);
  return k < c.num_clusters ? int64_t(k) : -1;
}

void try_cancel(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp, int lane) {
  ClusterState& cl = *w.cluster;
  const size_t response = smem_offset(c, w, warp, lane, i, i.a, 16, 16, "response");
  const size_t bar = smem_offset(c, w, warp, lane, i, i.b, 8, 8, "mbarrier");
  const bool multicast = i.imm != 0;
  // Every receiving CTA's barrier must exist before the hardware signals it.
  for (unsigned r = 0; r < cl.size; ++r) {
    Worker& to = *cl.blocks[r];
    if (!multicast && &to != &w) continue;
    if (!to.mbarriers.find(reinterpret_cast<uintptr_t>(to.smem) + bar))
      fail_at(c, w, warp, lane, i, "issue_clc_query signals the mbarrier at shared offset " + std::to_string(bar) +
                                       (multicast ? " of CTA rank " + std::to_string(r) : std::string()) +
                                       ", which was never initialised (mbarrier_init)");
  }
  uint32_t answer[4] = {0, 0, 0, kClcResponseTag};
  const int64_t k = cancel_next_cluster(c);
  if (k >= 0) {
    const uint64_t n0 = cl.nclusters[0], n1 = cl.nclusters[1];
    const uint64_t cc[3] = {uint64_t(k) % n0, (uint64_t(k) / n0) % n1, uint64_t(k) / (n0 * n1)};
    for (int d = 0; d < 3; ++d) answer[d] = uint32_t(cc[d] * cl.shape[d]);
    answer[3] |= 1;
  }
  for (unsigned r = 0; r < cl.size; ++r) {
    Worker& to = *cl.blocks[r];
    if (!multicast && &to != &w) continue;
    std::memcpy(to.smem + response, answer, sizeof answer);
    to.mbarriers.complete_tx(reinterpret_cast<uintptr_t>(to.smem) + bar, 16);
  }
}

void query_cancel(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp, int lane) {
  const size_t response = smem_offset(c, w, warp, lane, i, i.a, 16, 16, "response");
  uint32_t answer[4];
  std::memcpy(answer, w.smem + response, sizeof answer);
  if ((answer[3] & ~1u) != kClcResponseTag)
    fail_at(c, w, warp, lane, i, "clc_response reads 16 bytes at shared offset " + std::to_string(response) +
                                     " that no issue_clc_query wrote (wait on its mbarrier before reading the response)");
  const bool canceled = answer[3] & 1;
  const LaneRegs at{warp.regs};
  for (int d = 0; d < 3; ++d) at(i.dsts[size_t(d)], lane).i = canceled ? int64_t(answer[d]) : 0;
  at(i.dsts[3], lane).i = canceled;
}

// Each active lane issues its own request (PTX: the instruction is per thread; kernels call it
// from one elected thread).
Flow exec_cluster_launch_control(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  FOR_LANES(warp.mask) {
    if (i.code == OpCode::ClcTryCancel) try_cancel(i, c, w, warp, LANE);
    else query_cancel(i, c, w, warp, LANE);
  }
  return Flow::Next;
}

}  // namespace

void register_cluster_launch_control_handlers(HandlerTable& t) {
  t.add(K::ClusterLaunchControl, exec_cluster_launch_control);
}

}  // namespace opencute::emulator
