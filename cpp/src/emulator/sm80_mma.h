// CPU semantics of the SM80 MMA family (ir OpCode::MmaSync) for the device emulator.
#pragma once
#include <cstdint>
#include <string>

#include "emulator/device_program.h"

namespace opencute::emulator {

// Runs one warp-wide mma.sync: the 32 lanes' fragments are gathered into the A (M x K),
// B (K x N) and C (M x N) matrices by the PTX ISA's fragment layouts ("Matrix Fragments for
// mma.m16n8k8 / m16n8k16 / m16n8k32"), D = A * B + C is computed with exact products and sums
// rounded once to the accumulator type (f32, or f16 for f16 accumulators), and D is scattered
// back to the lanes. `regs` is the warp's register file (register r of lane l at r * 32 + l).
// Returns an error message (empty on success): the instruction needs all 32 lanes active.
std::string run_mma_sync(const Inst& i, uint32_t active_mask, ir::Scalar* regs);

}  // namespace opencute::emulator
