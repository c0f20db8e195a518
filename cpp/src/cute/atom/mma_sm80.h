// MMA atoms of the SM80 family (CuTe C++'s mma_traits_sm80.hpp / mma_traits_sm89.hpp): mma.sync
// m16n8k8 / m16n8k16 with f16/bf16 inputs and m16n8k32 with fp8 inputs, each a table of the
// generic MmaAtom (mma_atom.h) and one MmaSync op per call.
#pragma once
#include <string>
#include <vector>

#include "cute/atom/mma_atom.h"

namespace opencute::cute {

// warp.MmaF16BF16Op(ab_dtype, acc_dtype, shape_mnk): f16/bf16 inputs, f16 (f16 inputs only) or
// f32 accumulators, shape (16,8,8) or (16,8,16). Errors (DSLUserCodeError): the constraint.
MmaAtom make_mma_f16bf16(ir::Type ab, ir::Type acc, const std::vector<int64_t>& shape_mnk);
// warp.MmaFP8Op(ab_dtype, acc_dtype, shape_mnk): 8-bit float inputs (e4m3 / e5m2), f32
// accumulators, shape (16,8,32).
MmaAtom make_mma_fp8(ir::Type ab, ir::Type acc, const std::vector<int64_t>& shape_mnk);
// One mma.sync of an SM80 atom on operand values already read: the C/D values it yields.
std::vector<ir::Value*> mma_sync_call(const MmaAtom& atom, const std::vector<dsl::Num>& a_values,
                                      const std::vector<dsl::Num>& b_values, const std::vector<dsl::Num>& c_values);
// The Op's text of an SM80 atom ("warp-level F16/BF16 MMA Operation" ...).
std::string mma_sm80_op_string(const MmaAtom& a);

}  // namespace opencute::cute
