// CPU semantics of the SM90 warpgroup MMA family (ir OpCode::Wgmma, WgmmaFence, WgmmaCommit,
// WgmmaWait) for the device emulator, per the PTX ISA ("Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate": matrix descriptors, canonical shared-memory layouts, the register
// fragments of wgmma .m64nNk16 / .m64nNk32).
//
// The four warps of a warpgroup each own 16 rows of the 64 x N accumulator tile, and every
// value a warp needs is either in shared memory (read through the descriptors) or in its own
// lanes' registers (A from registers), so each warp runs its part when it reaches the
// instruction. The emulator completes a wgmma when it is issued: the smem operands are read then
// and the accumulators written; fence / commit_group / wait_group have nothing left to order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "emulator/device_program.h"

namespace opencute::emulator {

// The shared-memory byte address of element (mn, k) of an operand described by `desc` (the
// 64-bit wgmma matrix descriptor), `mn_major` saying which layout family it is, for elements of
// `element_bits`; `smem` / `smem_size` are the block's shared memory (the descriptor holds the
// low 18 bits of the address). Returns 0 when the address lies outside it.
uintptr_t wgmma_operand_address(uint64_t desc, bool mn_major, int element_bits, int64_t mn, int64_t k,
                                uintptr_t smem, size_t smem_size);

// Runs one warp's part of a Wgmma (or a fence / commit / wait, which do nothing here).
// `warp_in_group` is the warp's index in its warpgroup. Returns an error message, or "".
std::string run_wgmma(const Inst& i, uint32_t active_mask, ir::Scalar* regs, int warp_in_group, uintptr_t smem,
                      size_t smem_size);

// Lowers one of the family's ops into the program; false when `op` is not one.
bool lower_sm90_mma(DeviceEmulator::Program& p, const ir::Op& op);

}  // namespace opencute::emulator
