// CPU semantics of value conversions (cast) and bit reinterpretation (bitcast), per lane.
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

namespace {

Flow exec_cast(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = ir::eval_cast(i.in_type, i.type, at(i.a + k, l)); }
  return Flow::Next;
}

Flow exec_bitcast(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  FOR_LANES(m) { int l = LANE; at(i.dst, l) = ir::eval_bitcast(i.in_type, i.type, at(i.a, l)); }
  return Flow::Next;
}

}  // namespace

void register_conversion_handlers(HandlerTable& t) {
  t.add(K::Cast, exec_cast);
  t.add(K::Bitcast, exec_bitcast);
}

}  // namespace opencute::emulator
