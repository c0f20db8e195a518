// NVVM lowering of the MLIR-level surface and launch control:
//   InlineAsm       -> an LLVM inline-asm call with the user's PTX and constraint string, as MLIR's
//                      llvm.inline_asm lowers it. A DSL Boolean travels as i1, which PTX's "r"
//                      registers cannot hold: it is widened to i32 on the way in and compared with
//                      zero on the way out, so user code may pass Boolean values to "r" operands.
//   GridDepControl  -> griddepcontrol.wait; / griddepcontrol.launch_dependents;   (sm_90+)
#include <cctype>
#include <string>
#include <vector>

#include "target/nvvm/op_lowering.h"

namespace opencute::target {
namespace {

using ir::Op;
using ir::OpCode;

// An LLVM string literal body: printable ASCII except '"' and '\' as is, the rest as \XX.
std::string llvm_escape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : s) {
    if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') {
      out += char(ch);
    } else {
      out += '\\';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

std::vector<std::string> split_constraints(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  int braces = 0;  // clobbers like ~{memory} hold no commas, but stay safe
  for (char ch : s) {
    if (ch == '{') ++braces;
    if (ch == '}') --braces;
    if (ch == ',' && braces == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!s.empty()) parts.push_back(cur);
  return parts;
}

// Whether the asm text names an operand $n with n >= first (a "$$" is a literal dollar sign).
bool asm_names_operand_from(const std::string& text, size_t first) {
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] != '$') continue;
    if (text[i + 1] == '$') {
      ++i;
      continue;
    }
    size_t j = i + 1, n = 0;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) n = n * 10 + size_t(text[j++] - '0');
    if (j > i + 1 && n >= first) return true;
  }
  return false;
}

void lower_inline_asm(const Op& op, KernelLowering& k) {
  std::vector<std::string> cons = split_constraints(ir::inline_asm_constraints(op));
  size_t outputs = 0;
  while (outputs < cons.size() && !cons[outputs].empty() && cons[outputs][0] == '=') ++outputs;
  if (outputs != op.results.size())
    k.error(op, "inline_asm: the constraint string names " + std::to_string(outputs) + " output(s) but the op has " +
                    std::to_string(op.results.size()) + " result(s)");
  size_t inputs = 0;
  for (size_t i = outputs; i < cons.size(); ++i)
    if (cons[i].empty() || cons[i][0] != '~') ++inputs;
  // Operands past the constraint string's inputs are accepted when the asm text cannot name them
  // (quack passes an operand it spliced into the text as a literal); they are not passed on.
  size_t passed = op.operands.size();
  if (inputs < passed && !asm_names_operand_from(ir::inline_asm_text(op), outputs + inputs)) passed = inputs;
  if (inputs != passed)
    k.error(op, "inline_asm: the constraint string names " + std::to_string(inputs) + " input(s) but " +
                    std::to_string(op.operands.size()) + " operand(s) were given");
  std::string args;
  for (size_t i = 0; i < passed; ++i) {
    const ir::Value* v = op.operands[i];
    std::string ty = llvm_type(v->type), val = k.operand(v);
    if (v->type->is_bool() && cons[outputs + i] != "b") {
      val = k.emit_def("zext i1 " + val + " to i32");
      ty = "i32";
    }
    args += (i ? ", " : "") + ty + " " + val;
  }
  bool bool_result = !op.results.empty() && op.result(0)->type->is_bool() && cons[0] != "=b";
  std::string ret = op.results.empty() ? "void" : bool_result ? "i32" : llvm_type(op.result(0)->type);
  std::string call = "call " + ret + " asm " + (op.int_attr ? "sideeffect " : "") + "\"" +
                     llvm_escape(ir::inline_asm_text(op)) + "\", \"" + llvm_escape(ir::inline_asm_constraints(op)) +
                     "\"(" + args + ")";
  if (op.results.empty()) {
    k.emit_line(call);
    return;
  }
  std::string r = k.emit_def(call);
  if (bool_result) r = k.emit_def("icmp ne i32 " + r + ", 0");
  k.define(op, 0, r);
}

void lower_grid_dep_control(const Op& op, KernelLowering& k) {
  k.emit_line(op.int_attr == int64_t(ir::GridDepControlKind::Wait)
                  ? "call void asm sideeffect \"griddepcontrol.wait;\", \"~{memory}\"()"
                  : "call void asm sideeffect \"griddepcontrol.launch_dependents;\", \"~{memory}\"()");
}

}  // namespace

void register_launch_control_lowerings(LoweringTable& t) {
  t.add(OpCode::InlineAsm, lower_inline_asm);
  t.add(OpCode::GridDepControl, lower_grid_dep_control);
}

}  // namespace opencute::target
