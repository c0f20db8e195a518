#include "target/nvvm/lower_to_nvvm.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

#include "ir/arch_attributes.h"
#include "ir/scalar_semantics.h"
#include "target/nvvm/kernel_lowering.h"
#include "target/nvvm/narrow_floats.h"
#include "target/nvvm/nvvm_types.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

using ir::AddrSpace;
using ir::Block;
using ir::CmpPredicate;
using ir::FloatKind;
using ir::Function;
using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::TypeKind;
using ir::Value;

// ---------------------------------------------------------------------------------------------
// section: cf

namespace {

std::string loop_metadata(KernelLowering& k, int64_t unroll) {
  std::string hint;
  if (unroll > 1) hint = "!{!\"llvm.loop.unroll.count\", i32 " + std::to_string(unroll) + "}";
  else if (unroll == -1) hint = "!{!\"llvm.loop.unroll.full\"}";
  else if (unroll == 1) hint = "!{!\"llvm.loop.unroll.disable\"}";  // like `#pragma unroll 1`
  else return "";
  int h = k.module().add_metadata(hint);
  int id = k.module().next_md++;
  k.module().metadata.emplace_back(id, "!" + std::to_string(id) + " = distinct !{!" + std::to_string(id) + ", !" +
                                    std::to_string(h) + "}");
  return ", !llvm.loop !" + std::to_string(id);
}

const Op* expect_terminator(KernelLowering& k, const Op& op, const Op* term, OpCode code, size_t count, const char* what) {
  if (!term || term->code != code || term->operands.size() != count)
    k.error(op, std::string("region must end with ") + what + " of " + std::to_string(count) + " values");
  return term;
}

void lower_for(const Op& op, KernelLowering& k) {
  Type it = op.operands[0]->type;
  const std::string T = llvm_type(it);
  const bool sgn = it->is_signed;
  std::string lb = k.operand(op.operands[0]), ub = k.operand(op.operands[1]), step = k.operand(op.operands[2]);
  std::vector<std::string> inits;
  for (size_t i = 3; i < op.operands.size(); ++i) inits.push_back(k.operand(op.operands[i]));
  const Block* body = op.region_block(0);
  if (body->args.size() != inits.size() + 1) k.error(op, "body arguments must be the induction variable and iter values");

  std::string prefix = k.new_label_prefix("for");
  std::string head = prefix + ".head", body_label = prefix + ".body", exit = prefix + ".exit";
  // The loop runs while iv < ub for a positive step and while iv > ub otherwise, like the
  // host interpreter; a dynamic step picks the comparison at run time.
  int direction = 0;
  std::string up;
  if (ir::is_constant(op.operands[2])) {
    direction = ir::eval_cmp(CmpPredicate::Gt, it, ir::Scalar::of_int(ir::constant_int(op.operands[2])),
                             ir::Scalar::of_int(0)) ? 1 : -1;
  } else {
    up = k.emit_def(std::string("icmp ") + (sgn ? "sgt " : "ugt ") + T + " " + step + ", " + int_literal(it->width, 0));
  }
  std::string entry_label = k.label();
  k.emit_line("br label %" + head);

  size_t head_block = k.start_block(head);
  std::string iv = k.fresh();
  std::vector<std::string> carried;
  for (size_t i = 0; i < inits.size(); ++i) carried.push_back(k.fresh());
  k.bind(body->args[0].get(), iv);
  for (size_t i = 0; i < carried.size(); ++i) k.bind(body->args[i + 1].get(), carried[i]);
  std::string cond;
  std::string lt = std::string("icmp ") + (sgn ? "slt " : "ult ") + T + " " + iv + ", " + ub;
  std::string gt = std::string("icmp ") + (sgn ? "sgt " : "ugt ") + T + " " + iv + ", " + ub;
  if (direction > 0) cond = k.emit_def(lt);
  else if (direction < 0) cond = k.emit_def(gt);
  else cond = k.emit_def("select i1 " + up + ", i1 " + k.emit_def(lt) + ", i1 " + k.emit_def(gt));
  k.emit_line("br i1 " + cond + ", label %" + body_label + ", label %" + exit);

  k.start_block(body_label);
  const Op* y = expect_terminator(k, op, k.lower_block(*body), OpCode::Yield, carried.size(), "yield");
  std::vector<std::string> next;
  for (const Value* v : y->operands) next.push_back(k.operand(v));
  std::string iv_next = k.emit_def("add " + T + " " + iv + ", " + step);
  std::string latch = k.label();
  k.emit_line("br label %" + head + loop_metadata(k, op.int_attr));

  std::vector<std::string> phis;
  phis.push_back("  " + iv + " = phi " + T + " [" + lb + ", %" + entry_label + "], [" + iv_next + ", %" + latch + "]");
  for (size_t i = 0; i < carried.size(); ++i) {
    std::string ct = llvm_type(body->args[i + 1]->type);
    phis.push_back("  " + carried[i] + " = phi " + ct + " [" + inits[i] + ", %" + entry_label + "], [" + next[i] +
                   ", %" + latch + "]");
  }
  k.prepend_lines(head_block, phis);

  k.start_block(exit);
  if (op.results.size() != carried.size()) k.error(op, "result count differs from the iter values");
  for (size_t i = 0; i < carried.size(); ++i) k.define(op, int(i), carried[i]);
}

void lower_if(const Op& op, KernelLowering& k) {
  std::string c = k.operand(op.operands[0]);
  std::string prefix = k.new_label_prefix("if");
  std::string then_label = prefix + ".then", else_label = prefix + ".else", end = prefix + ".end";
  const Block* else_block = op.region_block(1);
  const bool trivial_else = op.results.empty() && else_block->ops.size() == 1 && else_block->terminator();
  k.emit_line("br i1 " + c + ", label %" + then_label + ", label %" + (trivial_else ? end : else_label));
  size_t n = op.results.size();

  k.start_block(then_label);
  const Op* ty = expect_terminator(k, op, k.lower_block(*op.region_block(0)), OpCode::Yield, n, "yield");
  std::vector<std::string> then_vals;
  for (const Value* v : ty->operands) then_vals.push_back(k.operand(v));
  std::string then_end = k.label();
  k.emit_line("br label %" + end);

  std::vector<std::string> else_vals;
  std::string else_end;
  if (!trivial_else) {
    k.start_block(else_label);
    const Op* ey = expect_terminator(k, op, k.lower_block(*else_block), OpCode::Yield, n, "yield");
    for (const Value* v : ey->operands) else_vals.push_back(k.operand(v));
    else_end = k.label();
    k.emit_line("br label %" + end);
  }

  k.start_block(end);
  for (size_t i = 0; i < n; ++i)
    k.define(op, int(i), k.emit_def("phi " + llvm_type(op.result(int(i))->type) + " [" + then_vals[i] + ", %" + then_end + "], [" +
                        else_vals[i] + ", %" + else_end + "]"));
}

void lower_while(const Op& op, KernelLowering& k) {
  std::vector<std::string> inits;
  for (const Value* v : op.operands) inits.push_back(k.operand(v));
  const Block* before = op.region_block(0);
  const Block* after = op.region_block(1);
  if (before->args.size() != inits.size()) k.error(op, "'before' arguments must match the carried values");
  std::string prefix = k.new_label_prefix("while");
  std::string before_label = prefix + ".before", after_label = prefix + ".after", exit = prefix + ".exit";
  std::string entry_label = k.label();
  k.emit_line("br label %" + before_label);

  size_t before_block = k.start_block(before_label);
  std::vector<std::string> carried;
  for (size_t i = 0; i < inits.size(); ++i) {
    carried.push_back(k.fresh());
    k.bind(before->args[i].get(), carried[i]);
  }
  const Op* c = k.lower_block(*before);
  if (!c || c->code != OpCode::Condition || c->operands.empty()) k.error(op, "'before' region must end with condition");
  std::string cond = k.operand(c->operands[0]);
  std::vector<std::string> forwarded;
  for (size_t i = 1; i < c->operands.size(); ++i) forwarded.push_back(k.operand(c->operands[i]));
  k.emit_line("br i1 " + cond + ", label %" + after_label + ", label %" + exit);

  k.start_block(after_label);
  if (after->args.size() != forwarded.size()) k.error(op, "'after' arguments must match the forwarded values");
  // The condition block dominates both successors, so forwarded values need no phis.
  for (size_t i = 0; i < forwarded.size(); ++i) k.bind(after->args[i].get(), forwarded[i]);
  const Op* y = expect_terminator(k, op, k.lower_block(*after), OpCode::Yield, inits.size(), "yield");
  std::vector<std::string> next;
  for (const Value* v : y->operands) next.push_back(k.operand(v));
  std::string latch = k.label();
  k.emit_line("br label %" + before_label);

  std::vector<std::string> phis;
  for (size_t i = 0; i < carried.size(); ++i)
    phis.push_back("  " + carried[i] + " = phi " + llvm_type(before->args[i]->type) + " [" + inits[i] + ", %" +
                   entry_label + "], [" + next[i] + ", %" + latch + "]");
  k.prepend_lines(before_block, phis);

  k.start_block(exit);
  if (op.results.size() != forwarded.size()) k.error(op, "result count differs from the forwarded values");
  for (size_t i = 0; i < forwarded.size(); ++i) k.define(op, int(i), forwarded[i]);
}

}  // namespace

void register_control_flow_lowerings(LoweringTable& t) {
  t.add(OpCode::For, lower_for);
  t.add(OpCode::If, lower_if);
  t.add(OpCode::While, lower_while);
}

// ---------------------------------------------------------------------------------------------
// The module and its kernels

namespace {

const char* kDataLayout =
    "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-"
    "v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64";

}  // namespace

const LoweringTable& nvvm_lowerings() {
  static const LoweringTable table = [] {
    LoweringTable t;
    register_scalar_lowerings(t);
    register_conversion_lowerings(t);
    register_memory_lowerings(t);
    register_control_flow_lowerings(t);
    register_thread_lowerings(t);
    register_diagnostic_lowerings(t);
    register_sm80_copy_lowerings(t);
    register_sm80_mma_lowerings(t);
    register_sm90_mma_lowerings(t);
    register_sm90_async_lowerings(t);
    register_sm90_warp_lowerings(t);
    register_sm90_tensormap_lowerings(t);
    register_launch_control_lowerings(t);
    t.add(OpCode::Launch, [](const Op& op, KernelLowering& k) {
      k.error(op, "kernel launches are only valid in host code");
    });
    return t;
  }();
  return table;
}

std::string KernelLowering::run(std::string* fn_type) {
  if (!fn_.result_types.empty()) fail(nullptr, "a kernel cannot return values");
  start_block("entry");
  std::vector<std::string> params, param_types;
  std::vector<std::pair<const Value*, std::string>> bool_args, grid_constant_args;
  for (auto& a : fn_.args()) {
    std::string n = fresh();
    if (a->type->is_bool()) {
      // The host packs a bool argument as one byte.
      param_types.push_back("i8");
      bool_args.emplace_back(a.get(), n);
    } else if (a->type->is_pointer() && a->type->space == AddrSpace::Param) {
      // A 128-byte CUtensorMap passed by value (__grid_constant__, see the annotations): the
      // kernel uses its generic address.
      param_types.push_back("[16 x i64]*");
      params.push_back("[16 x i64]* byval align 64 " + n);
      grid_constant_args.emplace_back(a.get(), n);
      continue;
    } else {
      if (a->type->kind == TypeKind::Void) fail(nullptr, "void kernel argument");
      param_types.push_back(llvm_type(a->type));
      vals_[a.get()] = n;
    }
    params.push_back(param_types.back() + " " + n);
  }
  if (ms_.line_info) begin_debug_info();
  for (auto& [v, n] : bool_args) vals_[v] = emit_def("icmp ne i8 " + n + ", 0");
  for (auto& [v, n] : grid_constant_args) vals_[v] = emit_def("bitcast [16 x i64]* " + n + " to " + llvm_type(v->type));
  const Op* term = lower_block(*fn_.body);
  current_op_ = nullptr;
  if (!term || term->code != OpCode::Return) fail(nullptr, "kernel body must end with return");

  std::string sig;
  for (size_t i = 0; i < param_types.size(); ++i) sig += (i ? ", " : "") + param_types[i];
  *fn_type = "void (" + sig + ")*";

  std::ostringstream os;
  os << "define void " << global_ref(fn_.name) << "(";
  for (size_t i = 0; i < params.size(); ++i) os << (i ? ", " : "") << params[i];
  os << ")";
  if (subprogram_ >= 0) os << " !dbg !" << subprogram_;
  os << " {\n";
  for (size_t b = 0; b < blocks_.size(); ++b) {
    os << blocks_[b].label << ":\n";
    if (b == 0)
      for (auto& l : entry_prefix_) os << l << "\n";
    for (auto& l : blocks_[b].lines) os << l << "\n";
  }
  os << "}\n";
  return os.str();
}

NvvmModuleText lower_kernels_to_nvvm(const ir::Module& m, bool line_info) {
  ModuleState ms;
  ms.line_info = line_info;
  NvvmModuleText out;
  std::vector<std::string> definitions;
  std::vector<std::pair<std::string, const Function*>> kernels;  // (function type, kernel)
  for (auto& f : m.functions) {
    if (f->kind != ir::FunctionKind::Kernel) continue;
    std::string fn_type;
    definitions.push_back(KernelLowering(ms, *f).run(&fn_type));
    kernels.emplace_back(fn_type, f.get());
    out.kernel_names.push_back(f->name);
  }

  std::vector<int> annotations;
  for (auto& [fn_type, f] : kernels) {
    std::string ref = fn_type + " " + global_ref(f->name);
    annotations.push_back(ms.add_metadata("!{" + ref + ", !\"kernel\", i32 1}"));
    std::string grid_constant;  // 1-based indices of the by-value TMA descriptor parameters
    for (size_t i = 0; i < f->args().size(); ++i) {
      Type t = f->args()[i]->type;
      if (t->is_pointer() && t->space == AddrSpace::Param)
        grid_constant += (grid_constant.empty() ? "" : ", ") + std::string("i32 ") + std::to_string(i + 1);
    }
    if (!grid_constant.empty())
      annotations.push_back(ms.add_metadata("!{" + ref + ", !\"grid_constant\", !" +
                                            std::to_string(ms.add_metadata("!{" + grid_constant + "}")) + "}"));
    if (f->reqntid[0] != 0) {
      std::string body = "!{" + ref;
      for (int d = 0; d < 3; ++d)
        body += std::string(", !\"reqntid") + "xyz"[d] + "\", i32 " + std::to_string(std::max(f->reqntid[d], 1));
      annotations.push_back(ms.add_metadata(body + "}"));
    }
    if (f->minctasm > 0)
      annotations.push_back(ms.add_metadata("!{" + ref + ", !\"minctasm\", i32 " + std::to_string(f->minctasm) + "}"));
  }
  // With debug info the version node also carries the debug-metadata version (3.1), as the
  // NVVM IR spec requires; without it libNVVM rejects the module as mismatched.
  int version = ms.add_metadata(ms.compile_unit >= 0 ? "!{i32 2, i32 0, i32 3, i32 1}" : "!{i32 2, i32 0}");

  std::ostringstream os;
  os << "; NVVM IR generated by OpenCuTe\n";
  os << "target datalayout = \"" << kDataLayout << "\"\n";
  os << "target triple = \"nvptx64-nvidia-cuda\"\n\n";
  for (auto& g : ms.global_lines) os << g << "\n";
  if (ms.dyn_smem_align)
    os << "@__opencute_dyn_smem = external addrspace(3) global [0 x i8], align " << ms.dyn_smem_align << "\n";
  if (!ms.global_lines.empty() || ms.dyn_smem_align) os << "\n";
  for (auto& d : definitions) os << d << "\n";
  for (auto& [name, text] : ms.helpers) os << text << "\n";
  for (auto& d : ms.declarations) os << d << "\n";
  if (!ms.declarations.empty()) os << "\n";
  if (!annotations.empty()) {
    os << "!nvvm.annotations = !{";
    for (size_t i = 0; i < annotations.size(); ++i) os << (i ? ", " : "") << "!" << annotations[i];
    os << "}\n";
  }
  os << "!nvvmir.version = !{!" << version << "}\n";
  if (ms.compile_unit >= 0) {
    int flag = ms.add_metadata("!{i32 2, !\"Debug Info Version\", i32 3}");
    os << "!llvm.dbg.cu = !{!" << ms.compile_unit << "}\n";
    os << "!llvm.module.flags = !{!" << flag << "}\n";
  }
  os << "\n";
  for (auto& [id, text] : ms.metadata) os << text << "\n";

  out.text = os.str();
  out.needs_libdevice = ms.needs_libdevice;
  return out;
}

}  // namespace opencute::target
