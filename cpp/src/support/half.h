// IEEE binary16 and bfloat16 conversions with round-to-nearest-even, as the GPU's cvt.rn does.
#pragma once
#include <cstdint>
#include <cstring>
#include <cmath>

namespace opencute::support {

inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return uint16_t(sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to infinity
  if (mag < 0x38800000u) {                                   // subnormal half or zero
    float a = bits_float(mag);
    // 2^-24 is the smallest half subnormal; nearbyint applies round-half-even.
    uint32_t q = uint32_t(std::nearbyint(a * 16777216.0f));
    return uint16_t(sign | q);
  }
  uint32_t exp = ((mag >> 23) - 112) << 10;
  uint32_t mant = (mag >> 13) & 0x3ffu;
  uint32_t rest = mag & 0x1fffu;
  uint32_t h = exp | mant;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h += 1;
  return uint16_t(sign | h);
}

inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = float(mant) / 16777216.0f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return uint16_t(x >> 16);
}

inline float bf16_bits_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

}  // namespace opencute::support
