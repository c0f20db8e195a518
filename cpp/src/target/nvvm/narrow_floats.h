// Arithmetic on the narrow floats (f16, bf16, fp8, fp4) happens in f32: an operand is widened
// (exactly), the f32 result narrowed back with round-to-nearest-even, once per op, as
// scalar_semantics computes them. bf16 is i16 in LLVM 7, the 8-bit floats i8 and e2m1 i4; their
// conversions are internal helper functions (support/fp8.h's and support/fp4.h's algorithms).
#pragma once
#include <string>

#include "ir/ir.h"
#include "target/nvvm/kernel_lowering.h"

namespace opencute::target {

// The type arithmetic on `t` happens in: f32 for the narrow floats, `t` otherwise.
ir::Type compute_type(ir::Type t);
// The value `v` of type `t` in compute_type(t) (`v` itself for other types).
std::string widen(KernelLowering& k, ir::Type t, const std::string& v);
// The f32 value `v` rounded to `t` (`v` itself for other types).
std::string narrow(KernelLowering& k, ir::Type t, const std::string& v);

}  // namespace opencute::target
