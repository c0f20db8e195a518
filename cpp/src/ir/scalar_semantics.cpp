#include "ir/scalar_semantics.h"
#include "ir/directed_rounding.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "support/e8m0.h"
#include "support/fp4.h"
#include "support/fp6.h"
#include "support/fp8.h"
#include "support/half.h"

namespace opencute::ir {

using support::bf16_bits_to_float;
using support::float_to_bf16_bits;
using support::float_to_half_bits;
using support::half_bits_to_float;

int64_t wrap_int(Type t, int64_t v) {
  int w = t->width;
  if (w >= 64) return v;
  if (w == 1) return v & 1;
  uint64_t mask = (uint64_t(1) << w) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (t->is_signed && (u >> (w - 1)) & 1) u |= ~mask;
  return int64_t(u);
}

double round_float(Type t, double v) {
  switch (t->float_kind) {
    case FloatKind::F64: return v;
    case FloatKind::F32: case FloatKind::TF32: return double(float(v));
    case FloatKind::F16: return double(half_bits_to_float(float_to_half_bits(float(v))));
    case FloatKind::BF16: return double(bf16_bits_to_float(float_to_bf16_bits(float(v))));
    case FloatKind::E4M3:
    case FloatKind::E5M2: {
      const support::Fp8Format& f = t->float_kind == FloatKind::E4M3 ? support::e4m3_format() : support::e5m2_format();
      return double(support::fp8_bits_to_float(support::float_to_fp8_bits(float(v), f), f));
    }
    case FloatKind::E2M1: return double(support::e2m1_bits_to_float(support::float_to_e2m1_bits(float(v))));
    case FloatKind::E8M0: return double(support::e8m0_bits_to_float(support::float_to_e8m0_bits(float(v))));
    case FloatKind::E2M3:
    case FloatKind::E3M2: {
      const support::Fp6Format& f = t->float_kind == FloatKind::E2M3 ? support::e2m3_format() : support::e3m2_format();
      return double(support::fp6_bits_to_float(support::float_to_fp6_bits(float(v), f), f));
    }
  }
  return v;
}

void store_scalar(Type t, Scalar s, void* dst) {
  if (t->is_float()) {
    switch (t->float_kind) {
      case FloatKind::F64: std::memcpy(dst, &s.f, 8); return;
      case FloatKind::F32: case FloatKind::TF32: { float f = float(s.f); std::memcpy(dst, &f, 4); return; }
      case FloatKind::F16: { uint16_t h = float_to_half_bits(float(s.f)); std::memcpy(dst, &h, 2); return; }
      case FloatKind::BF16: { uint16_t h = float_to_bf16_bits(float(s.f)); std::memcpy(dst, &h, 2); return; }
      case FloatKind::E4M3:
        *static_cast<uint8_t*>(dst) = support::float_to_fp8_bits(float(s.f), support::e4m3_format());
        return;
      case FloatKind::E5M2:
        *static_cast<uint8_t*>(dst) = support::float_to_fp8_bits(float(s.f), support::e5m2_format());
        return;
      case FloatKind::E8M0: *static_cast<uint8_t*>(dst) = support::float_to_e8m0_bits(float(s.f)); return;
      case FloatKind::E2M1: case FloatKind::E2M3: case FloatKind::E3M2: break;  // packed: see store_packed_scalar
    }
  }
  int64_t v = s.i;
  std::memcpy(dst, &v, size_t(t->byte_size()));  // little endian: low bytes first
}

Scalar load_scalar(Type t, const void* src) {
  if (t->is_float()) {
    switch (t->float_kind) {
      case FloatKind::F64: { double d; std::memcpy(&d, src, 8); return Scalar::of_float(d); }
      case FloatKind::F32: case FloatKind::TF32: { float f; std::memcpy(&f, src, 4); return Scalar::of_float(f); }
      case FloatKind::F16: { uint16_t h; std::memcpy(&h, src, 2); return Scalar::of_float(half_bits_to_float(h)); }
      case FloatKind::BF16: { uint16_t h; std::memcpy(&h, src, 2); return Scalar::of_float(bf16_bits_to_float(h)); }
      case FloatKind::E4M3:
        return Scalar::of_float(support::fp8_bits_to_float(*static_cast<const uint8_t*>(src), support::e4m3_format()));
      case FloatKind::E5M2:
        return Scalar::of_float(support::fp8_bits_to_float(*static_cast<const uint8_t*>(src), support::e5m2_format()));
      case FloatKind::E8M0: return Scalar::of_float(support::e8m0_bits_to_float(*static_cast<const uint8_t*>(src)));
      case FloatKind::E2M1: case FloatKind::E2M3: case FloatKind::E3M2: break;  // packed: see load_packed_scalar
    }
  }
  int64_t v = 0;
  std::memcpy(&v, src, size_t(t->byte_size()));
  if (t->is_bool()) v = v != 0;
  return Scalar::of_int(wrap_int(t, v));
}

namespace {

uint32_t packed_bits(Type t, Scalar s) {
  if (t->is_fp4()) return support::float_to_e2m1_bits(float(s.f));
  if (t->is_int()) return uint32_t(s.i) & ((1u << t->width) - 1u);
  throw std::domain_error("no packed storage for " + to_string(t));
}

}  // namespace

void store_packed_scalar(Type t, Scalar s, void* base, int64_t index) {
  const int w = t->width;  // 4 (a power of two below 8, so no element straddles bytes)
  const int64_t bit = index * w;
  uint8_t* byte = static_cast<uint8_t*>(base) + (bit >> 3);
  const int shift = int(bit & 7);
  const uint8_t mask = uint8_t(((1u << w) - 1u) << shift);
  *byte = uint8_t((*byte & ~mask) | ((packed_bits(t, s) << shift) & mask));
}

Scalar load_packed_scalar(Type t, const void* base, int64_t index) {
  const int w = t->width;
  const int64_t bit = index * w;
  const uint32_t v = (static_cast<const uint8_t*>(base)[bit >> 3] >> (bit & 7)) & ((1u << w) - 1u);
  if (t->is_fp4()) return Scalar::of_float(support::e2m1_bits_to_float(uint8_t(v)));
  if (t->is_int()) return Scalar::of_int(wrap_int(t, int64_t(v)));
  throw std::domain_error("no packed storage for " + to_string(t));
}

namespace {

int64_t ipow(int64_t base, int64_t exp) {
  uint64_t result = 1, b = uint64_t(base);
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  while (exp) {
    if (exp & 1) result *= b;
    b *= b;
    exp >>= 1;
  }
  return int64_t(result);
}

}  // namespace

bool eval_binary(OpCode code, Type t, Scalar a, Scalar b, Scalar* out, std::string* error) {
  if (t->is_float()) {
    double x = a.f, y = b.f, r = 0;
    switch (code) {
      case OpCode::Add: r = x + y; break;
      case OpCode::Sub: r = x - y; break;
      case OpCode::Mul: r = x * y; break;
      case OpCode::Div: r = x / y; break;
      case OpCode::FloorDiv: r = std::floor(x / y); break;
      case OpCode::Rem: r = std::fmod(x, y); break;
      case OpCode::Min: r = std::fmin(x, y); break;
      case OpCode::Max: r = std::fmax(x, y); break;
      case OpCode::Pow: r = std::pow(x, y); break;
      default:
        if (error) *error = std::string("operation '") + opcode_name(code) + "' is not defined on floats";
        return false;
    }
    *out = Scalar::of_float(round_float(t, r));
    return true;
  }
  const bool s = t->is_signed;
  const int w = t->width;
  uint64_t ux = uint64_t(a.i), uy = uint64_t(b.i);
  int64_t r = 0;
  switch (code) {
    case OpCode::Add: r = int64_t(ux + uy); break;
    case OpCode::Sub: r = int64_t(ux - uy); break;
    case OpCode::Mul: r = int64_t(ux * uy); break;
    case OpCode::Div:
    case OpCode::FloorDiv:
    case OpCode::Rem: {
      if (b.i == 0) {
        if (error) *error = "integer division by zero";
        return false;
      }
      if (s) {
        if (a.i == std::numeric_limits<int64_t>::min() && b.i == -1) {
          r = code == OpCode::Rem ? 0 : a.i;
          break;
        }
        int64_t q = a.i / b.i, m = a.i % b.i;
        if (code == OpCode::Rem) r = m;
        else if (code == OpCode::Div) r = q;
        else r = (m != 0 && ((m < 0) != (b.i < 0))) ? q - 1 : q;
      } else {
        uint64_t mask = w >= 64 ? ~uint64_t(0) : ((uint64_t(1) << w) - 1);
        uint64_t x = ux & mask, y = uy & mask;
        r = int64_t(code == OpCode::Rem ? x % y : x / y);
      }
      break;
    }
    case OpCode::Min: r = s ? std::min(a.i, b.i) : int64_t(std::min(ux, uy)); break;
    case OpCode::Max: r = s ? std::max(a.i, b.i) : int64_t(std::max(ux, uy)); break;
    case OpCode::Pow: r = ipow(a.i, b.i); break;
    case OpCode::And: r = a.i & b.i; break;
    case OpCode::Or: r = a.i | b.i; break;
    case OpCode::Xor: r = a.i ^ b.i; break;
    case OpCode::Shl: r = (b.i < 0 || b.i >= w) ? 0 : int64_t(ux << b.i); break;
    case OpCode::Shr:
      if (s) r = (b.i < 0 || b.i >= w) ? (a.i < 0 ? -1 : 0) : (a.i >> b.i);
      else {
        uint64_t mask = w >= 64 ? ~uint64_t(0) : ((uint64_t(1) << w) - 1);
        r = (b.i < 0 || b.i >= w) ? 0 : int64_t((ux & mask) >> b.i);
      }
      break;
    default:
      if (error) *error = std::string("operation '") + opcode_name(code) + "' is not defined on integers";
      return false;
  }
  *out = Scalar::of_int(wrap_int(t, r));
  return true;
}

Scalar eval_unary(OpCode code, Type t, Scalar a) {
  if (t->is_float()) {
    switch (code) {
      case OpCode::Neg: return Scalar::of_float(-a.f);
      case OpCode::Abs: return Scalar::of_float(std::fabs(a.f));
      default: return a;
    }
  }
  switch (code) {
    case OpCode::Neg: return Scalar::of_int(wrap_int(t, int64_t(0 - uint64_t(a.i))));
    case OpCode::Not: return Scalar::of_int(wrap_int(t, t->is_bool() ? !a.i : ~a.i));
    case OpCode::Abs: return Scalar::of_int(wrap_int(t, a.i < 0 ? int64_t(0 - uint64_t(a.i)) : a.i));
    default: return a;
  }
}

bool eval_cmp(CmpPredicate p, Type t, Scalar a, Scalar b) {
  if (t->is_float()) {
    double x = a.f, y = b.f;
    switch (p) {
      case CmpPredicate::Eq: return x == y;
      case CmpPredicate::Ne: return x != y;  // unordered: NaN != NaN
      case CmpPredicate::Lt: return x < y;
      case CmpPredicate::Le: return x <= y;
      case CmpPredicate::Gt: return x > y;
      case CmpPredicate::Ge: return x >= y;
    }
  }
  if (t->is_signed || t->is_pointer()) {
    switch (p) {
      case CmpPredicate::Eq: return a.i == b.i;
      case CmpPredicate::Ne: return a.i != b.i;
      case CmpPredicate::Lt: return a.i < b.i;
      case CmpPredicate::Le: return a.i <= b.i;
      case CmpPredicate::Gt: return a.i > b.i;
      case CmpPredicate::Ge: return a.i >= b.i;
    }
  }
  uint64_t x = uint64_t(a.i), y = uint64_t(b.i);
  if (t->width < 64) {
    uint64_t mask = (uint64_t(1) << t->width) - 1;
    x &= mask;
    y &= mask;
  }
  switch (p) {
    case CmpPredicate::Eq: return x == y;
    case CmpPredicate::Ne: return x != y;
    case CmpPredicate::Lt: return x < y;
    case CmpPredicate::Le: return x <= y;
    case CmpPredicate::Gt: return x > y;
    case CmpPredicate::Ge: return x >= y;
  }
  return false;
}

Scalar eval_cast(Type from, Type to, Scalar a) {
  if (from->is_int() && to->is_int()) {
    if (to->is_bool()) return Scalar::of_int(a.i != 0);
    return Scalar::of_int(wrap_int(to, a.i));
  }
  if (from->is_int() && to->is_float()) {
    double d = (from->is_signed || from->width == 1) ? double(a.i)
               : double(uint64_t(from->width >= 64 ? a.i : a.i & ((int64_t(1) << from->width) - 1)));
    return Scalar::of_float(round_float(to, d));
  }
  if (from->is_float() && to->is_int()) {
    if (to->is_bool()) return Scalar::of_int(a.f != 0.0);
    double d = std::trunc(a.f);
    if (std::isnan(d)) return Scalar::of_int(0);
    // Saturate like cvt.rzi: out-of-range values clamp to the type's range.
    if (to->is_signed) {
      double lo = -std::ldexp(1.0, to->width - 1), hi = std::ldexp(1.0, to->width - 1) - 1;
      if (d <= lo) return Scalar::of_int(wrap_int(to, to->width >= 64 ? std::numeric_limits<int64_t>::min() : int64_t(lo)));
      if (d >= hi) return Scalar::of_int(to->width >= 64 ? std::numeric_limits<int64_t>::max() : int64_t(hi));
      return Scalar::of_int(int64_t(d));
    }
    double hi = std::ldexp(1.0, to->width) - 1;
    if (d <= 0) return Scalar::of_int(0);
    if (d >= hi) return Scalar::of_int(wrap_int(to, to->width >= 64 ? -1 : int64_t(hi)));
    return Scalar::of_int(wrap_int(to, int64_t(uint64_t(d))));
  }
  if (from->is_float() && to->is_float()) return Scalar::of_float(round_float(to, a.f));
  return a;
}

Scalar eval_bitcast(Type from, Type to, Scalar a) {
  unsigned char bytes[8] = {0};
  if (from->is_sub_byte() || to->is_sub_byte()) {  // equal widths: through the packed encoding
    store_packed_scalar(from, a, bytes, 0);
    return load_packed_scalar(to, bytes, 0);
  }
  store_scalar(from, a, bytes);
  return load_scalar(to, bytes);
}

bool fast_math_base(const std::string& fn, std::string* base) {
  static const char kSuffix[] = "_fast";
  const size_t n = sizeof(kSuffix) - 1;
  if (fn.size() <= n || fn.compare(fn.size() - n, n, kSuffix) != 0) return false;
  std::string b = fn.substr(0, fn.size() - n);
  for (const char* f : {"exp", "log", "log2", "log10", "sin", "cos", "tan"}) {
    if (b == f) {
      if (base) *base = b;
      return true;
    }
  }
  return false;
}

namespace {
// f32 subnormals become zero of the same sign (PTX .ftz).
double flush_subnormal(double v) {
  double f = double(float(v));
  return (f != 0.0 && std::fabs(f) < double(std::numeric_limits<float>::min())) ? std::copysign(0.0, f) : f;
}
}  // namespace

namespace {
// The functions of a MathFunction id, in this order (exp = 0), with their operand counts.
struct MathName {
  const char* name;
  int arity;
};
const MathName kMathFunctions[] = {
    {"exp", 1},   {"exp2", 1},  {"log", 1},   {"log2", 1},  {"log10", 1}, {"sqrt", 1},     {"rsqrt", 1},
    {"sin", 1},   {"cos", 1},   {"tan", 1},   {"asin", 1},  {"acos", 1},  {"atan", 1},     {"sinh", 1},
    {"cosh", 1},  {"tanh", 1},  {"erf", 1},   {"floor", 1}, {"ceil", 1},  {"round", 1},    {"trunc", 1},
    {"fabs", 1},  {"atan2", 2}, {"pow", 2},   {"fmod", 2},  {"copysign", 2}, {"log1p", 1}, {"expm1", 1},
    // PTX fast paths (cute.arch.rcp_approx / exp2): rcp.approx.ftz.f32, ex2.approx.ftz.f32. The
    // emulator computes them exactly in f32 with subnormal inputs and results flushed to zero;
    // the hardware is within 1-2 ulp of that.
    {"rcp_approx", 1}, {"exp2_approx", 1},
};
}  // namespace

bool resolve_math_function(const std::string& fn_name, MathFunction* out) {
  MathFunction f;
  if (parse_directed_rounding(fn_name, &f.rounded)) {
    f.directed = true;
    *out = f;
    return true;
  }
  // A fastmath variant is modelled by the exact function: the GPU's approximate instructions
  // (lg2.approx, ex2.approx, sin.approx) stay within a few ulp of it.
  std::string fn = fn_name;
  fast_math_base(fn_name, &fn);
  for (int k = 0; k < int(sizeof(kMathFunctions) / sizeof(kMathFunctions[0])); ++k)
    if (fn == kMathFunctions[k].name) {
      f.id = k;
      *out = f;
      return true;
    }
  return false;
}

bool is_known_math_function(const std::string& fn, int* arity) {
  MathFunction f;
  if (!resolve_math_function(fn, &f)) return false;
  if (arity) *arity = f.directed ? f.rounded.arity() : kMathFunctions[f.id].arity;
  return true;
}

Scalar eval_math(const MathFunction& f, Type t, const Scalar* args, size_t nargs) {
  if (f.directed) {
    float c = nargs > 2 ? float(args[2].f) : 0.0f;
    return Scalar::of_float(eval_directed_rounding(f.rounded, float(args[0].f), float(args[1].f), c));
  }
  double x = nargs ? args[0].f : 0.0;
  double y = nargs > 1 ? args[1].f : 0.0;
  double r = 0;
  switch (f.id) {
    case 0: r = std::exp(x); break;
    case 1: r = std::exp2(x); break;
    case 2: r = std::log(x); break;
    case 3: r = std::log2(x); break;
    case 4: r = std::log10(x); break;
    case 5: r = std::sqrt(x); break;
    case 6: r = 1.0 / std::sqrt(x); break;
    case 7: r = std::sin(x); break;
    case 8: r = std::cos(x); break;
    case 9: r = std::tan(x); break;
    case 10: r = std::asin(x); break;
    case 11: r = std::acos(x); break;
    case 12: r = std::atan(x); break;
    case 13: r = std::sinh(x); break;
    case 14: r = std::cosh(x); break;
    case 15: r = std::tanh(x); break;
    case 16: r = std::erf(x); break;
    case 17: r = std::floor(x); break;
    case 18: r = std::ceil(x); break;
    case 19: r = std::nearbyint(x); break;
    case 20: r = std::trunc(x); break;
    case 21: r = std::fabs(x); break;
    case 22: r = std::atan2(x, y); break;
    case 23: r = std::pow(x, y); break;
    case 24: r = std::fmod(x, y); break;
    case 25: r = std::copysign(x, y); break;
    case 26: r = std::log1p(x); break;
    case 27: r = std::expm1(x); break;
    case 28: r = flush_subnormal(1.0 / double(float(flush_subnormal(x)))); break;
    case 29: r = flush_subnormal(std::exp2(double(float(flush_subnormal(x))))); break;
  }
  return Scalar::of_float(round_float(t, r));
}

bool eval_math(const std::string& fn_name, Type t, const std::vector<Scalar>& args, Scalar* out) {
  MathFunction f;
  if (!resolve_math_function(fn_name, &f)) return false;
  if (f.directed && int(args.size()) != f.rounded.arity()) return false;
  *out = eval_math(f, t, args.data(), args.size());
  return true;
}

}  // namespace opencute::ir
