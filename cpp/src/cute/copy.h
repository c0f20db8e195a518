// Copy atoms, tiled copies and the copy algorithm (CuTe's Copy_Atom, TiledCopy, ThrCopy,
// copy / copy_if), for the universal (SIMT load/store) copy.
#pragma once
#include <optional>
#include <string>

#include "cute/tensor.h"

namespace opencute::cute {

// One copy instruction: `num_bits` moved per thread per call, of `value_type` elements.
struct CopyAtom {
  std::string op = "universal";
  ir::Type value_type = nullptr;
  int num_bits = 0;

  int value_bits() const;
  int num_values() const { return num_bits / value_bits(); }
  layout::Layout thr_id() const { return layout::Layout(1, 0); }
  // (thread, value) -> element of the atom, for source and destination alike.
  layout::Layout layout_tv() const;
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
// ((atom values, rest values), rest modes of t over the tiler...).
Tensor partition(const TiledCopy& tc, const Tensor& t, const layout::Int& thr_index);
// A thread's tensor (e.g. a fragment) re-expressed with this copy's value mode.
Tensor retile(const TiledCopy& tc, const Tensor& t);

// copy(atom, src, dst, pred): src/dst are (V, Rest...) partitions; each atom call moves
// num_values consecutive elements of mode V. `pred`, when given, holds one Boolean per atom
// call (congruent with (V / num_values, Rest...)); false calls leave dst untouched.
void copy(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::optional<Tensor>& pred);

std::string to_string(const CopyAtom& a);
std::string to_string(const TiledCopy& t);

}  // namespace opencute::cute
