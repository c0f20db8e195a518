// CPU semantics of the SM120 block-scaled MMA family (ir OpCode::MmaSyncBlockScaled) for the
// device emulator.
#pragma once
#include <cstdint>
#include <string>

#include "emulator/device_program.h"

namespace opencute::emulator {

// Runs one warp-wide mma.sync .block_scale (PTX ISA "Block Scaling for mma.sync"): the 32 lanes'
// A / B registers are gathered by the fragment layouts of m16n8k32 (8-bit values, four to a
// register; an E2M1 value of .kind::mxf8f6f4 in bits 2..5 of its byte) or m16n8k64 (E2M1 values,
// eight to a register, the first in the lowest nibble); the factors of row m of A are the bytes of
// the SFA register of lane 4 (m % 8) + m / 8, those of column n of B the bytes of lane 4 n's SFB
// register, byte j scaling the j-th K / scale_vec elements (selectors byte-id = thread-id = 0).
// D = sum_k A*SFA * B*SFB + C is computed exactly and rounded once to f32. `regs` is the warp's
// register file (register r of lane l at r * 32 + l). Returns an error message (empty on
// success): the instruction needs all 32 lanes active.
std::string run_mma_sync_block_scaled(const Inst& i, uint32_t active_mask, ir::Scalar* regs);

}  // namespace opencute::emulator
