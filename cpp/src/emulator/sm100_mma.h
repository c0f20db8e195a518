// CPU semantics of tcgen05.mma and tcgen05.commit (PTX ISA "TensorCore 5th Generation Family
// Instructions"), decoding what the kernel computed, as the GPU does:
//   - the 32-bit instruction descriptor: D / A / B formats, negation, A / B major modes, N >> 3
//     at bits [17, 23), M >> 4 at bits [24, 29) (sparsity and the weight-stationary shift are not
//     emulated and are reported);
//   - the 64-bit shared-memory matrix descriptors of A and B: start address, leading and stride
//     byte offsets (16-byte units), version 1 at bits [46, 48), swizzle at bits [61, 64)
//     (0 none, 2 128-byte, 4 64-byte, 6 32-byte), over the canonical K- and MN-major layouts;
//   - A from tensor memory: row m in lane m of the address's lane, K packed into 32-bit columns;
//   - D in tensor memory at the D address: row m in lane m (M = 128 per CTA), or the M = 64
//     layout (rows in lanes 0-15 of each 32-lane group) and the split layouts of cta_group::2.
// Block-scaled kinds (mxf8f6f4 / mxf4 / mxf4nvf4 .block_scale.scale_vec::NX): the descriptor's
// scale format (bit 23: UE8M0 or UE4M3) and scale-factor IDs (A bits [29,31), B bits [4,6): the
// byte of a column where this MMA's factors start); the factors from tensor memory at the SFA /
// SFB addresses in CuTe's tmem_sf_frg layout: row r of A (column r of B) at lane 32 p + r % 32,
// column + r / 32, bytes ID .. ID + N - 1 (N = scale_vec), p the subpartition computing the row
// of D; .kind::mxf4 / mxf4nvf4 read E2M1 packed two to a byte (K = 64). Each factor must come
// from a cell a tcgen05.cp / st wrote since the allocation (not one an accumulator overwrote), and
// a tcgen05.cp of those columns by another warp must be known complete (sm100_mma_completion.h):
// else the MMA is reported at its line.
// cta_group::2: the even CTA of a pair issues it; each CTA holds half of A's rows (M / 2) and half
// of B's columns (N / 2) at the same shared-memory offsets, and gets its M / 2 rows of D in its
// own tensor memory.
//
// The CuTe DSL issues an MMA or a commit from one elected lane of the warp that executes it (the
// lowering wraps the instruction in elect.sync), and the emulator does the same. MMAs complete
// at once on the emulator, so a commit arrives on its mbarrier(s) immediately.
#pragma once

#include "emulator/device_program.h"

namespace opencute::emulator {

// Lowers Tcgen05Mma / Tcgen05Commit into the program; false when `op` is neither.
bool lower_sm100_mma(DeviceEmulator::Program& p, const ir::Op& op);

}  // namespace opencute::emulator
