// The MLIR-level surface the CuTe DSL examples reach into (cutlass._mlir.dialects.llvm.inline_asm)
// and programmatic dependent launch (cute.arch.griddepcontrol_wait / _launch_dependents).
#pragma once
#include <string>
#include <vector>

#include "dsl/num.h"

namespace opencute::dsl {

// User inline PTX: `result` is the output type (null: none; then the returned Num has no type).
// file/line say where the user wrote it: the CPU emulator refuses the op there.
Num inline_asm(ir::Type result, const std::vector<Num>& operands, const std::string& asm_text,
               const std::string& constraints, bool has_side_effects, const std::string& file, int line);
void griddepcontrol(ir::GridDepControlKind kind);

}  // namespace opencute::dsl
