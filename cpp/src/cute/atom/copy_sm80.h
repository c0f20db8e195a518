// The SM80 copy atoms, as tables in the manner of CuTe's copy_traits_sm75.hpp /
// copy_traits_sm80.hpp / copy_traits_sm90.hpp (stmatrix), and the IR each atom call emits:
//   cp.async (CopyG2SOp): 1 thread, 4/8/16 bytes global -> shared, .ca or .cg (16 B only);
//     a predicated call becomes the zero-fill form (source size 0), as SM80_CP_ASYNC_*_ZFILL.
//   ldmatrix (LdMatrix8x8x16bOp, LdMatrix8x16x8bOp): 32 threads, x1/x2/x4 8x8 matrices of
//     16-bit elements (or 8x16 of 8-bit elements, without .trans; or of 4-bit ones widened to
//     bytes, unpack_bits=4), shared -> registers.
//   stmatrix (StMatrix8x8x16bOp): the inverse of ldmatrix, registers -> shared (sm_90).
#pragma once
#include <optional>
#include <string>

#include "cute/atom/copy_atom.h"

namespace opencute::cute {

// cache_mode: 0 always (.ca), 1 global (.cg). num_bits: 32, 64 or 128.
CopyAtom make_cp_async_atom(ir::Type value_type, int num_bits, int cache_mode);
// eight_bit: LdMatrix8x16x8bOp (8-bit elements, 16 per row) instead of LdMatrix8x8x16bOp.
// unpack_bits: 0, or 4 for LdMatrix8x16x8bOp's ldmatrix .m8n16 .b8x16.b4x16_p64 (sm_100a and
// newer): a row's 16 packed 4-bit values (8 bytes, then 8 of padding) widened to a byte each,
// the value in its low 4 bits; the same thread-value layout as the 8-bit load.
CopyAtom make_ldmatrix_atom(ir::Type value_type, int num_matrices, bool transpose, bool eight_bit, int unpack_bits = 0);
// ldmatrix .m16n16 .trans .b8 (sm_100, LdMatrix16x16x8bOp): 1 or 2 16x16 matrices of 8-bit elements.
CopyAtom make_ldmatrix16x16_atom(ir::Type value_type, int num_matrices, bool transpose);
CopyAtom make_stmatrix_atom(ir::Type value_type, int num_matrices, bool transpose);

// cute.copy with an SM80 atom (algorithm/copy.h gives the shapes).
void copy_sm80(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::optional<Tensor>& pred);

// cute.arch.cp_async_commit_group / cp_async_wait_group.
void cp_async_commit_group();
void cp_async_wait_group(int64_t n);

}  // namespace opencute::cute
