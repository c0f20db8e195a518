// The warp's control flow: the mask stack of if / else and loops (a branch runs each side with its
// lanes, a loop iterates while any lane is active), jumps and return.
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

}  // namespace

void register_control_flow_handlers(HandlerTable& t) {
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
}

}  // namespace opencute::emulator
