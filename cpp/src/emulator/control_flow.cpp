// The warp's control flow: the mask stack of if / else and loops (a branch runs each side with its
// lanes, a loop iterates while any lane is active), jumps, return, and the block barriers
// (sync_threads parks the warp for the scheduler; named barriers count arriving warps).
#include <string>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

namespace {

Flow exec_if(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  uint32_t t = 0;
  FOR_LANES(m) { int l = LANE; if (at(i.a, l).i) t |= 1u << l; }
  warp.stack.push_back({m, m & ~t});
  warp.mask = t;
  if (!t) { warp.pc = i.target; return Flow::Jumped; }
  return Flow::Next;
}

Flow exec_else(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  warp.mask = warp.stack.back().other;
  if (!warp.mask) { warp.pc = i.target; return Flow::Jumped; }
  return Flow::Next;
}

// EndIf and LoopEnd: back to the mask at the entry of the if / loop.
Flow exec_end_mask(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  warp.mask = warp.stack.back().saved;
  warp.stack.pop_back();
  return Flow::Next;
}

Flow exec_loop_begin(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  warp.stack.push_back({m, 0});
  return Flow::Next;
}

Flow exec_for_test(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
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
  if (!keep) { warp.pc = i.target; return Flow::Jumped; }
  return Flow::Next;
}

Flow exec_for_step(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  FOR_LANES(m) {
    int l = LANE;
    ir::eval_binary(OpCode::Add, i.in_type, at(i.a, l), at(i.b, l), &at(i.a, l), nullptr);
  }
  return Flow::Next;
}

Flow exec_while_test(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  uint32_t keep = 0;
  FOR_LANES(m) { int l = LANE; if (at(i.a, l).i) keep |= 1u << l; }
  warp.mask = keep;
  if (!keep) { warp.pc = i.target; return Flow::Jumped; }
  return Flow::Next;
}

Flow exec_jump(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  warp.pc = i.target;
  return Flow::Jumped;
}

Flow exec_return(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  warp.state = WarpState::Done;
  warp_exits(w, warp);
  return Flow::Stop;
}

Flow exec_barrier(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  warp.pc++;
  warp.state = WarpState::AtBarrier;
  return Flow::Stop;
}

Flow exec_named_barrier(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  // PTX bar.sync / bar.arrive: the warp counts as 32 threads; the barrier completes when
  // `count` threads arrived, releasing the warps that wait at it.
  if (!m) return Flow::Next;
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
  if (warp.state != WarpState::Running) return Flow::Stop;
  return Flow::Jumped;  // the pc is already past the barrier
}

}  // namespace

void register_control_flow_handlers(OpHandlerTable& t) {
  t.add(K::If, exec_if);
  t.add(K::Else, exec_else);
  t.add(K::EndIf, exec_end_mask);
  t.add(K::LoopEnd, exec_end_mask);
  t.add(K::LoopBegin, exec_loop_begin);
  t.add(K::ForTest, exec_for_test);
  t.add(K::ForStep, exec_for_step);
  t.add(K::WhileTest, exec_while_test);
  t.add(K::Jump, exec_jump);
  t.add(K::Return, exec_return);
  t.add(K::Barrier, exec_barrier);
  t.add(K::NamedBarrier, exec_named_barrier);
}

}  // namespace opencute::emulator
