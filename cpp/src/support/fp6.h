// The 6-bit floats of the OCP MX formats: FP6 E2M3 (CuTe DSL Float6E2M3FN: 1 sign, 2 exponent bits
// with bias 1, 3 mantissa bits; magnitudes up to 7.5) and FP6 E3M2 (Float6E3M2FN: 3 exponent bits
// with bias 3, 2 mantissa bits; up to 28). Neither has infinity or NaN. The code sits in the low
// six bits, the sign at bit 5.
// f32 -> fp6 rounds to nearest, ties to the even code, and saturates to the largest magnitude
// (as PTX cvt.rn.satfinite.e2m3x2 / e3m2x2.f32); NaN becomes the largest magnitude with NaN's sign.
#pragma once
#include <cmath>
#include <cstdint>

#include "support/half.h"

namespace opencute::support {

struct Fp6Format {
  int exponent_bits, mantissa_bits, bias;
};
inline const Fp6Format& e2m3_format() { static const Fp6Format f{2, 3, 1}; return f; }
inline const Fp6Format& e3m2_format() { static const Fp6Format f{3, 2, 3}; return f; }

inline float fp6_bits_to_float(uint8_t bits, const Fp6Format& f) {
  const int m = bits & ((1 << f.mantissa_bits) - 1);
  const int e = (bits >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  const float magnitude = e == 0 ? std::ldexp(float(m), 1 - f.bias - f.mantissa_bits)
                                 : std::ldexp(float((1 << f.mantissa_bits) + m), e - f.bias - f.mantissa_bits);
  return (bits & 0x20) ? -magnitude : magnitude;
}

inline uint8_t float_to_fp6_bits(float value, const Fp6Format& f) {
  const uint8_t sign = (float_bits(value) >> 31) ? 0x20 : 0;
  const float m = std::fabs(value);
  // The magnitudes grow with the code (0 .. 31): the nearest, ties to the even code; above the
  // largest (infinity and NaN too) saturate.
  uint8_t code = 31;
  if (!std::isnan(m)) {
    for (uint8_t c = 0; c < 31; ++c) {
      const float lo = fp6_bits_to_float(c, f), hi = fp6_bits_to_float(uint8_t(c + 1), f);
      const float mid = (lo + hi) / 2;  // exact: both have few significant bits
      if (m < mid || (m == mid && c % 2 == 0)) { code = c; break; }
    }
  }
  return uint8_t(sign | code);
}

}  // namespace opencute::support
