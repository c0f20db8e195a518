// NVVM lowering of the SM80 copies, as inline PTX:
//   cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_bytes;   (src_bytes < bytes zero-fills)
//   cp.async.commit_group;   cp.async.wait_group N;
//   ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 {regs}, [row];
//   ldmatrix.sync.aligned.m16n16.xN.trans.shared.b8 {regs}, [row];   (sm_100; two registers a matrix)
//   ldmatrix.sync.aligned.m8n16.xN.shared.b8x16.b4x16_p64 {regs}, [row];   (sm_100a / sm_120a)
//   stmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 [row], {regs};   (sm_90)
// Every form carries a memory clobber so that the compiler keeps shared-memory accesses on
// their side of the waits and barriers the user wrote.
#include "target/nvvm/op_lowering.h"

namespace opencute::target {
namespace {

using ir::AddrSpace;
using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::Value;

// The pointer as an integer address of `space` (32-bit for shared memory, 64-bit for global).
std::string address(KernelLowering& k, const Op& op, const Value* ptr, AddrSpace space) {
  Type t = ptr->type;
  std::string p = k.operand(ptr), pt = llvm_type(t);
  if (t->space != space) {
    if (t->space != AddrSpace::Generic)
      k.error(op, std::string("expected a ") + (space == AddrSpace::Smem ? "shared" : "global") + "-memory pointer");
    // A generic pointer into the space: the cast is cvta.to.shared / cvta.to.global.
    std::string elem = pt.substr(0, pt.size() - 1);
    std::string to = elem + " addrspace(" + (space == AddrSpace::Smem ? "3" : "1") + ")*";
    p = k.emit_def("addrspacecast " + pt + " " + p + " to " + to);
    pt = to;
  }
  return k.emit_def("ptrtoint " + pt + " " + p + " to " + (space == AddrSpace::Smem ? "i32" : "i64"));
}

std::string reg_list(int first, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += (i ? ", $" : "$") + std::to_string(first + i);
  return s + "}";
}

std::string matrix_suffix(const Op& op) {
  bool trans = !op.ints.empty() && op.ints[0];
  if (op.ints.size() > 1 && op.ints[1])  // ldmatrix .m16n16 (sm_100): 8-bit elements, always .trans
    return ".sync.aligned.m16n16.x" + std::to_string(op.int_attr) + ".trans.shared.b8";
  if (op.ints.size() > 2 && op.ints[2] == 4)  // packed 4-bit values widened to bytes (sm_100a / sm_120a)
    return ".sync.aligned.m8n16.x" + std::to_string(op.int_attr) + ".shared.b8x16.b4x16_p64";
  return ".sync.aligned.m8n8.x" + std::to_string(op.int_attr) + (trans ? ".trans" : "") + ".shared.b16";
}

void lower_cp_async(const Op& op, KernelLowering& k) {
  const int bytes = int(op.int_attr);
  const bool global_only = !op.ints.empty() && op.ints[0];
  if (global_only && bytes != 16) k.error(op, "cp.async.cg copies 16 bytes only");
  std::string dst = address(k, op, op.operands[0], AddrSpace::Smem);
  std::string src = address(k, op, op.operands[1], AddrSpace::Gmem);
  std::string text = std::string("cp.async.") + (global_only ? "cg" : "ca") + ".shared.global [$0], [$1], " +
                     std::to_string(bytes) + ", $2;";
  k.emit_line("call void asm sideeffect \"" + text + "\", \"r,l,r,~{memory}\"(i32 " + dst + ", i64 " + src + ", i32 " +
              k.operand(op.operands[2]) + ")");
}

void lower_ldmatrix(const Op& op, KernelLowering& k) {
  Type vt = op.result()->type;
  const int num = vt->lanes * vt->element->width / 32;  // 32-bit registers (one a matrix for m8n8)
  const int per_reg = vt->lanes / num;
  std::string row = address(k, op, op.operands[0], AddrSpace::Smem);
  std::string ret = "i32";
  if (num > 1) {
    ret = "{";
    for (int i = 0; i < num; ++i) ret += std::string(i ? ", " : "") + "i32";
    ret += "}";
  }
  std::string cons;
  for (int i = 0; i < num; ++i) cons += "=r,";
  std::string text = "ldmatrix" + matrix_suffix(op) + " " + reg_list(0, num) + ", [$" + std::to_string(num) + "];";
  std::string call = k.emit_def("call " + ret + " asm sideeffect \"" + text + "\", \"" + cons + "r,~{memory}\"(i32 " +
                                row + ")");
  // The registers, in order, are the vector's bits: one bitcast of <num x i32>.
  if (per_reg * vt->element->width != 32) k.error(op, "ldmatrix: each register holds 32 bits of the result");
  std::string vtt = llvm_type(vt);
  if (num == 1) {
    k.define(op, 0, k.emit_def("bitcast i32 " + call + " to " + vtt));
    return;
  }
  std::string words = "<" + std::to_string(num) + " x i32>", acc = "undef";
  for (int j = 0; j < num; ++j) {
    std::string r = k.emit_def("extractvalue " + ret + " " + call + ", " + std::to_string(j));
    acc = k.emit_def("insertelement " + words + " " + acc + ", i32 " + r + ", i32 " + std::to_string(j));
  }
  k.define(op, 0, k.emit_def("bitcast " + words + " " + acc + " to " + vtt));
}

void lower_stmatrix(const Op& op, KernelLowering& k) {
  const int num = int(op.int_attr);
  Type vt = op.operands[1]->type;
  const int per_reg = vt->lanes / num;
  std::string row = address(k, op, op.operands[0], AddrSpace::Smem);
  if (per_reg * vt->element->width != 32) k.error(op, "stmatrix: each register holds 32 bits of the value");
  std::string vtt = llvm_type(vt), v = k.operand(op.operands[1]);
  std::string words = "<" + std::to_string(num) + " x i32>";
  std::string w = k.emit_def("bitcast " + vtt + " " + v + " to " + (num == 1 ? std::string("i32") : words));
  std::string args = "i32 " + row;
  for (int j = 0; j < num; ++j)
    args += ", i32 " + (num == 1 ? w : k.emit_def("extractelement " + words + " " + w + ", i32 " + std::to_string(j)));
  std::string cons = "r";
  for (int j = 0; j < num; ++j) cons += ",r";
  std::string text = "stmatrix" + matrix_suffix(op) + " [$0], " + reg_list(1, num) + ";";
  k.emit_line("call void asm sideeffect \"" + text + "\", \"" + cons + ",~{memory}\"(" + args + ")");
}

}  // namespace

void register_sm80_copy_lowerings(LoweringTable& t) {
  t.add(OpCode::CpAsync, lower_cp_async);
  t.add(OpCode::CpAsyncCommit, [](const Op&, KernelLowering& k) {
    k.emit_line("call void asm sideeffect \"cp.async.commit_group;\", \"~{memory}\"()");
  });
  t.add(OpCode::CpAsyncWait, [](const Op& op, KernelLowering& k) {
    k.emit_line("call void asm sideeffect \"cp.async.wait_group " + std::to_string(op.int_attr) + ";\", \"~{memory}\"()");
  });
  t.add(OpCode::LdMatrix, lower_ldmatrix);
  t.add(OpCode::StMatrix, lower_stmatrix);
}

}  // namespace opencute::target
