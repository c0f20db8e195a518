// The element codes of a Wgmma op's ints[3] / ints[4] (A and B types): a FloatKind for the
// floating-point MMAs, or S8 / U8 for the integer one (s32 accumulators).
#pragma once

#include <cstdint>

#include "ir/types.h"

namespace opencute::ir {

constexpr int64_t kWgmmaElementS8 = 16, kWgmmaElementU8 = 17;

inline int64_t wgmma_element_code(Type t) {
  if (t->is_float()) return int64_t(t->float_kind);
  return t->is_signed ? kWgmmaElementS8 : kWgmmaElementU8;
}

inline Type wgmma_element_type(int64_t code) {
  if (code == kWgmmaElementS8) return int_type(8, true);
  if (code == kWgmmaElementU8) return int_type(8, false);
  return float_type(FloatKind(code));
}

}  // namespace opencute::ir
