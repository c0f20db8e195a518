// NVVM lowering of the SM80 MMA family (ir OpCode::MmaSync): inline PTX mma.sync.aligned.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace opencute::target {

// `operands` are the LLVM texts of op's operands; `def` emits one instruction (right-hand
// side) and returns the name it defines. Returns the LLVM texts of op's results. The 16-bit
// and 8-bit fragment values are packed into the instruction's 32-bit registers (lowest value
// in the lowest bits), f16 accumulators likewise; bf16 values are i16 in LLVM, 8-bit floats i8.
std::vector<std::string> lower_mma_sync(const ir::Op& op, const std::vector<std::string>& operands,
                                        const std::function<std::string(const std::string&)>& def);

// The PTX instruction name of an MmaSync op, e.g. "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32".
std::string mma_sync_instruction(const ir::Op& op);

}  // namespace opencute::target
