// NVVM lowering of Blackwell's cluster launch control (sm_100+, PTX ISA 8.6), as inline PTX:
//   ClcTryCancel    -> clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes
//                      [.multicast::cluster::all].b128 [response], [mbar];
//   ClcQueryCancel  -> ld.shared.b128 of the response, then query_cancel.is_canceled and (when it is)
//                      query_cancel.get_first_ctaid.v4; the coordinates read 0 when nothing was canceled
#include <string>

#include "target/nvvm/op_lowering.h"

namespace opencute::target {
namespace {

using ir::Op;
using ir::OpCode;

// The 32-bit shared-window address of a pointer into shared memory (generic pointers are converted).
std::string shared_window_address(KernelLowering& k, const Op& op, const ir::Value* ptr) {
  return k.shared_window_address(op, ptr, "a cluster launch control pointer must point into shared memory");
}

void lower_try_cancel(const Op& op, KernelLowering& k) {
  const bool multicast = !op.ints.empty() && op.ints[0];
  std::string response = shared_window_address(k, op, op.operands[0]);
  std::string bar = shared_window_address(k, op, op.operands[1]);
  k.emit_line(std::string("call void asm sideeffect \"clusterlaunchcontrol.try_cancel.async.shared::cta."
                          "mbarrier::complete_tx::bytes") +
              (multicast ? ".multicast::cluster::all" : "") + ".b128 [$0], [$1];\", \"r,r,~{memory}\"(i32 " +
              response + ", i32 " + bar + ")");
}

void lower_query_cancel(const Op& op, KernelLowering& k) {
  std::string response = shared_window_address(k, op, op.operands[0]);
  const std::string ret = "{ i32, i32, i32, i32 }";
  std::string r = k.emit_def(
      "call " + ret +
      " asm sideeffect \"{\\0A\\09.reg .pred p;\\0A\\09.reg .b128 clc;\\0A\\09ld.shared.b128 clc, [$4];\\0A\\09"
      "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, clc;\\0A\\09selp.u32 $3, 1, 0, p;\\0A\\09"
      "mov.u32 $0, 0;\\0A\\09mov.u32 $1, 0;\\0A\\09mov.u32 $2, 0;\\0A\\09"
      "@p clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {$0, $1, $2, _}, clc;\\0A\\09}\", "
      "\"=r,=r,=r,=r,r,~{memory}\"(i32 " + response + ")");
  for (int i = 0; i < 3; ++i) k.define(op, i, k.emit_def("extractvalue " + ret + " " + r + ", " + std::to_string(i)));
  std::string canceled = k.emit_def("extractvalue " + ret + " " + r + ", 3");
  k.define(op, 3, k.emit_def("icmp ne i32 " + canceled + ", 0"));
}

}  // namespace

void register_cluster_launch_control_lowerings(LoweringTable& t) {
  t.add(OpCode::ClcTryCancel, lower_try_cancel);
  t.add(OpCode::ClcQueryCancel, lower_query_cancel);
}

}  // namespace opencute::target
