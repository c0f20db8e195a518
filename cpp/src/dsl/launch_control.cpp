#include "dsl/launch_control.h"

#include "dsl/tracer.h"

namespace opencute::dsl {

Num inline_asm(ir::Type result, const std::vector<Num>& operands, const std::string& asm_text,
               const std::string& constraints, bool has_side_effects, const std::string& file, int line) {
  Tracer& t = Tracer::require("llvm.inline_asm");
  if (!t.in_kernel())
    throw UserError("ARCH_OUTSIDE_KERNEL", "llvm.inline_asm (inline PTX) is only available inside a @cute.kernel");
  std::vector<ir::Value*> values;
  for (const Num& n : operands) values.push_back(materialize(n));
  ir::Builder& b = t.builder();
  ir::Value* r = b.inline_asm(result, values, asm_text, constraints, has_side_effects);
  ir::Op* op = b.block()->ops.back().get();
  if (!file.empty()) {
    op->file = file;
    op->line = line;
  }
  return r ? Num::of_value(r) : Num();
}

void griddepcontrol(ir::GridDepControlKind kind) {
  const char* what = kind == ir::GridDepControlKind::Wait ? "griddepcontrol_wait" : "griddepcontrol_launch_dependents";
  Tracer& t = Tracer::require(what);
  if (!t.in_kernel()) throw UserError("ARCH_OUTSIDE_KERNEL", std::string(what) + " is only available inside a @cute.kernel");
  t.builder().griddepcontrol(kind);
}

}  // namespace opencute::dsl
