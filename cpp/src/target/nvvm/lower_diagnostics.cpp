// NVVM lowering of the device diagnostics: Printf (CUDA's vprintf, arguments packed with C's
// default promotions) and Assert (a branch to __assertfail and a trap, as CUDA's assert()).
// The format and message texts are private globals in global memory (ModuleState::format_global).
#include <string>
#include <vector>

#include "target/nvvm/narrow_floats.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

using ir::AddrSpace;
using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::Value;

namespace {

// A generic `i8*` to a NUL-terminated copy of `text` in global memory.
std::string string_pointer(KernelLowering& k, const std::string& text) {
  std::string g = k.module().format_global(text);
  std::string arr = "[" + std::to_string(text.size() + 1) + " x i8]";
  std::string in_global =
      k.emit_def("getelementptr inbounds " + arr + ", " + arr + " addrspace(1)* " + g + ", i64 0, i64 0");
  return k.emit_def("addrspacecast i8 addrspace(1)* " + in_global + " to i8*");
}

void lower_printf(const Op& op, KernelLowering& k) {
  std::string fmt = string_pointer(k, op.str_attr);

  // vprintf reads the arguments as a packed struct with C's default argument promotions,
  // each member aligned to its own size.
  struct Arg {
    std::string type, value;
    int size;
  };
  std::vector<Arg> args;
  for (const Value* v : op.operands) {
    Type t = v->type;
    std::string x = k.operand(v);
    if (t->is_float()) {
      if (!t->is_f64()) x = k.emit_def("fpext float " + (t->is_f32() ? x : widen(k, t, x)) + " to double");
      args.push_back({"double", x, 8});
    } else if (t->is_int()) {
      if (t->width > 64) k.error(op, "cannot print integers wider than 64 bits");
      int w = t->width <= 32 ? 32 : 64;
      if (t->width != w)
        x = k.emit_def(std::string(t->is_signed ? "sext " : "zext ") + llvm_type(t) + " " + x + " to i" +
                       std::to_string(w));
      args.push_back({"i" + std::to_string(w), x, w / 8});
    } else if (t->is_pointer()) {
      std::string generic = pointer_text(t->element, AddrSpace::Generic);
      if (llvm_addrspace(t->space) != 0) x = k.emit_def("addrspacecast " + llvm_type(t) + " " + x + " to " + generic);
      args.push_back({"i64", k.emit_def("ptrtoint " + generic + " " + x + " to i64"), 8});
    } else {
      k.error(op, "cannot print a value of type " + ir::to_string(t));
    }
  }
  std::string buf = "null";
  if (!args.empty()) {
    std::vector<int> offsets;
    int size = 0;
    for (auto& a : args) {
      size = (size + a.size - 1) / a.size * a.size;
      offsets.push_back(size);
      size += a.size;
    }
    std::string barr = "[" + std::to_string(size) + " x i8]";
    std::string storage = k.emit_def_in_entry("alloca " + barr + ", align 8");
    for (size_t i = 0; i < args.size(); ++i) {
      std::string slot = k.emit_def("getelementptr inbounds " + barr + ", " + barr + "* " + storage + ", i64 0, i64 " +
                                    std::to_string(offsets[i]));
      std::string typed = k.emit_def("bitcast i8* " + slot + " to " + args[i].type + "*");
      k.emit_line("store " + args[i].type + " " + args[i].value + ", " + args[i].type + "* " + typed + ", align " +
                  std::to_string(args[i].size));
    }
    buf = k.emit_def("getelementptr inbounds " + barr + ", " + barr + "* " + storage + ", i64 0, i64 0");
  }
  k.module().declare("i32", "vprintf", "i8*, i8*");
  k.emit_def("call i32 @vprintf(i8* " + fmt + ", i8* " + buf + ")");
}

void lower_assert(const Op& op, KernelLowering& k) {
  std::string prefix = k.new_label_prefix("assert");
  std::string ok = prefix + ".ok", failed = prefix + ".fail";
  k.emit_line("br i1 " + k.operand(op.operands[0]) + ", label %" + ok + ", label %" + failed);
  k.start_block(failed);
  // What CUDA's assert() calls: prints "file:line: function: ... Assertion `message` failed."
  std::string message = string_pointer(k, op.str_attr), file = string_pointer(k, op.file),
              function = string_pointer(k, k.function().name);
  k.module().declare("void", "__assertfail", "i8*, i8*, i32, i8*, i64");
  k.emit_line("call void @__assertfail(i8* " + message + ", i8* " + file + ", i32 " + std::to_string(op.line) +
              ", i8* " + function + ", i64 1)");
  k.module().declare("void", "llvm.trap", "");
  k.emit_line("call void @llvm.trap()");
  k.emit_line("unreachable");
  k.start_block(ok);
}

}  // namespace

void register_diagnostic_lowerings(LoweringTable& t) {
  t.add(OpCode::Printf, lower_printf);
  t.add(OpCode::Assert, lower_assert);
}

}  // namespace opencute::target
