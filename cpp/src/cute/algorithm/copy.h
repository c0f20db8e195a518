// cute.copy (CuTe's algorithm/copy.hpp): src/dst are (V, Rest...) partitions; each atom call
// moves num_values consecutive elements of mode V. The one place that maps an atom's op to its
// family's implementation: the universal copy (here), cp.async / ldmatrix / stmatrix
// (atom/copy_sm80), TMA (atom/copy_sm90).
#pragma once
#include <optional>

#include "cute/atom/copy_atom.h"

namespace opencute::cute {

// `operands.pred`, when given, holds one Boolean per atom call (congruent with
// (V / num_values, Rest...)); false calls leave dst untouched (cp.async: zero-fill dst, as
// CuTe's SM80_CP_ASYNC_*_ZFILL). The TMA operands are ignored by the other atoms.
void copy(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const CopyOperands& operands);
inline void copy(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::optional<Tensor>& pred) {
  CopyOperands operands;
  operands.pred = pred;
  copy(atom, src, dst, operands);
}

}  // namespace opencute::cute
