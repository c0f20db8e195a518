// MMA atoms of the SM120 (GeForce Blackwell) family, CuTe C++'s mma_traits_sm120.hpp: the
// warp-level block-scaled mma.sync (.kind::mxf8f6f4 m16n8k32 scale_vec::1X, .kind::mxf4 m16n8k64
// scale_vec::2X, .kind::mxf4nvf4 m16n8k64 scale_vec::2X / 4X). Each is a table of the generic
// MmaAtom (mma_atom.h) with the scale factors' thread-value layouts, and one MmaSyncBlockScaled
// op per call of cute.gemm(mma, d, [a, sfa], [b, sfb], c).
#pragma once
#include <string>

#include "cute/atom/mma_atom.h"
#include "cute/atom/tiled_mma.h"

namespace opencute::cute {

// warp.MmaMXF4NVF4Op(ab, acc, sf): Float4E2M1FN inputs, Float32 accumulators, a factor per 16 K
// elements (Float8E4M3FN or Float8E8M0FNU), shape (16, 8, 64).
// warp.MmaMXF4Op(ab, acc, sf): as MmaMXF4NVF4Op with a Float8E8M0FNU factor per 32 K elements.
// warp.MmaMXF8Op(ab, acc, sf) / MmaMXF8F6F4Op(a, b, acc, sf): 8-bit float inputs (or Float4E2M1FN
// held one to a byte, the value in bits 2..5), a Float8E8M0FNU factor per 32, shape (16, 8, 32).
// `kind` is ir::Tcgen05Kind MXF4NVF4 / MXF4 / MXF8F6F4. Errors (DSLUserCodeError): the constraint.
MmaAtom make_mma_block_scaled_sync(int kind, ir::Type a, ir::Type b, ir::Type acc, ir::Type sf, const char* op_name);

// cute.gemm(mma, d, [a, sfa], [b, sfb], c) with a BlockScaledSync atom: (V)x(V)->(V) (one atom),
// (V,M)x(V,N)->(V,M,N) or (V,M,K)x(V,N,K)->(V,M,N) over register fragments; SFA / SFB are register fragments shaped like
// A / B ((V,M[,K]) with the factors' zero strides: each atom reads its K / sf_vec_size distinct
// factors). Errors: shapes, types and value counts that do not fit the atom.
void sm120_scaled_gemm(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& sfa, const Tensor& b,
                       const Tensor& sfb, const Tensor& c);

// The tiled MMA whose A / B operands are the scale factors SFA / SFB (the atom's A / B thread-value
// layouts replaced by its SFA / SFB ones): CuTe's collective thrfrg_SFA / thrfrg_SFB are thrfrg_A /
// thrfrg_B of this MMA, get_layoutSFA_TV its layout_tv(A), partition_fragment_SFA the fragment of
// its partition of A. Errors: an MMA without scale factors.
TiledMma scale_factor_mma(const TiledMma& mma);
// partition_fragment_SFA / SFB: a register fragment of the scale-factor type shaped like thread
// `thr_index`'s partition of the (M or N, K) tensor `t` (zero strides of the value mode kept).
Tensor partition_fragment_sf(const TiledMma& mma, MmaOperand which, const Tensor& t, const layout::Int& thr_index);

// "warp-level MXF4NVF4 MMA Operation" ... (the Op's text).
std::string mma_sm120_op_string(const MmaAtom& a);

}  // namespace opencute::cute
