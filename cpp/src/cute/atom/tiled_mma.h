// TiledMma / ThrMma (CuTe C++'s TiledMMA and ThrMMA of mma_atom.hpp): an MMA atom replicated
// over a rank-3 (M, N, K) layout of atoms, with per-mode permutations of the M/N/K tile, and
// the partitioning of A (M x K), B (N x K) and C (M x N) tensors among its threads. Also the
// tiled copies whose thread-value layouts are the MMA's (make_tiled_copy_A/B/C).
#pragma once
#include <optional>
#include <vector>

#include "cute/atom/mma_atom.h"
#include "cute/atom/tiled_copy.h"

namespace opencute::cute {

enum class MmaOperand : uint8_t { A, B, C };

struct TiledMma {
  MmaAtom atom;
  layout::Layout atom_layout_mnk;              // rank 3
  layout::Layout thr_layout_vmnk;              // tiled_product(atom.thr_id, atom_layout_mnk)
  std::vector<std::optional<layout::Layout>> permutation_mnk;  // 3 entries; nullopt = `_`

  // The permutation of mode i (0: M, 1: N, 2: K): the given layout, or for `_` the compact
  // layout of size atom shape[i] * thread layout size[i].
  layout::Layout permutation(int i) const;
  int64_t tile_size(int i) const;
  layout::Int size() const { return layout::size(thr_layout_vmnk); }

  // (M,K...) -> ((ThrV,(ThrM,ThrK)),(FrgV,(RestM,RestK,...))) for A and likewise for B (N,K)
  // and C (M,N): CuTe's thrfrg_A/B/C.
  layout::Layout thrfrg(MmaOperand which, const layout::Layout& l) const;
  // (thread index, value) -> column-major index in the (tile M, tile K) / (N, K) / (M, N) tile.
  layout::Layout layout_tv(MmaOperand which) const;
};

// make_tiled_mma(atom, atom_layout_mnk, permutation_mnk): the atom layout is padded to rank 3
// with 1:0 modes (rank > 3 raises), permutations to 3 entries with `_`.
TiledMma make_tiled_mma(const MmaAtom& atom, const layout::Layout& atom_layout,
                        const std::vector<std::optional<layout::Layout>>& permutation);

// The per-thread view (FrgV, Rest_0, Rest_1, extra modes...) of `t` for thread `thr_index`
// (CuTe's ThrMMA::partition_A/B/C; the thread's (V,M,N,K) coordinate is the one
// thr_layout_vmnk maps to thr_index, as get_slice's get_flat_coord finds it).
Tensor partition(const TiledMma& mma, MmaOperand which, const Tensor& t, const layout::Int& thr_index);
// The shape partition() gives for a tensor of `shape` (CuTe's partition_shape_A/B/C).
layout::IntTuple partition_shape(const TiledMma& mma, MmaOperand which, const layout::IntTuple& shape);
// A register fragment of the atom's value type shaped like the partitioned `t` (make_fragment_like).
// Errors: rank < 3 or a value mode that differs from the atom's values per thread.
Tensor make_fragment(const TiledMma& mma, MmaOperand which, const Tensor& partitioned);
Tensor make_fragment(const TiledMma& mma, MmaOperand which, const layout::IntTuple& shape);

// Tiled copies that partition like the MMA's A, B or C operand (CuTe's make_tiled_copy_A/B/C).
TiledCopy make_tiled_copy_mma(const CopyAtom& atom, const TiledMma& mma, MmaOperand which);

// The smallest tiled copy that retiles the C fragment for sub-tiled epilogues (CuTe's
// make_tiled_copy_C_atom): the C layout truncated to the copy atom's values per thread, over the
// sub-tile those values cover. Errors: the atom moves more values than a thread holds
// (ValueError); a sub-tile that is not a contiguous block of the MMA tile (not supported yet:
// TiledCopy's tiler is a shape).
TiledCopy make_tiled_copy_c_atom(const CopyAtom& atom, const TiledMma& mma);

std::string to_string(const TiledMma& t);

}  // namespace opencute::cute
