// FP8 conversions (E4M3FN and E5M2, the OCP 8-bit floats of sm_89+ tensor cores). f32 -> fp8
// rounds to nearest even and saturates to the largest finite value (PTX cvt.rn.satfinite);
// NaN becomes the canonical NaN 0x7F. The NVVM lowering emits the same integer algorithm, so
// the GPU and the emulator agree bit for bit.
#pragma once
#include <cstdint>

#include "support/half.h"

namespace opencute::support {

struct Fp8Format {
  int mantissa_bits;     // 3 (E4M3) or 2 (E5M2)
  int exponent_bias;     // 7 or 15
  uint32_t min_normal;   // f32 bits of the smallest normal fp8 value
  uint32_t max_finite;   // f32 bits of the largest finite fp8 value
  uint8_t max_code;      // its fp8 code
  float subnormal_scale; // 2^(bias - 1 + mantissa_bits): fp8 subnormal step -> 1
  bool has_inf;          // E5M2 has infinities (0x7C), E4M3FN does not
};

inline const Fp8Format& e4m3_format() {
  static const Fp8Format f{3, 7, 0x3C800000u, 0x43E00000u, 0x7E, 512.0f, false};
  return f;
}
inline const Fp8Format& e5m2_format() {
  static const Fp8Format f{2, 15, 0x38800000u, 0x47600000u, 0x7B, 65536.0f, true};
  return f;
}

inline uint8_t float_to_fp8_bits(float value, const Fp8Format& fmt) {
  const uint32_t x = float_bits(value);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return 0x7f;                       // NaN
  if (mag >= fmt.max_finite) return uint8_t(sign | fmt.max_code);  // saturate (infinities too)
  uint32_t code;
  if (mag >= fmt.min_normal) {
    const int shift = 23 - fmt.mantissa_bits;
    const uint32_t lsb = (mag >> shift) & 1u;
    const uint32_t rounded = (mag + ((1u << (shift - 1)) - 1u) + lsb) >> shift;
    code = rounded - (uint32_t(127 - fmt.exponent_bias) << fmt.mantissa_bits);
    if (code > fmt.max_code) code = fmt.max_code;
  } else {
    // Subnormal: the value in units of the smallest subnormal, rounded half to even by adding
    // and subtracting 2^23 in f32 (exact for values below 2^22).
    const float scaled = bits_float(mag) * fmt.subnormal_scale;
    const float r = (scaled + 8388608.0f) - 8388608.0f;
    code = uint32_t(r);
  }
  return uint8_t(sign | code);
}

inline float fp8_bits_to_float(uint8_t bits, const Fp8Format& fmt) {
  const uint32_t u = bits;
  const int m = fmt.mantissa_bits;
  const uint32_t e = (u >> m) & ((0x7fu >> m));
  const uint32_t mant = u & ((1u << m) - 1u);
  const uint32_t low = u & 0x7fu;
  if (fmt.has_inf) {
    if (e == (0x7fu >> m)) {
      if (mant) return bits_float(0x7fc00000u);
      return (u & 0x80u) ? -INFINITY : INFINITY;
    }
  } else if (low == 0x7fu) {
    return bits_float(0x7fc00000u);
  }
  const uint32_t mi = e ? (mant | (1u << m)) : mant;
  const int ee = e ? int(e) : 1;
  const float scale = bits_float(uint32_t(ee - fmt.exponent_bias - m + 127) << 23);
  const float v = float(mi) * scale;
  return (u & 0x80u) ? -v : v;
}

}  // namespace opencute::support
