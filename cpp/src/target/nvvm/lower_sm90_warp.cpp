// NVVM lowering of the Hopper warp / CTA and cluster family (ir.h). Each op is one PTX
// instruction through inline assembly, which libNVVM passes to the PTX as written:
//   ClusterSreg     -> mov.u32 %clusterid.x / %nclusterid / %cluster_ctaid / %cluster_nctaid /
//                      %cluster_ctarank / %cluster_nctarank
//   ClusterBarrier  -> barrier.cluster.arrive[.relaxed][.aligned] / barrier.cluster.wait[.aligned]
//   MapSharedRank   -> mapa.u64 on the generic address (the result is a generic address into the
//                      other CTA's shared memory, which ordinary ld / st / atom reach)
//   ElectOne        -> elect.sync _|p, mask
//   SyncWarp        -> bar.warp.sync mask
//   SetMaxNReg      -> setmaxnreg.{inc,dec}.sync.aligned.u32 N    (sm_90a)
//   Prmt            -> prmt.b32
//   WarpUniform     -> the value itself (a promise to the compiler, checked by the emulator)
#include <string>

#include "target/nvvm/op_lowering.h"

namespace opencute::target {
namespace {

using ir::Op;
using ir::OpCode;

std::string sreg_name(const Op& op) {
  static const char* const base[] = {"clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid", "cluster_ctarank",
                                     "cluster_nctarank"};
  auto kind = ir::ClusterSregKind(op.int_attr);
  std::string s = std::string("%") + base[int(kind)];
  if (kind != ir::ClusterSregKind::CtaRank && kind != ir::ClusterSregKind::ClusterSize)
    s += std::string(".") + "xyz"[op.ints.at(0)];
  return s;
}

void lower_map_shared_rank(const Op& op, KernelLowering& k) {
  const ir::Value* p = op.operands[0];
  ir::Type generic = op.result()->type;
  std::string ptr = k.operand(p);
  if (p->type->space != ir::AddrSpace::Generic)
    ptr = k.emit_def("addrspacecast " + llvm_type(p->type) + " " + ptr + " to " + llvm_type(generic));
  std::string addr = k.emit_def("ptrtoint " + llvm_type(generic) + " " + ptr + " to i64");
  std::string mapped = k.emit_def("call i64 asm \"mapa.u64 $0, $1, $2;\", \"=l,l,r\"(i64 " + addr + ", i32 " +
                                  k.operand(op.operands[1]) + ")");
  k.define(op, 0, k.emit_def("inttoptr i64 " + mapped + " to " + llvm_type(generic)));
}

void lower_cluster_barrier(const Op& op, KernelLowering& k) {
  auto kind = ir::ClusterBarrierKind(op.int_attr);
  std::string insn = kind == ir::ClusterBarrierKind::Wait ? "barrier.cluster.wait"
                     : kind == ir::ClusterBarrierKind::Arrive ? "barrier.cluster.arrive"
                                                              : "barrier.cluster.arrive.relaxed";
  if (op.ints.at(0)) insn += ".aligned";
  k.emit_line("call void asm sideeffect \"" + insn + ";\", \"~{memory}\"()");
}

void lower_elect_one(const Op& op, KernelLowering& k) {
  std::string r = k.emit_def(
      "call i32 asm sideeffect \"{\\0A\\09.reg .pred p;\\0A\\09elect.sync _|p, $1;\\0A\\09selp.u32 $0, 1, 0, p;\\0A\\09}\", "
      "\"=r,r\"(i32 " + k.operand(op.operands[0]) + ")");
  k.define(op, 0, k.emit_def("icmp ne i32 " + r + ", 0"));
}

void lower_prmt(const Op& op, KernelLowering& k) {
  k.define(op, 0, k.emit_def("call i32 asm \"prmt.b32 $0, $1, $2, $3;\", \"=r,r,r,r\"(i32 " + k.operand(op.operands[0]) +
                             ", i32 " + k.operand(op.operands[1]) + ", i32 " + k.operand(op.operands[2]) + ")"));
}

}  // namespace

void register_sm90_warp_lowerings(LoweringTable& t) {
  t.add(OpCode::ClusterSreg, [](const Op& op, KernelLowering& k) {
    k.define(op, 0, k.emit_def("call i32 asm \"mov.u32 $0, " + sreg_name(op) + ";\", \"=r\"()"));
  });
  t.add(OpCode::ClusterBarrier, lower_cluster_barrier);
  t.add(OpCode::MapSharedRank, lower_map_shared_rank);
  t.add(OpCode::ElectOne, lower_elect_one);
  t.add(OpCode::SyncWarp, [](const Op& op, KernelLowering& k) {
    k.emit_line("call void asm sideeffect \"bar.warp.sync $0;\", \"r,~{memory}\"(i32 " + k.operand(op.operands[0]) + ")");
  });
  t.add(OpCode::SetMaxNReg, [](const Op& op, KernelLowering& k) {
    k.emit_line(std::string("call void asm sideeffect \"setmaxnreg.") + (op.ints.at(0) ? "inc" : "dec") +
                ".sync.aligned.u32 " + std::to_string(op.int_attr) + ";\", \"\"()");
  });
  t.add(OpCode::Prmt, lower_prmt);
  // A promise to the compiler (checked by the emulator): the value itself.
  t.add(OpCode::WarpUniform, [](const Op& op, KernelLowering& k) { k.define(op, 0, k.operand(op.operands[0])); });
}

}  // namespace opencute::target
