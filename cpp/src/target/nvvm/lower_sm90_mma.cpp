// NVVM lowering of the SM90 warpgroup MMA family (sm_90a), as inline PTX:
//   Wgmma       -> { .reg .pred p; setp.ne.b32 p, scale_d, 0;
//                    wgmma.mma_async.sync.aligned.m64nNkK.<d>.<a>.<b> {d...}, a-desc|{a regs}, b-desc, p, 1, 1[, tnspA], tnspB; }
//                  (the transpose immediates exist for 16-bit inputs only; A from registers has none)
//   WgmmaFence  -> wgmma.fence.sync.aligned;
//   WgmmaCommit -> wgmma.commit_group.sync.aligned;
//   WgmmaWait   -> wgmma.wait_group.sync.aligned N;
// The accumulators are tied in/out operands (C in, D out, the same registers), as CUTLASS's "+f".
#include <cstdint>
#include <stdexcept>
#include <utility>

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

// A pointer as (base, constant element offset): ptr_add chains with constant indices folded.
std::pair<const ir::Value*, int64_t> base_and_offset(const ir::Value* p) {
  int64_t off = 0;
  while (p->def && p->def->code == OpCode::PtrAdd && ir::is_constant(p->def->operands[1])) {
    off += ir::constant_int(p->def->operands[1]);
    p = p->def->operands[0];
  }
  return {p, off};
}

// The alloca a pointer was derived from (through ptr_add and bitcast), or null.
const ir::Op* root_alloca(const ir::Value* p) {
  while (p->def && (p->def->code == OpCode::PtrAdd || p->def->code == OpCode::Bitcast)) p = p->def->operands[0];
  return p->def && p->def->code == OpCode::Alloca ? p->def : nullptr;
}

bool may_point_at_registers(const ir::Value* p) {
  return p->type->space == ir::AddrSpace::Rmem || p->type->space == ir::AddrSpace::Generic;
}

// Whether `op` may write the register array allocated by `fragment`: stores and atomics into
// another alloca or another memory space cannot; ops with regions and other ops taking register or
// generic pointers are assumed to.
bool may_write(const ir::Op& op, const ir::Op* fragment) {
  switch (op.code) {
    case OpCode::Load: case OpCode::PtrAdd: case OpCode::Bitcast: case OpCode::Constant: return false;
    case OpCode::Store: case OpCode::Atomic: {
      const ir::Value* target = op.operands[op.code == OpCode::Store ? 1 : 0];
      if (!may_point_at_registers(target)) return false;
      const ir::Op* array = root_alloca(target);
      return !array || array == fragment;
    }
    default: break;
  }
  if (!op.regions.empty()) return true;
  for (const ir::Value* v : op.operands)
    if (v->type->is_pointer() && may_point_at_registers(v)) return true;
  return false;
}

// For wgmma's A operand from registers: the (array, first element) of each 32-bit register when
// its values are loads of consecutive elements of one register array, the first 4-byte aligned.
// Empty when they are not.
std::vector<std::pair<const ir::Value*, int64_t>> a_words_in_fragment(const ir::Op& wgmma, Type a_t, size_t na) {
  const int per = 32 / a_t->width;
  if (per < 2 || na % size_t(per) != 0 || !natural_layout(a_t)) return {};
  std::vector<std::pair<const ir::Value*, int64_t>> words;
  for (size_t r = 0; r < na; r += size_t(per)) {
    std::pair<const ir::Value*, int64_t> first;
    for (int j = 0; j < per; ++j) {
      const ir::Op* ld = wgmma.operands[r + size_t(j)]->def;
      if (!ld || ld->code != OpCode::Load) return {};
      const ir::Value* ptr = ld->operands[0];
      if (ptr->type->space != ir::AddrSpace::Rmem || ptr->type->element != a_t) return {};
      auto at = base_and_offset(ptr);
      if (j == 0) {
        if (ptr->type->align < 4) return {};
        first = at;
      } else if (at.first != first.first || at.second != first.second + j) {
        return {};
      }
    }
    words.push_back(first);
  }
  return words;
}

// At a wgmma.fence: the A registers of the register-A wgmmas that follow it in its block, read
// from their register fragment as 32-bit words here, before the fence. Why: packing 16- or 8-bit
// values at the wgmma puts register writes between the fence and the wgmma, and ptxas then
// injects a warpgroup.arrive before every such wgmma (info C7519), each its own scoreboard group:
// the GEMM runs serialised (FlashAttention's P*V, whose P a loop carries as 16-bit values). A
// fragment read here must not be written between the fence and its wgmma.
void prepare_register_a_operands(const ir::Op& fence, KernelLowering& k) {
  const ir::Block* block = fence.parent;
  if (!block) return;
  size_t at = 0;
  while (at < block->ops.size() && block->ops[at].get() != &fence) ++at;
  for (size_t i = at + 1; i < block->ops.size(); ++i) {
    const ir::Op& w = *block->ops[i];
    if (w.code == OpCode::WgmmaFence) break;
    if (w.code != OpCode::Wgmma || w.ints.size() < 8 || w.ints[7] == 0) continue;
    const Type a_t = ir::wgmma_element_type(w.ints.at(3));
    const size_t na = size_t(w.ints.at(0) * w.ints.at(2) / 128);
    auto words = a_words_in_fragment(w, a_t, na);
    if (words.empty()) continue;
    bool ok = true;
    for (const auto& [base, offset] : words) {
      const ir::Op* fragment = root_alloca(base);
      // An array of unknown origin could be written through any pointer.
      ok = fragment != nullptr;
      // The array's pointer must already exist (defined before the fence).
      if (ok && base->def && base->def->parent == block) {
        size_t d = 0;
        while (d < block->ops.size() && block->ops[d].get() != base->def) ++d;
        ok = d < at;
      }
      for (size_t j = at + 1; ok && j < i; ++j) ok = !may_write(*block->ops[j], fragment);
      if (!ok) break;
    }
    if (!ok) continue;
    std::vector<std::string> regs;
    for (const auto& [base, offset] : words) {
      std::string p = k.operand(base);
      if (offset)
        p = k.emit_def("getelementptr " + mem_type(a_t) + ", " + llvm_type(base->type) + " " + p + ", i64 " +
                       std::to_string(offset));
      std::string wp = pointer_text(ir::int_type(32), base->type->space);
      p = k.emit_def("bitcast " + llvm_type(base->type) + " " + p + " to " + wp);
      regs.push_back(k.emit_def("load i32, " + wp + " " + p + ", align 4"));
    }
    k.prepared_operands[&w] = regs;
  }
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
    std::vector<std::string> a_packed;
    auto prepared = k.prepared_operands.find(&op);
    if (prepared != k.prepared_operands.end()) {
      a_packed = std::move(prepared->second);
      k.prepared_operands.erase(prepared);
    } else {
      a_packed = pack(a_t, a_vals, k);
    }
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
    args += ", i64 " + k.narrow_descriptor(k.operand(op.operands[0]));
  }
  std::string b_text = "$" + std::to_string(next++);
  constraints += ",l";
  args += ", i64 " + k.narrow_descriptor(k.operand(op.operands[na]));
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
  // libNVVM parses the type once by name instead of at each of the nd extractvalues (FA4's
  // forward: 2.5 MB of NVVM IR, 1.8 MB of it this type spelled out).
  ret = k.module().named_struct(ret);
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
  t.add(OpCode::WgmmaFence, [](const ir::Op& op, KernelLowering& k) {
    prepare_register_a_operands(op, k);
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
