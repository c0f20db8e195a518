// The driver of the NVVM lowering: the op families' table, one kernel's signature and body
// (KernelLowering::run), and the module text around the kernels (data layout, globals, helper
// functions, declarations, !nvvm.annotations, metadata).
#include "target/nvvm/lower_to_nvvm.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/arch.h"
#include "target/nvvm/kernel_lowering.h"
#include "target/nvvm/nvvm_types.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

using ir::AddrSpace;
using ir::Function;
using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::TypeKind;
using ir::Value;

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
    register_sm120_mma_lowerings(t);
    register_sm90_mma_lowerings(t);
    register_sm90_async_lowerings(t);
    register_sm90_warp_lowerings(t);
    register_sm100_lowerings(t);
    register_sm90_tensormap_lowerings(t);
    register_launch_control_lowerings(t);
    register_cluster_launch_control_lowerings(t);
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
      params.push_back(ms_.byval_names_type ? "[16 x i64]* byval([16 x i64]) align 64 " + n
                                            : "[16 x i64]* byval align 64 " + n);
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
  unrolled_loops_ = transforms::unroll_register_indexing_loops(fn_);
  scalar_registers_.analyze(fn_, unrolled_loops_);
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

NvvmModuleText lower_kernels_to_nvvm(const ir::Module& m, bool line_info, const std::string& arch) {
  ModuleState ms;
  ms.line_info = line_info;
  ms.byval_names_type = support::parse_arch(arch).nvvm_byval_names_type();
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
