// UE8M0 (OCP MX "E8M0", CuTe DSL Float8E8M0FNU): an unsigned power of two, 2^(bits - 127), with
// no sign, no mantissa, no zero and no infinity; 0xFF is NaN. It is the scale-factor format of the
// MX block-scaled MMAs (tcgen05.mma .kind::mxf8f6f4 / mxf4 / mxf4nvf4 with scale format UE8M0).
// f32 -> e8m0 rounds toward zero (PTX cvt.rz.satfinite.ue8m0x2.f32): the f32's exponent field, so
// that a power of two maps to itself; values at or below 2^-127 (zero and negatives included)
// give 0x00, infinities saturate to 0xFE, NaN gives 0xFF.
#pragma once
#include <cmath>
#include <cstdint>

#include "support/half.h"

namespace opencute::support {

inline uint8_t float_to_e8m0_bits(float value) {
  if (std::isnan(value)) return 0xFF;
  if (!(value > 0.f)) return 0x00;
  const uint32_t x = float_bits(value);
  const uint32_t e = (x >> 23) & 0xFFu;
  if (e == 0xFFu) return 0xFE;  // +inf: saturate
  return uint8_t(e);            // f32 subnormals (e = 0) lie below 2^-126: 2^-127 is the format's smallest
}

inline float e8m0_bits_to_float(uint8_t bits) {
  if (bits == 0xFF) return bits_float(0x7FC00000u);
  if (bits == 0) return bits_float(0x00400000u);  // 2^-127, an f32 subnormal
  return bits_float(uint32_t(bits) << 23);
}

}  // namespace opencute::support
