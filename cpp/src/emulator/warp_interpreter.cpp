// The warp interpreter: runs a warp's instructions, each on the warp's active lanes, through the
// handler its op family registered for the instruction's kind (op_handlers.h).
#include <stdexcept>
#include <string>

#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

void HandlerTable::add(K kind, RunInstFn fn) {
  RunInstFn& slot = fns_[size_t(kind)];
  if (slot) throw std::logic_error("emulator instruction kind " + std::to_string(int(kind)) + " has two handlers");
  slot = fn;
}

void HandlerTable::check_complete() const {
  for (size_t k = 0; k < fns_.size(); ++k)
    if (!fns_[k]) throw std::logic_error("emulator instruction kind " + std::to_string(k) + " has no handler");
}

const HandlerTable& emulator_handlers() {
  static const HandlerTable table = [] {
    HandlerTable t;
    register_scalar_handlers(t);
    register_conversion_handlers(t);
    register_memory_handlers(t);
    register_atomic_handlers(t);
    register_control_flow_handlers(t);
    register_thread_handlers(t);
    register_printf_assert_handlers(t);
    register_sm80_copy_handlers(t);
    register_sm80_mma_handlers(t);
    register_sm120_mma_handlers(t);
    register_sm90_mma_handlers(t);
    register_sm90_async_handlers(t);
    register_sm90_warp_handlers(t);
    register_cluster_launch_control_handlers(t);
    register_sm100_tmem_handlers(t);
    register_sm100_mma_handlers(t);
    register_sm90_tensormap_handlers(t);
    t.check_complete();
    return t;
  }();
  return table;
}

void run_warp(const LaunchCtx& c, Worker& w, Warp& warp) {
  const Inst* code = c.prog->code.data();
  const HandlerTable& handlers = emulator_handlers();
  for (;;) {
    const Inst& i = code[warp.pc];
    if (warp.tmem_pending_ld) check_tmem_pending(c, w, warp, i);
    switch (handlers.find(i.kind)(i, c, w, warp)) {
      case Flow::Next: ++warp.pc; break;
      case Flow::Jumped: break;
      case Flow::Stop: return;
    }
  }
}

}  // namespace opencute::emulator
