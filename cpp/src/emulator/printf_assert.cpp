// Device printf (each active lane formats and writes its line, in lane order) and device
// assertions (the first failing lane raises AssertionFailure, diagnostics.cpp words it).
#include <cstdio>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

namespace {

Flow exec_printf(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  FOR_LANES(m) {
    int l = LANE;
    w.printf_vals.resize(i.srcs.size());
    for (size_t k = 0; k < i.srcs.size(); ++k) w.printf_vals[k] = at(i.srcs[k], l);
    w.text.clear();
    format_printf(i.op->str_attr, i.types, w.printf_vals, &w.text);
    std::fwrite(w.text.data(), 1, w.text.size(), stdout);
  }
  std::fflush(stdout);
  return Flow::Next;
}

Flow exec_assert(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  FOR_LANES(m) {
    int l = LANE;
    if (!at(i.a, l).i) report_assertion(c, w, warp, l, i);
  }
  return Flow::Next;
}

}  // namespace

void register_printf_assert_handlers(HandlerTable& t) {
  t.add(K::Printf, exec_printf);
  t.add(K::Assert, exec_assert);
}

}  // namespace opencute::emulator
