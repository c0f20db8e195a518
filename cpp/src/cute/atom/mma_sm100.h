// tcgen05 MMA atoms of SM100 (CuTe C++'s mma_traits_sm100.hpp, mma_sm100_umma.hpp and
// mma_sm100_desc.hpp): one thread issues tcgen05.mma for the CTA (or the CTA pair of
// cta_group::2), reading B (and A, unless A is in tensor memory) from shared memory through
// 64-bit matrix descriptors and accumulating D in tensor memory. The instruction's K spans 256
// bits: 16 f16/bf16, 8 tf32, 32 8-bit elements.
//
// Tables (CuTe's; "threads" are the CTAs of the group, V the CTA's part of the tile):
//   cta_group::1  ThrID 1:0  A ((1),(M,K)):((0),(1,M))        B ((1),(N,K)):((0),(1,N))        C ((1),(M,N)):((0),(1,M))
//   cta_group::2  ThrID 2:1  A ((2),(M/2,K)):((M/2),(1,M))    B ((2),(N/2,K)):((N/2),(1,N))    C ((2),(M/2,N)):((M/2),(1,M))
// The smem descriptors describe the same canonical layouts as wgmma's (mma_sm90.h) in another
// encoding: start address >> 4 at [0,14), LBO >> 4 at [16,30), SBO >> 4 at [32,46), version 1 at
// [46,48), base offset [49,52), LBO mode [52], swizzle [61,64) = 0 none, 2 128B, 4 64B, 6 32B.
// The 32-bit instruction descriptor: D format [4,6) (0 F16, 1 F32, 2 S32), A / B format [7,10) /
// [10,13), negate A / B [13] / [14], A / B major [15] / [16] (0 K, 1 MN), N >> 3 [17,23), M >> 4
// [24,29).
//
// The accumulator lives in tensor memory (make_fragment_C): for M (per CTA) = 128 row m is lane m
// and column n column n; for M = 64 (cta_group::1) rows sit in lanes 0-15 of each 32-lane group;
// with cta_group::2 and M / 2 < 128 the N columns are split over the lane groups (CuTe's tmem_frg).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cute/atom/mma_sm90.h"
#include "cute/atom/tiled_mma.h"

namespace opencute::cute {

// tcgen05.MmaF16BF16Op / MmaTF32Op / MmaI8Op / MmaFP8Op (F8F6F4): the operand types, the
// accumulator type, shape (M, N[, K]), CTA group (1 or 2), A's source (Smem or Tmem) and the major
// modes. Errors (DSLUserCodeError): the PTX ISA's type and shape rules; a target without tcgen05.
MmaAtom make_tcgen05_mma(ir::Tcgen05Kind kind, ir::Type a, ir::Type b, ir::Type acc, const std::vector<int64_t>& shape,
                         int cta_group, OperandSource a_src, OperandMajor a_major, OperandMajor b_major);

// tcgen05.MmaMXF8Op / MmaMXF4Op / MmaMXF4NVF4Op (kinds MXF8F6F4, MXF4, MXF4NVF4): block-scaled MMAs
// D (Float32) += (A * SFA) (B * SFB), each factor scaling `sf_vec_size` consecutive K elements of
// a row of A or a column of B. MXF8F6F4: 8-bit A / B (K 32), UE8M0 factors per 32 (scale_vec::1X);
// MXF4: Float4E2M1FN (K 64), UE8M0 per 32 (2X); MXF4NVF4: Float4E2M1FN, UE8M0 or UE4M3
// (Float8E4M3FN) per 16 (4X). Shapes: M = 128 (CtaGroup.ONE) or 256 (TWO), N a multiple of 8 (16
// for TWO) up to 256. The factors live in tensor memory at the addresses of the SFA / SFB fields.
MmaAtom make_tcgen05_block_scaled_mma(ir::Tcgen05Kind kind, ir::Type a, ir::Type b, ir::Type sf, int sf_vec_size,
                                      const std::vector<int64_t>& shape, int cta_group, OperandSource a_src,
                                      OperandMajor a_major, OperandMajor b_major);
// The atom tables of a block-scaled kind, its arguments checked by the caller (also the sm_103
// K = 96 atoms of mma_sm103.h).
MmaAtom tcgen05_block_scaled_atom(ir::Tcgen05Kind kind, ir::Type a, ir::Type b, ir::Type sf, int sf_vec_size, int64_t M,
                                  int64_t N, int64_t k, int cta_group, OperandSource a_src, OperandMajor a_major,
                                  OperandMajor b_major);
// The scale_vec::NX of a block-scaled atom (1, 2 or 4).
int tcgen05_scale_vec(const MmaAtom& atom);
// The scale factors' layout built for the MMA that reads them (make_smem_layout_sfa / sfb,
// make_tmem_layout_sfa / sfb, cute.gemm's SFA / SFB tensors), in `fn`: `sf_vec_size` (the helper's
// argument, 0 when none) and the layout's (vector size, factors per MMA) mode (0, 0 when unknown)
// must be the atom's vector size, and the factors must cover the atom's K, or be one (a view of
// one K block at a time; a K = 96 atom of sm_103 reads its factors from several K blocks: only the
// vector size is checked there). A
// mismatch is a SHAPE_MISMATCH error: the GPU would read the wrong factor for each K block.
void check_scale_factor_layout(const MmaAtom& atom, const std::string& fn, int64_t sf_vec_size, int64_t layout_vec,
                               int64_t layout_factors);
// tiled_mma.set(Field.SFA (which 0) / Field.SFB (1), ptr): a tensor-memory pointer to the factors
// that the following cute.gemm calls read. Only inside a kernel.
void set_tcgen05_scale_factor(MmaAtom& atom, int which, const dsl::Num& ptr);

// The 32-bit instruction descriptor of an atom (ACCUMULATE is the instruction's own operand).
uint32_t tcgen05_instruction_descriptor(const MmaAtom& atom);
// The 64-bit SM100 shared-memory descriptor for an operand tile at `smem_address`.
uint64_t encode_umma_descriptor(const GmmaDescriptorFields& f, int swizzle_bits, uint64_t smem_address);

// Whether make_fragment of `which` gives descriptors (A from smem, B) for this atom.
bool is_tcgen05_desc_operand(const MmaAtom& atom, MmaOperand which);
// make_fragment_A/B over an smem tensor ((MMA_M|N, MMA_K), rest...) whose mode 0 is the CTA's
// part of the atom's tile: the descriptor fragment (Tensor::desc_tile).
Tensor make_tcgen05_desc_fragment(const TiledMma& mma, MmaOperand which, const Tensor& t);
// make_fragment_C of a shape ((M', N), rest...) (partition_shape_C of the tile): a tensor-memory
// tensor at address 0 with the accumulator layout above (swap its pointer for the allocated one).
// make_fragment_A of a tcgen05 atom with A from tensor memory: likewise for A ((M', K), rest...).
Tensor make_tcgen05_tmem_fragment(const TiledMma& mma, MmaOperand which, const layout::IntTuple& shape);

// cute.gemm over a tcgen05 atom: D and C the same tensor-memory accumulator ((M',N), ...), A and
// B descriptor fragments (A may be a tensor-memory tensor), in the shapes (V)x(V)->(V),
// (V,M)x(V,N)->(V,M,N) or (V,M,K)x(V,N,K)->(V,M,N). The first k-block uses the atom's ACCUMULATE
// field, the later ones accumulate. Emits one Tcgen05Mma per atom.
void tcgen05_gemm(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c);
// cute.gemm(mma, D, [A, SFA], [B, SFB], C) with a block-scaled atom (CuTe's zipped operands): the
// scale-factor tensors ((MMA), MMA_M|N, MMA_K) of tensor memory, their M / N mode 1 or A's / B's;
// before each MMA the SFA / SFB fields point at SFA[(_, m, k)] and SFB[(_, n, k)] (they keep
// the last ones afterwards, as tiled_mma.set would).
void tcgen05_scaled_gemm(MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& sfa, const Tensor& b,
                         const Tensor& sfb, const Tensor& c);

std::string tcgen05_op_string(const MmaAtom& a);

}  // namespace opencute::cute
