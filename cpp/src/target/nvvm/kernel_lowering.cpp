#include "target/nvvm/kernel_lowering.h"

#include <functional>
#include <stdexcept>

#include "target/nvvm/nvvm_types.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

using ir::Op;
using ir::Type;
using ir::Value;

// ---------------------------------------------------------------------------------------------
// Module-wide state

void ModuleState::declare(const std::string& ret, const std::string& name, const std::string& params) {
  declarations.insert("declare " + ret + " @" + name + "(" + params + ")");
}

int ModuleState::add_metadata(const std::string& body) {
  int id = next_md++;
  metadata.emplace_back(id, "!" + std::to_string(id) + " = " + body);
  return id;
}

std::string ModuleState::format_global(const std::string& text) {
  auto it = format_globals.find(text);
  if (it != format_globals.end()) return it->second;
  std::string name = "@.str" + std::to_string(format_globals.size());
  format_globals.emplace(text, name);
  global_lines.push_back(name + " = private unnamed_addr addrspace(1) constant [" + std::to_string(text.size() + 1) +
                         " x i8] " + c_string_literal(text) + ", align 1");
  return name;
}

std::string ModuleState::named_struct(const std::string& literal) {
  auto it = named_structs.find(literal);
  if (it != named_structs.end()) return it->second;
  std::string name = "%opencute.struct." + std::to_string(named_structs.size());
  named_structs.emplace(literal, name);
  global_lines.push_back(name + " = type " + literal);
  return name;
}

// ---------------------------------------------------------------------------------------------
// The op families' table

void LoweringTable::add(ir::OpCode code, LowerOpFn fn) {
  if (fns_[size_t(code)])
    throw std::logic_error(std::string("two NVVM lowerings registered for ") + ir::opcode_name(code));
  fns_[size_t(code)] = fn;
}

// ---------------------------------------------------------------------------------------------
// One kernel

void KernelLowering::fail(const Op* op, const std::string& msg) const {
  std::string where = "lower_kernels_to_nvvm: @" + fn_.name;
  if (!op) op = current_op_;
  if (op) where += std::string(" (") + ir::opcode_name(op->code) + ")";
  throw std::runtime_error(where + ": " + msg);
}

std::string KernelLowering::fresh() { return "%v" + std::to_string(next_value_++); }

void KernelLowering::emit_line(const std::string& s) { blocks_[cur_].lines.push_back("  " + s + debug_suffix_); }

namespace {

// An instruction without side effects whose text already defines a value earlier in the
// current basic block is that value: fragment code repeats the same address computations,
// bitcasts and packings for every MMA and copy (in tensorop_gemm a third of the NVVM IR),
// all of which libNVVM would otherwise parse and CSE itself.
bool reusable(const std::string& rhs) {
  size_t end = rhs.find(' ');
  std::string word = rhs.substr(0, end);
  static const std::set<std::string> pure = {
      "add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor", "fadd", "fsub", "fmul", "fneg",
      "icmp", "fcmp", "select", "bitcast", "zext", "sext", "trunc", "fpext", "fptrunc", "ptrtoint", "inttoptr",
      "addrspacecast", "getelementptr", "extractelement", "insertelement", "shufflevector", "extractvalue",
      "insertvalue"};
  return pure.count(word) > 0;
}

}  // namespace

void KernelLowering::emit_asm_clobbering_memory(const std::string& text, const std::string& constraints,
                                                const std::string& args) {
  emit_line("call void asm sideeffect \"" + text + "\", \"" + constraints + (constraints.empty() ? "" : ",") +
            "~{memory}\"(" + args + ")");
}

std::string KernelLowering::shared_window_address(const ir::Op& op, const ir::Value* ptr,
                                                  const std::string& error_message) {
  ir::Type t = ptr->type;
  std::string p = operand(ptr), pt = llvm_type(t);
  if (t->space != ir::AddrSpace::Smem) {
    if (t->space != ir::AddrSpace::Generic) error(op, error_message);
    std::string to = pt.substr(0, pt.size() - 1) + " addrspace(3)*";
    p = emit_def("addrspacecast " + pt + " " + p + " to " + to);
    pt = to;
  }
  return emit_def("ptrtoint " + pt + " " + p + " to i32");
}

std::string KernelLowering::narrow_descriptor(const std::string& desc) {
  std::string lo = emit_def("trunc i64 " + desc + " to i32");
  std::string hi = emit_def("trunc i64 " + emit_def("lshr i64 " + desc + ", 32") + " to i32");
  return emit_def("call i64 asm \"mov.b64 $0, {$1, $2};\", \"=l,r,r\"(i32 " + lo + ", i32 " + hi + ") readnone nounwind");
}

std::string KernelLowering::emit_def(const std::string& rhs) {
  const bool reuse = reusable(rhs);
  if (reuse) {
    auto& known = blocks_[cur_].defined;
    auto it = known.find(rhs);
    if (it != known.end()) return it->second;
  }
  std::string n = fresh();
  emit_line(n + " = " + rhs);
  if (reuse) blocks_[cur_].defined.emplace(rhs, n);
  return n;
}

std::string KernelLowering::emit_def_in_entry(const std::string& rhs) {
  std::string n = fresh();
  entry_prefix_.push_back("  " + n + " = " + rhs);
  return n;
}

std::string KernelLowering::call_intrinsic(const std::string& ret, const std::string& name,
                                           const std::vector<std::string>& typed_args, const std::string& param_types) {
  ms_.declare(ret, name, param_types);
  std::string args;
  for (size_t i = 0; i < typed_args.size(); ++i) args += (i ? ", " : "") + typed_args[i];
  return emit_def("call " + ret + " @" + name + "(" + args + ")");
}

std::string KernelLowering::operand(const Value* v) const {
  auto it = vals_.find(v);
  if (it == vals_.end()) fail(v->def, "operand is not defined in this kernel (used outside its scope?)");
  return it->second;
}

void KernelLowering::define(const Op& op, int result, const std::string& value) { vals_[op.result(result)] = value; }

void KernelLowering::bind(const Value* v, const std::string& value) { vals_[v] = value; }

std::string KernelLowering::lanewise(const Op& op,
                                     const std::function<std::string(const std::vector<std::string>&)>& scalar) {
  Type rt = op.result()->type;
  int lanes = rt->is_vector() ? rt->lanes : 0;
  std::vector<std::string> in;
  for (const Value* v : op.operands) {
    in.push_back(operand(v));
    if (v->type->is_vector()) {
      if (lanes && lanes != v->type->lanes) error(op, "vector operands of different lane counts");
      lanes = v->type->lanes;
    }
  }
  if (!lanes) return scalar(in);
  if (!rt->is_vector()) error(op, "a vector operation must produce a vector");
  std::string acc = "undef";
  for (int lane = 0; lane < lanes; ++lane) {
    std::vector<std::string> s;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      Type t = op.operands[i]->type;
      s.push_back(t->is_vector()
                      ? emit_def("extractelement " + llvm_type(t) + " " + in[i] + ", i32 " + std::to_string(lane))
                      : in[i]);
    }
    std::string r = scalar(s);
    acc = emit_def("insertelement " + llvm_type(rt) + " " + acc + ", " + llvm_type(rt->element) + " " + r + ", i32 " +
                   std::to_string(lane));
  }
  return acc;
}

size_t KernelLowering::start_block(const std::string& label) {
  blocks_.push_back({label, {}, {}});
  cur_ = blocks_.size() - 1;
  return cur_;
}

const std::string& KernelLowering::label() const { return blocks_[cur_].label; }

std::string KernelLowering::new_label_prefix(const char* kind) { return kind + std::to_string(next_region_++); }

void KernelLowering::prepend_lines(size_t block, const std::vector<std::string>& lines) {
  auto& bl = blocks_[block].lines;
  bl.insert(bl.begin(), lines.begin(), lines.end());
}

const Op* KernelLowering::lower_block(const ir::Block& b) {
  for (auto& up : b.ops) {
    const Op& op = *up;
    if (ir::is_terminator(op.code)) {
      if (op.code == ir::OpCode::Return) {
        if (&b != fn_.body.get()) fail(&op, "return inside a nested region");
        if (!op.operands.empty()) fail(&op, "kernels return no values");
        emit_line("ret void");
      }
      return &op;
    }
    lower_op(op);
  }
  return nullptr;
}

void KernelLowering::lower_op(const Op& op) {
  current_op_ = &op;
  set_debug_location(&op);
  if (scalar_registers_.lower(op, *this)) return;
  LowerOpFn lower = nvvm_lowerings().find(op.code);
  if (!lower) fail(&op, "no NVVM lowering for this operation");
  lower(op, *this);
}

}  // namespace opencute::target
