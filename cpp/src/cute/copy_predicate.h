// Which entry of a copy's predicate tensor guards each atom call.
//
// A predicate mirrors the partition it guards, (V, Rest...): its first mode holds one entry per
// atom call of the value mode, or a single entry that guards the whole value mode (a vector wider
// than one atom, as quack predicates its 256-bit fp32 copies made of two 128-bit atoms), and its
// other modes match the partition's rest. A flat predicate of one entry per call, value mode
// fastest, is accepted too.
#pragma once
#include <cstdint>
#include <string>

#include "cute/tensor.h"

namespace opencute::cute {

class CopyPredicate {
 public:
  // Throws layout::LayoutError("<context>: the predicate ... needs one entry per atom call (N)") when
  // `pred` fits neither form.
  CopyPredicate(const Tensor& pred, int64_t calls_per_rest, int64_t rest, const std::string& context);
  // The predicate of atom call `call` (of the value mode) at rest index `rest`.
  dsl::Num at(int64_t rest, int64_t call) const;

 private:
  Tensor pred_;
  int64_t calls_per_rest_;
  bool one_per_value_mode_ = false;
};

}  // namespace opencute::cute
