// NVVM lowering of TMA descriptors in device memory (CuTe's copy_sm90_desc.hpp forms), inline PTX:
//   TmaDescCopy            8 x ld.v2.b64 / st.v2.b64 through generic addresses (the source is the
//                          kernel's __grid_constant__ descriptor or another slot)
//   TmaDescReplace         tensormap.replace.tile.{global_address,global_dim,global_stride}
//                          .{global,shared::cta}.b1024.{b64,b32} [slot], [ord,] value
//                          (CUDA >= 12.5 PTX: the stride in bytes, not bytes >> 4)
//   TmaDescCpFenceRelease  tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu
//                          .sync.aligned [global slot], [shared slot], 128
// A generic slot pointer is taken to point to global memory (its generic address is the global
// one), as CUTLASS passes generic descriptor pointers to the .global forms.
#include "target/nvvm/op_lowering.h"

namespace opencute::target {
namespace {

using ir::Op;
using ir::OpCode;

void asm_void(KernelLowering& k, const std::string& text, const std::string& constraints, const std::string& args) {
  k.emit_asm_clobbering_memory(text, constraints, args);
}

// The 64-bit generic address of any pointer (shared ones are converted to the generic window).
std::string generic_address(KernelLowering& k, const ir::Value* ptr) {
  std::string p = k.operand(ptr), pt = llvm_type(ptr->type);
  if (ptr->type->space == ir::AddrSpace::Smem) {
    std::string to = llvm_type(ir::pointer_type(ptr->type->element, ir::AddrSpace::Generic, ptr->type->align));
    p = k.emit_def("addrspacecast " + pt + " " + p + " to " + to);
    pt = to;
  }
  return k.emit_def("ptrtoint " + pt + " " + p + " to i64");
}

// A slot's PTX state space and its address operand: (".shared::cta", zero-extended shared-window
// address) or (".global", the generic = global address).
std::pair<std::string, std::string> slot_address(KernelLowering& k, const ir::Value* ptr) {
  std::string p = k.operand(ptr), pt = llvm_type(ptr->type);
  if (ptr->type->space == ir::AddrSpace::Smem) {
    std::string a32 = k.emit_def("ptrtoint " + pt + " " + p + " to i32");
    return {".shared::cta", k.emit_def("zext i32 " + a32 + " to i64")};
  }
  return {".global", k.emit_def("ptrtoint " + pt + " " + p + " to i64")};
}

void lower_desc_copy(const Op& op, KernelLowering& k) {
  std::string src = generic_address(k, op.operands[0]), dst = generic_address(k, op.operands[1]);
  std::string text = "{\\0A\\09.reg .b64 lo, hi;";
  for (int off = 0; off < 128; off += 16) {
    const std::string o = off ? "+" + std::to_string(off) : "";
    text += "\\0A\\09ld.v2.b64 {lo, hi}, [$0" + o + "];\\0A\\09st.v2.b64 [$1" + o + "], {lo, hi};";
  }
  asm_void(k, text + "\\0A\\09}", "l,l", "i64 " + src + ", i64 " + dst);
}

void lower_desc_replace(const Op& op, KernelLowering& k) {
  auto [space, addr] = slot_address(k, op.operands[0]);
  const auto field = ir::TmaDescField(op.int_attr);
  const std::string ord = std::to_string(op.ints.at(0));
  std::string v = k.operand(op.operands[1]);
  switch (field) {
    case ir::TmaDescField::GlobalAddress:
      asm_void(k, "tensormap.replace.tile.global_address" + space + ".b1024.b64 [$0], $1;", "l,l",
               "i64 " + addr + ", i64 " + v);
      break;
    case ir::TmaDescField::GlobalDim:
      asm_void(k, "tensormap.replace.tile.global_dim" + space + ".b1024.b32 [$0], " + ord + ", $1;", "l,r",
               "i64 " + addr + ", i32 " + v);
      break;
    case ir::TmaDescField::GlobalStride:
      asm_void(k, "tensormap.replace.tile.global_stride" + space + ".b1024.b64 [$0], " + ord + ", $1;", "l,l",
               "i64 " + addr + ", i64 " + v);
      break;
  }
}

void lower_desc_cp_fence_release(const Op& op, KernelLowering& k) {
  auto [gspace, g] = slot_address(k, op.operands[0]);
  const ir::Value* s = op.operands[1];
  std::string s32 = k.emit_def("ptrtoint " + llvm_type(s->type) + " " + k.operand(s) + " to i32");
  asm_void(k, "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [$0], [$1], 128;",
           "l,r", "i64 " + g + ", i32 " + s32);
}

}  // namespace

void register_sm90_tensormap_lowerings(LoweringTable& t) {
  t.add(OpCode::TmaDescCopy, lower_desc_copy);
  t.add(OpCode::TmaDescReplace, lower_desc_replace);
  t.add(OpCode::TmaDescCpFenceRelease, lower_desc_cp_fence_release);
}

}  // namespace opencute::target
