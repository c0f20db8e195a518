// Tensor-memory copy atoms of SM100 (CuTe C++'s copy_traits_sm100.hpp): tcgen05.ld / tcgen05.st,
// issued by a whole warp, moving between the 32 (or 16) tensor-memory lanes of the warp's
// subpartition and the lanes' registers. As CuTe's Copy_Traits, each atom is a table in bits:
//   ValID      logical bit -> tensor-memory bit: (32 W R, D) : (1, DP_b) (D lanes of W 32-bit units
//              per repetition; with Pack.PACK_16b_IN_32b each 16-bit value sits in the low half of
//              its own column: ((16, 2 W R), D) : ((1, 32), DP_b)); DP_b = 1 << 21
//   SrcLayout  (32, 32 W R D) : (0, 1) for loads (every lane names the whole region, through the
//              warp's address), the register layout below for stores
//   DstLayout  (thread, register bit) -> logical bit, the PTX ISA's fragments:
//     32x32b   (32, 32R) : (32R, 1)
//     16x64b   ((2,2,8), (32,R)) : ((512R, 32, 64R), (1, 64))
//     16x128b  ((4,8), (32,2,R)) : ((32, 128R), (1, 1024R, 128))
//     16x256b  ((4,8), (64,2,R)) : ((64, 256R), (1, 2048R, 256))
//     16x32bx2 ((16,2), 32R) : ((64R, 32R), 1)   (the second half R columns on: immHalfSplitoff = R)
// make_tmem_copy spreads an atom over the four warps of a warpgroup, each on its own 32 lanes
// (CuTe's make_tmem_copy / make_cotiled_copy).
#pragma once
#include <string>

#include "cute/atom/tiled_copy.h"

namespace opencute::cute {

// tcgen05.Ld32x32bOp(Repetition.xR, Pack) and the other shapes: `shape` an ir::Tcgen05Shape,
// `store` for the St ops. Errors: repetitions the shape does not have, a value type of another
// width (32 bits, or 16 with packing).
CopyAtom make_tmem_copy_atom(int shape, int repetitions, bool pack, bool store, ir::Type value_type);
// tcgen05.make_tmem_copy(atom, tmem_tensor).
TiledCopy make_tmem_copy(const CopyAtom& atom, const Tensor& tmem);
// cute.copy with a tensor-memory atom: per atom call one Tcgen05Ld / Tcgen05St.
// The tensor-memory operand is the atom's whole region per call (partition_S of a load,
// partition_D of a store), or a thread's share of it: a tensor-memory tensor partitioned with the
// register side (partition_D of a load), naming only the cells the thread's registers hold.
// CuTe C++ rejects the share (copy_unpack asserts the ValID region); NVIDIA's mixed-input FMHA
// (head dim 512) copies through one, so it is accepted when its cells are the registers' and the
// warp's instruction takes lane 0's address (the region's first cell).
// `file` / `line`: the user's call, recorded on the ops (the emulator names it).
void copy_sm100(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::string& file = "", int line = 0);
// find_tmem_tensor_col_offset: the columns a tensor-memory tensor spans (cosize in 32-bit
// columns, the column bits of the address).
int64_t tmem_tensor_columns(const Tensor& t);
bool is_tmem_copy(const CopyAtom& atom);
// tcgen05.get_tmem_copy_properties(atom) of a Ld / St atom: the lanes (data paths) of the shape
// (32 or 16), its bits per lane per repetition (32, 64, 128, 256; 32 for 16x32bx2), the
// repetitions and whether 16-bit values are packed two to a register. Errors: another atom.
struct TmemCopyProperties {
  int data_paths, bits, repetitions;
  bool packed;
};
TmemCopyProperties tmem_copy_properties(const CopyAtom& atom);

// tcgen05.cp (shared -> tensor memory), CuTe's SM100_UTCCP_4x32dp128bit_1cta: tcgen05.Cp4x32x128bOp.
// One thread issues it; 32 rows of 128 bits, read through a K-major shared-memory descriptor
// without swizzle (rows 16 bytes apart in 8-row core matrices, SBO between them), land in lanes
// 0-31 of 4 columns and are broadcast to the other three 32-lane subpartitions. CuTe's table
// (bits) without its broadcast mode (the tensor-memory tensors name lanes 0-31; the copies are
// the instruction's): ValID (32, 128) : (DP, 1), SrcLayout (1, (32, 128)) : (0, (1, 32)),
// DstLayout (1, 4096) : (0, 1). Only this shape and CTA group 1 so far.
CopyAtom make_s2t_copy_atom(int shape, int cta_group, ir::Type value_type);
// tcgen05.make_s2t_copy(atom, tmem_tensor): the atom co-tiled over the tensor-memory tensor
// (CuTe's make_utccp_copy).
TiledCopy make_s2t_copy(const CopyAtom& atom, const Tensor& tmem);
// tcgen05.get_s2t_smem_desc_tensor(tiled_copy, smem_partition): the source partition
// ((ATOM_V, REST_V), ...) with each atom's 32 x 128-bit core-matrix block as one descriptor
// value ((1, REST_V), ...); its block layout is kept to build the descriptor at the copy.
Tensor s2t_smem_desc_tensor(const TiledCopy& tc, const Tensor& smem_partition);
// cute.copy with a tcgen05.cp atom: one Tcgen05Cp per atom call.
void copy_s2t(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::string& file = "", int line = 0);

}  // namespace opencute::cute
