// NVVM lowering of TMA descriptors in device memory (CuTe's copy_sm90_desc.hpp forms), inline PTX:
//   TmaDescCopy            8 x ld.v2.b64 / st.v2.b64 through generic addresses (the source is the
//                          kernel's __grid_constant__ descriptor or another slot); from a descriptor
//                          the kernel encoded (TmaEncode in a kernel): the slot cleared, then
//                          tensormap.replace of every field
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

// The tensor map's element type as tensormap.replace's .elemtype takes it (PTX ISA's table, which
// orders .f32.ftz before .f64, unlike cuda.h's CUtensorMapDataType). 8-bit floats travel as .u8.
int ptx_tensormap_elemtype(ir::Type t) {
  if (t->is_float()) {
    switch (t->float_kind) {
      case ir::FloatKind::F16: return 6;
      case ir::FloatKind::F32: return 7;
      case ir::FloatKind::F64: return 9;
      case ir::FloatKind::BF16: return 10;
      case ir::FloatKind::TF32: return 11;
      case ir::FloatKind::E4M3: case ir::FloatKind::E5M2: case ir::FloatKind::E8M0: return 0;
      default: return -1;
    }
  }
  if (t->is_int() && !t->is_bool()) {
    switch (t->width) {
      case 8: return 0;
      case 16: return 1;
      case 32: return t->is_signed ? 3 : 2;
      case 64: return t->is_signed ? 5 : 4;
    }
  }
  return -1;
}

// copy_tensormap of a descriptor the kernel encoded (make_tiled_tma_atom in a kernel): PTX has no
// encode instruction, so the slot is cleared and every field of a tiled tensor map is set with
// tensormap.replace (rank as rank - 1, element strides 1, no interleave, zero fill).
void lower_encode_into_slot(const Op& encode, const ir::Value* slot, KernelLowering& k) {
  const int rank = int(encode.int_attr);
  // tma_encode's optional last int: 14 (cuda.h's 16U4_ALIGN16B) is .b4x16_p64, also 14 in PTX.
  const bool unpacked = encode.ints.size() > size_t(1 + rank) && encode.ints.back() == 14;
  const int elemtype = unpacked ? 14 : ptx_tensormap_elemtype(encode.result()->type->element);
  if (elemtype < 0) k.error(encode, "tma_encode: no tensor-map element type for " + ir::to_string(encode.result()->type->element));
  const int swizzle = encode.ints[0] == 0 ? 0 : encode.ints[0] == 32 ? 1 : encode.ints[0] == 64 ? 2 : 3;
  std::string zero = "{\\0A\\09.reg .b64 z;\\0A\\09mov.b64 z, 0;";
  std::string dst = generic_address(k, slot);
  for (int off = 0; off < 128; off += 16)
    zero += "\\0A\\09st.v2.b64 [$0" + (off ? "+" + std::to_string(off) : std::string()) + "], {z, z};";
  asm_void(k, zero + "\\0A\\09}", "l", "i64 " + dst);
  auto [space, addr] = slot_address(k, slot);
  const std::string head = "tensormap.replace.tile.";
  const std::string b32 = space + ".b1024.b32 [$0], ";
  std::string gaddr = generic_address(k, encode.operands[0]);
  asm_void(k, head + "global_address" + space + ".b1024.b64 [$0], $1;", "l,l", "i64 " + addr + ", i64 " + gaddr);
  asm_void(k, head + "rank" + b32 + std::to_string(rank - 1) + ";", "l", "i64 " + addr);
  asm_void(k, head + "elemtype" + b32 + std::to_string(elemtype) + ";", "l", "i64 " + addr);
  asm_void(k, head + "interleave_layout" + b32 + "0;", "l", "i64 " + addr);
  asm_void(k, head + "swizzle_mode" + b32 + std::to_string(swizzle) + ";", "l", "i64 " + addr);
  asm_void(k, head + "fill_mode" + b32 + "0;", "l", "i64 " + addr);
  for (int d = 0; d < rank; ++d) {
    const std::string ord = std::to_string(d);
    asm_void(k, head + "box_dim" + b32 + ord + ", " + std::to_string(encode.ints[size_t(1 + d)]) + ";", "l",
             "i64 " + addr);
    asm_void(k, head + "element_stride" + b32 + ord + ", 1;", "l", "i64 " + addr);
    std::string extent = k.emit_def("trunc i64 " + k.operand(encode.operands[size_t(1 + d)]) + " to i32");
    asm_void(k, head + "global_dim" + b32 + ord + ", $1;", "l,r", "i64 " + addr + ", i32 " + extent);
    if (d > 0)  // dimension 0's stride is the element size, which the tensor map does not hold
      asm_void(k, head + "global_stride" + space + ".b1024.b64 [$0], " + std::to_string(d - 1) + ", $1;", "l,l",
               "i64 " + addr + ", i64 " + k.operand(encode.operands[size_t(1 + rank + d)]));
  }
}

void lower_encode(const Op& op, KernelLowering& k) {
  // Only copy_tensormap reads the result (cute.copy and prefetch refuse it while tracing): its
  // lowering writes the fields; the value itself is never dereferenced.
  k.define(op, 0, "null");
}

void lower_desc_copy(const Op& op, KernelLowering& k) {
  if (const Op* def = op.operands[0]->def; def && def->code == OpCode::TmaEncode) {
    lower_encode_into_slot(*def, op.operands[1], k);
    return;
  }
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
  t.add(OpCode::TmaEncode, lower_encode);
  t.add(OpCode::TmaDescCopy, lower_desc_copy);
  t.add(OpCode::TmaDescReplace, lower_desc_replace);
  t.add(OpCode::TmaDescCpFenceRelease, lower_desc_cp_fence_release);
}

}  // namespace opencute::target
