// NVVM lowering of the SM90 warpgroup MMA family (sm_90a), as inline PTX:
//   Wgmma       -> { .reg .pred p; setp.ne.b32 p, scale_d, 0;
//                    wgmma.mma_async.sync.aligned.m64nNkK.<d>.<a>.<b> {d...}, a-desc|{a regs}, b-desc, p, 1, 1[, tnspA], tnspB; }
//                  (the transpose immediates exist for 16-bit inputs only; A from registers has none)
//   WgmmaFence  -> wgmma.fence.sync.aligned;
//   WgmmaCommit -> wgmma.commit_group.sync.aligned;
//   WgmmaWait   -> wgmma.wait_group.sync.aligned N;
// The accumulators are tied in/out operands (C in, D out, the same registers), as CUTLASS's "+f".
#include <stdexcept>

#include "ir/wgmma_element.h"
#include "target/nvvm/nvvm_types.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

namespace {

using ir::OpCode;
using ir::Type;

std::string ptx_type(Type t) {
  if (t->is_int()) {
    if (t->width == 8) return t->is_signed ? "s8" : "u8";
    if (t->width == 32 && t->is_signed) return "s32";
    throw std::runtime_error("wgmma: no PTX operand type for " + ir::to_string(t));
  }
  switch (t->float_kind) {
    case ir::FloatKind::F16: return "f16";
    case ir::FloatKind::BF16: return "bf16";
    case ir::FloatKind::F32: return "f32";
    case ir::FloatKind::TF32: return "tf32";
    case ir::FloatKind::E4M3: return "e4m3";
    case ir::FloatKind::E5M2: return "e5m2";
    default: throw std::runtime_error("wgmma: no PTX operand type for " + ir::to_string(t));
  }
}

// Packs 16- or 8-bit values into 32-bit registers, lowest index in the lowest bits (f16 is
// `half` in LLVM; bf16 and 8-bit floats are already integers of their width).
std::vector<std::string> pack(Type t, const std::vector<std::string>& vals, KernelLowering& k) {
  int bits = t->width, per = 32 / bits;
  std::string it = "i" + std::to_string(bits);
  std::vector<std::string> regs;
  for (size_t r = 0; r * size_t(per) < vals.size(); ++r) {
    std::string acc;
    for (int j = 0; j < per; ++j) {
      std::string v = vals[r * size_t(per) + size_t(j)];
      if (t->is_f16()) v = k.emit_def("bitcast half " + v + " to i16");
      std::string w = k.emit_def("zext " + it + " " + v + " to i32");
      if (j) w = k.emit_def("shl i32 " + w + ", " + std::to_string(j * bits));
      acc = j ? k.emit_def("or i32 " + acc + ", " + w) : w;
    }
    regs.push_back(acc);
  }
  return regs;
}

void lower_wgmma(const ir::Op& op, KernelLowering& k) {
  const int64_t m = op.ints.at(0), n = op.ints.at(1), kk = op.ints.at(2);
  const Type a_t = ir::wgmma_element_type(op.ints.at(3)), b_t = ir::wgmma_element_type(op.ints.at(4));
  const bool tnsp_a = op.ints.at(5) != 0, tnsp_b = op.ints.at(6) != 0, a_regs = op.ints.at(7) != 0;
  const size_t nc = op.results.size();
  const size_t na = a_regs ? size_t(m * kk / 128) : 1;
  if (op.operands.size() != na + 2 + nc) k.error(op, "wgmma: operand count does not match the instruction shape");
  const Type c_t = op.result(0)->type;
  const bool packed = c_t->is_f16();  // f16 accumulators: two per 32-bit register
  const bool int_acc = c_t->is_int();  // s32 accumulators of the integer MMA

  std::vector<std::string> c_vals;
  for (size_t i = 0; i < nc; ++i) c_vals.push_back(k.operand(op.operands[na + 2 + i]));
  std::vector<std::string> c_regs = packed ? pack(c_t, c_vals, k) : c_vals;
  const size_t nd = c_regs.size();
  const std::string reg_t = packed || int_acc ? "i32" : "float";

  // Operands: D outputs $0..$nd-1; C inputs tied to them; then A, B, scale_d.
  std::string constraints, args;
  for (size_t i = 0; i < nd; ++i) constraints += (i ? "," : "") + std::string(packed || int_acc ? "=r" : "=f");
  for (size_t i = 0; i < nd; ++i) {
    constraints += "," + std::to_string(i);
    args += (i ? ", " : "") + reg_t + " " + c_regs[i];
  }
  size_t next = 2 * nd;
  std::string a_text;
  if (a_regs) {
    std::vector<std::string> a_vals;
    for (size_t i = 0; i < na; ++i) a_vals.push_back(k.operand(op.operands[i]));
    std::vector<std::string> a_packed = pack(a_t, a_vals, k);
    a_text = "{";
    for (size_t i = 0; i < a_packed.size(); ++i) {
      a_text += (i ? "," : "") + std::string("$") + std::to_string(next++);
      constraints += ",r";
      args += ", i32 " + a_packed[i];
    }
    a_text += "}";
  } else {
    a_text = "$" + std::to_string(next++);
    constraints += ",l";
    args += ", i64 " + k.operand(op.operands[0]);
  }
  std::string b_text = "$" + std::to_string(next++);
  constraints += ",l";
  args += ", i64 " + k.operand(op.operands[na]);
  std::string scale_text = "$" + std::to_string(next++);
  constraints += ",r";
  args += ", i32 " + k.emit_def("zext i1 " + k.operand(op.operands[na + 1]) + " to i32");

  std::string d_list = "{";
  for (size_t i = 0; i < nd; ++i) d_list += (i ? "," : "") + std::string("$") + std::to_string(i);
  d_list += "}";
  // The integer MMA has no scale-a / scale-b (nor transpose) immediates: only scale-d.
  std::string imm = int_acc ? ", p" : ", p, 1, 1";
  if (a_t->width == 16) imm += a_regs ? ", " + std::to_string(int(tnsp_b)) : ", " + std::to_string(int(tnsp_a)) + ", " + std::to_string(int(tnsp_b));
  std::string inst = "wgmma.mma_async.sync.aligned.m" + std::to_string(m) + "n" + std::to_string(n) + "k" +
                     std::to_string(kk) + "." + ptx_type(c_t) + "." + ptx_type(a_t) + "." + ptx_type(b_t);
  std::string text = "{ .reg .pred p; setp.ne.b32 p, " + scale_text + ", 0; " + inst + " " + d_list + ", " + a_text +
                     ", " + b_text + imm + "; }";
  std::string ret = "{";
  for (size_t i = 0; i < nd; ++i) ret += (i ? ", " : " ") + reg_t;
  ret += " }";
  std::string call =
      k.emit_def("call " + ret + " asm sideeffect \"" + text + "\", \"" + constraints + ",~{memory}\"(" + args + ")");
  for (size_t i = 0; i < nd; ++i) {
    std::string r = k.emit_def("extractvalue " + ret + " " + call + ", " + std::to_string(i));
    if (!packed) {
      k.define(op, int(i), r);
      continue;
    }
    std::string v = k.emit_def("bitcast i32 " + r + " to <2 x half>");
    k.define(op, int(2 * i), k.emit_def("extractelement <2 x half> " + v + ", i32 0"));
    k.define(op, int(2 * i + 1), k.emit_def("extractelement <2 x half> " + v + ", i32 1"));
  }
}

}  // namespace

void register_sm90_mma_lowerings(LoweringTable& t) {
  t.add(OpCode::Wgmma, lower_wgmma);
  t.add(OpCode::WgmmaFence, [](const ir::Op&, KernelLowering& k) {
    k.emit_line("call void asm sideeffect \"wgmma.fence.sync.aligned;\", \"~{memory}\"()");
  });
  t.add(OpCode::WgmmaCommit, [](const ir::Op&, KernelLowering& k) {
    k.emit_line("call void asm sideeffect \"wgmma.commit_group.sync.aligned;\", \"~{memory}\"()");
  });
  t.add(OpCode::WgmmaWait, [](const ir::Op& op, KernelLowering& k) {
    k.emit_line("call void asm sideeffect \"wgmma.wait_group.sync.aligned " + std::to_string(op.int_attr) +
                ";\", \"~{memory}\"()");
  });
}

}  // namespace opencute::target
