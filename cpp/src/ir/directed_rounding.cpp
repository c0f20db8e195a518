#include "ir/directed_rounding.h"

#include <cfloat>
#include <cmath>
#include <limits>

namespace opencute::ir {

std::string DirectedRounding::ptx_instruction() const {
  std::string s = arith == Arith::Add ? "add" : arith == Arith::Mul ? "mul" : "fma";
  s += mode == Mode::TowardZero ? ".rz" : mode == Mode::Down ? ".rm" : ".rp";
  if (ftz) s += ".ftz";
  return s + ".f32";
}

bool parse_directed_rounding(const std::string& fn, DirectedRounding* out) {
  DirectedRounding r;
  std::string rest;
  if (fn.rfind("add_", 0) == 0) r.arith = DirectedRounding::Arith::Add, rest = fn.substr(4);
  else if (fn.rfind("mul_", 0) == 0) r.arith = DirectedRounding::Arith::Mul, rest = fn.substr(4);
  else if (fn.rfind("fma_", 0) == 0) r.arith = DirectedRounding::Arith::Fma, rest = fn.substr(4);
  else return false;
  if (rest.size() > 4 && rest.compare(rest.size() - 4, 4, "_ftz") == 0) r.ftz = true, rest.resize(rest.size() - 4);
  if (rest == "rz") r.mode = DirectedRounding::Mode::TowardZero;
  else if (rest == "rm") r.mode = DirectedRounding::Mode::Down;
  else if (rest == "rp") r.mode = DirectedRounding::Mode::Up;
  else return false;
  if (out) *out = r;
  return true;
}

namespace {

float flush(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }

// s + e == a + b exactly (Knuth's TwoSum; s is a + b rounded to nearest).
void two_sum(double a, double b, double* s, double* e) {
  *s = a + b;
  double bv = *s - a, av = *s - bv;
  *e = (a - av) + (b - bv);
}

// hi + lo (exact, |lo| tiny beside hi's float neighbours) rounded to f32 in the direction `mode`.
float round_to_f32(double hi, double lo, DirectedRounding::Mode mode) {
  using Mode = DirectedRounding::Mode;
  if (!std::isfinite(hi)) return float(hi);
  const float inf = std::numeric_limits<float>::infinity();
  float f = float(hi);  // nearest; the exact value lies between f and one of its neighbours
  if (std::isinf(f)) {  // past the largest float: the direction decides between it and infinity
    bool away = mode == Mode::Up ? hi > 0 : mode == Mode::Down ? hi < 0 : false;
    return away ? f : std::copysign(FLT_MAX, f);
  }
  // The sign of (exact - f): hi - f is exact (f is hi's nearest float), and rounding the sum to
  // nearest keeps a nonzero sign.
  double below = (hi - double(f)) + lo;
  if (below == 0) return f;
  switch (mode) {
    case Mode::TowardZero:
      if (f == 0) return std::copysign(0.0f, float(below));
      return (below > 0) != (f > 0) ? std::nextafter(f, 0.0f) : f;
    case Mode::Down: return below < 0 ? std::nextafter(f, -inf) : f;
    case Mode::Up: return below > 0 ? std::nextafter(f, inf) : f;
  }
  return f;
}

}  // namespace

float eval_directed_rounding(const DirectedRounding& r, float a, float b, float c) {
  using Arith = DirectedRounding::Arith;
  if (r.ftz) a = flush(a), b = flush(b), c = flush(c);
  double hi, lo = 0;
  double x = a, y = b;
  if (r.arith == Arith::Mul) {
    hi = x * y;  // 24 x 24 bits: exact in a double
  } else {
    double p = r.arith == Arith::Fma ? x * y : x;  // exact
    double q = r.arith == Arith::Fma ? double(c) : y;
    two_sum(p, q, &hi, &lo);
    // An exact zero sum of two addends of opposite signs is -0 when rounding down (IEEE 754),
    // +0 otherwise; two zeros of one sign keep it (the nearest sum already has it).
    if (hi == 0 && lo == 0 && r.mode == DirectedRounding::Mode::Down && !(std::signbit(p) && std::signbit(q)))
      hi = (p == 0 && q == 0 && !std::signbit(p) && !std::signbit(q)) ? 0.0 : -0.0;
    if (!std::isfinite(hi) || std::isnan(lo)) lo = 0;
  }
  float out = round_to_f32(hi, lo, r.mode);
  return r.ftz ? flush(out) : out;
}

}  // namespace opencute::ir
