// Copy atoms, tiled copies and the copy algorithm (CuTe's Copy_Atom, TiledCopy, ThrCopy,
// copy / copy_if). The universal (SIMT load/store) copy lives here; the SM80 atoms (cp.async,
// ldmatrix, stmatrix) are tables in atom/copy_sm80.
#pragma once
#include <optional>
#include <string>

#include "cute/tensor.h"

namespace opencute::cute {

// One copy instruction: `num_bits` moved per thread per call, of `value_type` elements.
// As CuTe's Copy_Traits, an atom is its thread ids and three (thread, bit) -> bit layouts
// (source, destination, and the reference both are expressed against); the universal copy
// and cp.async have one thread and identity layouts, ldmatrix / stmatrix a warp.
struct CopyAtom {
  std::string op = "universal";  // universal | cp_async | ldmatrix | stmatrix
  ir::Type value_type = nullptr;
  int num_bits = 0;  // source bits per thread per call
  // cp_async: 0 cache at all levels (.ca), 1 cache global (.cg). ldmatrix / stmatrix: matrices
  // and .trans.
  int cache_mode = 0;
  int num_matrices = 0;
  bool transpose = false;
  std::string op_name;  // the operation as the user named it, for messages and printing
  layout::Layout thr_id_layout = layout::Layout(1, 0);
  layout::Layout src_bits, dst_bits, ref_bits;

  int value_bits() const;
  int num_values() const { return num_bits / value_bits(); }
  layout::Layout thr_id() const { return thr_id_layout; }
  // (thread, value) -> value of the atom, in elements of value_type.
  layout::Layout layout_src_tv() const;
  layout::Layout layout_dst_tv() const;
  layout::Layout layout_ref_tv() const;
  layout::Layout layout_tv() const { return layout_src_tv(); }
  int num_src_values() const;  // per thread per call
  int num_dst_values() const;
  int num_threads() const;     // threads that cooperate in one call
  int num_ref_values() const;
};

// num_bits 0 means one element per copy. Errors: num_bits not a multiple of the element's.
CopyAtom make_copy_atom(const std::string& op, ir::Type value_type, int num_bits);

// An atom replicated over threads and values: layout_tv maps (thread, value) to the
// column-major index of a tile of shape tiler_mn.
struct TiledCopy {
  CopyAtom atom;
  layout::Layout layout_tv;
  layout::IntTuple tiler_mn;

  layout::Int size() const { return layout::size(layout_tv, {0}); }
};

TiledCopy make_tiled_copy(const CopyAtom& atom, const layout::Layout& layout_tv, const layout::IntTuple& tiler_mn);
TiledCopy make_tiled_copy_tv(const CopyAtom& atom, const layout::Layout& thr_layout, const layout::Layout& val_layout);

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

// copy(atom, src, dst, pred): src/dst are (V, Rest...) partitions; each atom call moves
// num_values consecutive elements of mode V. `pred`, when given, holds one Boolean per atom
// call (congruent with (V / num_values, Rest...)); false calls leave dst untouched (cp.async:
// zero-fill dst, as CuTe's SM80_CP_ASYNC_*_ZFILL).
void copy(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::optional<Tensor>& pred);

std::string to_string(const CopyAtom& a);
std::string to_string(const TiledCopy& t);

}  // namespace opencute::cute
