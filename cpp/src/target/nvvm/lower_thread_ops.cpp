// NVVM lowering of the thread family: thread / block indices and dimensions, lane and warp index
// (special registers through llvm.nvvm.read.ptx.sreg.*), barriers (bar.sync 0, named bar.sync /
// bar.arrive) and the warp collectives shuffle (shfl.sync), vote (vote.sync) and redux (redux.sync).
#include <string>

#include "ir/arch_attributes.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

using ir::Op;
using ir::OpCode;

namespace {

std::string sreg(KernelLowering& k, const std::string& name) {
  return k.call_intrinsic("i32", "llvm.nvvm.read.ptx.sreg." + name, {}, "");
}

std::string sreg_dim(KernelLowering& k, const Op& op, const char* base) {
  if (op.int_attr < 0 || op.int_attr > 2) k.error(op, "dimension must be 0, 1 or 2");
  return sreg(k, std::string(base) + "." + "xyz"[op.int_attr]);
}

void lower_shuffle(const Op& op, KernelLowering& k) {
  const auto& o = op.operands;
  std::string name = std::string("llvm.nvvm.shfl.sync.") + ir::shuffle_kind_name(ir::ShuffleKind(op.int_attr)) + ".i32";
  // The intrinsic takes (member mask, value, lane or offset, clamp).
  k.define(op, 0,
           k.call_intrinsic(
               "i32", name,
               {"i32 " + k.operand(o[3]), "i32 " + k.operand(o[0]), "i32 " + k.operand(o[1]), "i32 " + k.operand(o[2])},
               "i32, i32, i32, i32"));
}

void lower_vote(const Op& op, KernelLowering& k) {
  ir::VoteKind kind = ir::VoteKind(op.int_attr);
  std::string ret = kind == ir::VoteKind::Ballot ? "i32" : "i1";
  std::string name = std::string("llvm.nvvm.vote.") + ir::vote_kind_name(kind) + ".sync";
  k.define(
      op, 0,
      k.call_intrinsic(ret, name, {"i32 " + k.operand(op.operands[1]), "i1 " + k.operand(op.operands[0])}, "i32, i1"));
}

// redux.sync.<op>[.abs][.NaN].<type> d, value, membermask; (sync, so not moved across branches: a
// side-effecting asm; the type's signedness picks .s32 / .u32 for add, min, max).
void lower_warp_redux(const Op& op, KernelLowering& k) {
  const ir::Type t = op.operands[0]->type;
  const bool f32 = t == ir::f32();
  std::string insn = std::string("redux.sync.") + ir::redux_kind_name(ir::ReduxKind(op.int_attr));
  if (f32) insn += std::string(op.ints.at(0) ? ".abs" : "") + (op.ints.at(1) ? ".NaN" : "") + ".f32";
  else if (op.int_attr >= int64_t(ir::ReduxKind::And)) insn += ".b32";
  else insn += t->is_signed ? ".s32" : ".u32";
  const std::string ty = f32 ? "float" : "i32", c = f32 ? "f" : "r";
  k.define(op, 0, k.emit_def("call " + ty + " asm sideeffect \"" + insn + " $0, $1, $2;\", \"=" + c + "," + c +
                             ",r\"(" + ty + " " + k.operand(op.operands[0]) + ", i32 " + k.operand(op.operands[1]) + ")"));
}

void lower_warp_idx(const Op& op, KernelLowering& k) {
  std::string tx = sreg(k, "tid.x"), ty = sreg(k, "tid.y"), tz = sreg(k, "tid.z");
  std::string nx = sreg(k, "ntid.x"), ny = sreg(k, "ntid.y");
  std::string zy = k.emit_def("mul i32 " + ny + ", " + tz);
  std::string yz = k.emit_def("add i32 " + ty + ", " + zy);
  std::string xyz = k.emit_def("mul i32 " + nx + ", " + yz);
  std::string linear = k.emit_def("add i32 " + tx + ", " + xyz);
  k.define(op, 0, k.emit_def("lshr i32 " + linear + ", 5"));
}

void lower_named_barrier(const Op& op, KernelLowering& k) {
  const char* insn = op.int_attr == int64_t(ir::NamedBarrierKind::Arrive) ? "bar.arrive" : "bar.sync";
  k.emit_line(std::string("call void asm sideeffect \"") + insn + " $0, $1;\", \"r,r,~{memory}\"(i32 " +
              k.operand(op.operands[0]) + ", i32 " + k.operand(op.operands[1]) + ")");
}

}  // namespace

void register_thread_lowerings(LoweringTable& t) {
  t.add(OpCode::ThreadIdx, [](const Op& op, KernelLowering& k) { k.define(op, 0, sreg_dim(k, op, "tid")); });
  t.add(OpCode::BlockIdx, [](const Op& op, KernelLowering& k) { k.define(op, 0, sreg_dim(k, op, "ctaid")); });
  t.add(OpCode::BlockDim, [](const Op& op, KernelLowering& k) { k.define(op, 0, sreg_dim(k, op, "ntid")); });
  t.add(OpCode::GridDim, [](const Op& op, KernelLowering& k) { k.define(op, 0, sreg_dim(k, op, "nctaid")); });
  t.add(OpCode::LaneIdx, [](const Op& op, KernelLowering& k) { k.define(op, 0, sreg(k, "laneid")); });
  t.add(OpCode::WarpIdx, lower_warp_idx);
  t.add(OpCode::Barrier, [](const Op&, KernelLowering& k) {
    k.module().declare("void", "llvm.nvvm.barrier0", "");
    k.emit_line("call void @llvm.nvvm.barrier0()");
  });
  t.add(OpCode::NamedBarrier, lower_named_barrier);
  t.add(OpCode::Shuffle, lower_shuffle);
  t.add(OpCode::Vote, lower_vote);
  t.add(OpCode::WarpRedux, lower_warp_redux);
}

}  // namespace opencute::target
