// sm_103's block-scaled fp4 MMAs with K = 96 (CuTe C++ keeps them as SM103::SM103_MXF4_ULTRA_SS_VS
// and SM103_MXF4_ULTRA_2x1SM_SS_VS in mma_sm100_umma.hpp, their traits in mma_traits_sm100.hpp),
// and the shared-memory descriptors they read (tcgen05.make_umma_smem_desc).
//
// The instruction is sm_100's block-scaled tcgen05.mma, .kind::mxf4nvf4.block_scale with
// scale_vec::4X (a factor per 16 values) or ::2X (per 32), bit 31 of the instruction descriptor
// set: K = 96 Float4E2M1FN values, 48 bytes of a row of A or column of B, 6 (or 3) factors each.
//
// The operand tiles are K-major, 128-byte swizzled: rows of eight 16-byte chunks. A K block of 48
// bytes that starts at chunk c > 5 runs past the row's end; the rest comes from the start of the
// next buffer, whose address >> 4 the descriptor's LBO field holds in absolute mode (bit 52):
// CuTe's SM103 mma_unpack builds it from the (current, next) descriptor pair, as
// make_umma_smem_desc(..., next_src=) does here.
//
// The factors lie in tensor memory as CuTe's tmem_sf_frg lays out a (VecSize, 1) K block per
// factor: those of row r (of A; column r of B) in lane r % 32 of each subpartition, four K blocks
// to a column's bytes, the next four (rows / 32) columns on, rows / 32 being M / 32 per CTA for A
// and round_up(N, 128) / 32 for B. The MMA's factors start at byte ID (the address's top bits) of
// the SFA / SFB column and run on through the bytes, then the next column group.
#pragma once
#include <cstdint>
#include <vector>

#include "cute/atom/mma_sm100.h"

namespace opencute::cute {

// tcgen05.SM103MmaMXF4Op (sf_vec_size 32, Float8E8M0FNU factors) / SM103MmaMXF4NVF4Op (16, `sf`
// Float8E8M0FNU or Float8E4M3FN): Float4E2M1FN A and B, K-major, A from shared memory; shape
// (M, N[, 96]) with M = 128 (CtaGroup.ONE) or 256 (TWO), N a multiple of 16 in [16, 256].
// Errors (DSLUserCodeError): those rules; a target other than sm_103a / sm_103f.
MmaAtom make_sm103_block_scaled_mma(ir::Type sf, int sf_vec_size, const std::vector<int64_t>& shape, int cta_group,
                                    OperandSource a_src);

// tcgen05.make_umma_smem_desc(src.iterator, src.layout, major[, next_src]): the 64-bit descriptor
// of the (MN, K) tile `src` (shared memory, the swizzle on its pointer, the tile in its own
// element type: K-major tiles of up to one swizzle row, or the 32-byte K tiles of every mode) as a
// descriptor fragment (layout 1:0, Tensor::desc_value) that cute.make_tensor views and the MMA
// reads as is. `next`: the buffer the K block continues in (LBO in absolute mode, bit 52).
Tensor make_umma_smem_desc(const Tensor& src, OperandMajor major, const Tensor* next);

}  // namespace opencute::cute
