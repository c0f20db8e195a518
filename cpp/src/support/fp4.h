// FP4 E2M1 (OCP MX "FP4", CuTe DSL Float4E2M1FN): 1 sign, 2 exponent (bias 1), 1 mantissa bit;
// no infinity, no NaN; the magnitudes are 0, 0.5, 1, 1.5, 2, 3, 4, 6. Two values share a byte in
// memory, the first in the low nibble.
// f32 -> e2m1 rounds to nearest, ties to the even code, and saturates to +-6 (as PTX
// cvt.rn.satfinite.e2m1x2.f32 does); NaN, which the format lacks, becomes the largest magnitude
// with NaN's sign. The NVVM lowering emits these same comparisons on every target, so the GPU
// and the emulator agree bit for bit.
#pragma once
#include <cstdint>

#include "support/half.h"

namespace opencute::support {

inline uint8_t float_to_e2m1_bits(float value) {
  const uint32_t x = float_bits(value);
  const uint8_t sign = uint8_t((x >> 28) & 0x8u);
  const float m = bits_float(x & 0x7fffffffu);
  // The code counts the midpoints of neighbouring values that m lies above (at a midpoint,
  // above only where that rounds to the even code); 6 and above, infinities and NaN give 7.
  const uint8_t code = uint8_t(!(m <= 0.25f) + !(m < 0.75f) + !(m <= 1.25f) + !(m < 1.75f) + !(m <= 2.5f) +
                               !(m < 3.5f) + !(m <= 5.0f));
  return uint8_t(sign | code);
}

inline float e2m1_bits_to_float(uint8_t bits) {
  const uint32_t e = (bits >> 1) & 3u, m = bits & 1u;
  const uint32_t magnitude = e == 0 ? (m ? 0x3F000000u : 0u) : (((e - 1u + 127u) << 23) | (m << 22));
  return bits_float(magnitude | (uint32_t(bits & 0x8u) << 28));
}

}  // namespace opencute::support
