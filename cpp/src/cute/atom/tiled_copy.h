// Tiled copies (CuTe's TiledCopy and ThrCopy, copy_atom.hpp): a copy atom replicated over
// threads and values, the partitioning of source and destination tensors among the threads,
// retiling, and make_tiled_copy_S / _D.
#pragma once
#include <string>
#include <vector>

#include "cute/atom/copy_atom.h"

namespace opencute::cute {

// An atom replicated over threads and values: layout_tv maps (thread, value) to the
// column-major index of a tile of shape tiler_mn.
struct TiledCopy {
  CopyAtom atom;
  layout::Layout layout_tv;
  layout::IntTuple tiler_mn;
  // CuTe's layout tiler (Tiler_MN of layouts, one per mode, sizes tiler_mn), when the tile's
  // elements are not a leading block of each mode (make_tmem_copy with 16-lane atoms); empty: the
  // tiler is the shape tiler_mn.
  std::vector<layout::Layout> tiler_layouts;

  layout::Int size() const { return layout::size(layout_tv, {0}); }
};

TiledCopy make_tiled_copy(const CopyAtom& atom, const layout::Layout& layout_tv, const layout::IntTuple& tiler_mn);
// With the tile given as one layout per mode (CuTe's Tiler_MN of layouts: another copy's
// tiler_mn_layouts); a mode whose layout is compact column-major is its shape.
TiledCopy make_tiled_copy(const CopyAtom& atom, const layout::Layout& layout_tv, const std::vector<layout::Layout>& tiler);
// The tile as CuTe's Tiler_MN of layouts, one per mode (the DSL's TiledCopy.tiler_mn): a mode
// of shape s is the compact layout of s (128 -> 128:1); a layout tiler's own layouts.
std::vector<layout::Layout> tiler_mn_layouts(const TiledCopy& tc);
TiledCopy make_tiled_copy_tv(const CopyAtom& atom, const layout::Layout& thr_layout, const layout::Layout& val_layout);
// CuTe's make_cotiled_copy: the atom laid over the data as `atom_tv` ((thread, value) -> data
// address) says, the tile being what it reaches of `data_layout` (data coordinate -> address),
// mode by mode. Both static.
TiledCopy make_cotiled_copy(const CopyAtom& atom, const layout::Layout& atom_tv, const layout::Layout& data_layout);

// The elements of `t` (a tile of at least tiler_mn) that thread `thr_index` copies:
// ((atom values, rest values), rest modes of t over the tiler...), as the atom's source
// (partition_S) or destination (partition_D) sees them.
Tensor partition(const TiledCopy& tc, const Tensor& t, const layout::Int& thr_index, bool source = true);
// A thread's tensor (e.g. a fragment partitioned by a tiled MMA or another tiled copy)
// re-expressed with this copy's value mode (CuTe's retile_S / retile_D).
Tensor retile(const TiledCopy& tc, const Tensor& t);
// (thread, value) -> coordinate of the tile, as the source / destination of the atom sees it.
layout::Layout tiled_layout_tv(const TiledCopy& tc, bool source);
// CuTe's make_tiled_copy_S / _D: `atom` arranged as `tc`'s source / destination.
TiledCopy make_tiled_copy_S(const CopyAtom& atom, const TiledCopy& tc);
TiledCopy make_tiled_copy_D(const CopyAtom& atom, const TiledCopy& tc);

std::string to_string(const TiledCopy& t);

}  // namespace opencute::cute
