// Integer and floating-point arithmetic: add sub mul mad fma div rem min max abs neg, the
// approximate math functions (rcp sqrt rsqrt ex2 lg2 sin cos tanh), mul24 / mad24, copysign,
// testp, and the packed f16x2 / bf16x2 forms.
#include <algorithm>

#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

enum Op : int32_t { Add, Sub, Mul, Mad, Fma, Div, Rem, Min, Max, Abs, Neg, Rcp, Sqrt, Rsqrt, Ex2, Lg2, Sin, Cos, Tanh,
                    Copysign, Mul24, Mad24 };
enum Flag : uint32_t { Hi = 1, Wide = 2, Sat = 4, Ftz = 8, Relu = 16, Lo = 32, NaN = 64 };

float f32_op(int32_t op, float a, float b, float c, uint32_t flags) {
  float r = 0;
  switch (op) {
    case Add: r = a + b; break;
    case Sub: r = a - b; break;
    case Mul: r = a * b; break;
    case Mad: case Fma: r = std::fmaf(a, b, c); break;
    case Div: r = a / b; break;
    case Min: r = (std::isnan(a) && (flags & NaN)) || (std::isnan(b) && (flags & NaN)) ? NAN : std::fmin(a, b); break;
    case Max: r = (std::isnan(a) && (flags & NaN)) || (std::isnan(b) && (flags & NaN)) ? NAN : std::fmax(a, b); break;
    case Abs: r = std::fabs(a); break;
    case Neg: r = -a; break;
    case Rcp: r = 1.0f / a; break;
    case Sqrt: r = std::sqrt(a); break;
    case Rsqrt: r = float(1.0 / std::sqrt(double(a))); break;
    case Ex2: r = float(std::exp2(double(a))); break;
    case Lg2: r = float(std::log2(double(a))); break;
    case Sin: r = float(std::sin(double(a))); break;
    case Cos: r = float(std::cos(double(a))); break;
    case Tanh: r = float(std::tanh(double(a))); break;
    case Copysign: r = std::copysign(b, a); break;
    default: break;
  }
  if (flags & Sat) r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));
  if (flags & Relu) r = std::isnan(r) ? r : std::max(0.0f, r);
  return r;
}

double f64_op(int32_t op, double a, double b, double c) {
  switch (op) {
    case Add: return a + b;
    case Sub: return a - b;
    case Mul: return a * b;
    case Mad: case Fma: return std::fma(a, b, c);
    case Div: return a / b;
    case Min: return std::fmin(a, b);
    case Max: return std::fmax(a, b);
    case Abs: return std::fabs(a);
    case Neg: return -a;
    case Rcp: return 1.0 / a;
    case Sqrt: return std::sqrt(a);
    case Rsqrt: return 1.0 / std::sqrt(a);
    case Ex2: return std::exp2(a);
    case Lg2: return std::log2(a);
    case Sin: return std::sin(a);
    case Cos: return std::cos(a);
    case Tanh: return std::tanh(a);
    case Copysign: return std::copysign(b, a);
    default: return 0;
  }
}

uint16_t half_op(int32_t op, uint16_t a, uint16_t b, uint16_t c, PType t, uint32_t flags) {
  if (op == Neg) return uint16_t(a ^ 0x8000);
  if (op == Abs) return uint16_t(a & 0x7fff);
  const float x = half_value(a, t), y = half_value(b, t), z = half_value(c, t);
  float r;
  if (op == Mad || op == Fma) r = float(std::fma(double(x), double(y), double(z)));  // one rounding (to the half type)
  else r = f32_op(op, x, y, z, flags & ~(Sat | Relu));
  if (flags & Sat) r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));
  if (flags & Relu) r = std::isnan(r) ? r : std::max(0.0f, r);
  return half_round(r, t);
}

int64_t sat32(int64_t v) { return std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, v)); }

uint64_t int_op(const Inst& i, uint64_t ua, uint64_t ub, uint64_t uc) {
  const int bits = ptype_bits(i.type);
  const bool s = ptype_is_signed(i.type);
  const int64_t a = s ? sign_extend(ua, bits) : int64_t(low_bits(ua, bits));
  const int64_t b = s ? sign_extend(ub, bits) : int64_t(low_bits(ub, bits));
  const uint64_t ma = low_bits(ua, bits), mb = low_bits(ub, bits);
  const int out_bits = (i.flags & Wide) ? bits * 2 : bits;
  auto product = [&]() -> uint64_t {
    if (i.flags & Wide) return s ? uint64_t(a * b) : ma * mb;
    if (i.flags & Hi) {
      if (bits == 64) {
        if (s) return uint64_t((__int128(a) * __int128(b)) >> 64);
        return uint64_t((unsigned __int128)ma * mb >> 64);
      }
      return s ? uint64_t((a * b) >> bits) : (ma * mb) >> bits;
    }
    return ma * mb;
  };
  uint64_t r = 0;
  switch (i.i0) {
    case Add:
      r = (i.flags & Sat) ? uint64_t(sat32(a + b)) : ma + mb;
      break;
    case Sub: r = (i.flags & Sat) ? uint64_t(sat32(a - b)) : ma - mb; break;
    case Mul: r = product(); break;
    case Mad: {
      const uint64_t c = (i.flags & Wide) ? uc : low_bits(uc, bits);
      r = product() + c;
      if ((i.flags & Sat) && s && bits == 32 && (i.flags & Hi)) r = uint64_t(sat32(int64_t(product()) + sign_extend(uc, 32)));
      break;
    }
    case Mul24: case Mad24: {
      const int64_t a24 = s ? sign_extend(ua, 24) : int64_t(low_bits(ua, 24));
      const int64_t b24 = s ? sign_extend(ub, 24) : int64_t(low_bits(ub, 24));
      const int64_t p = a24 * b24;
      r = (i.flags & Hi) ? uint64_t(p >> 16) : uint64_t(p);
      if (i.i0 == Mad24) r += uc;
      break;
    }
    case Div:
      if (!mb) return s ? uint64_t(-1) : low_bits(~uint64_t(0), bits);
      r = s ? uint64_t(a / b) : ma / mb;
      break;
    case Rem:
      if (!mb) return ma;
      r = s ? uint64_t(a % b) : ma % mb;
      break;
    case Min: r = s ? uint64_t(std::min(a, b)) : std::min(ma, mb); break;
    case Max: r = s ? uint64_t(std::max(a, b)) : std::max(ma, mb); break;
    case Abs: r = uint64_t(a < 0 ? -a : a); break;
    case Neg: r = uint64_t(-a); break;
    default: break;
  }
  return low_bits(r, out_bits);
}

Step run_arith(const Inst& i, ThreadCtx& t) {
  const uint64_t a = t.get(i.ops[1]);
  const uint64_t b = i.ops.size() > 2 ? t.get(i.ops[2]) : 0;
  const uint64_t c = i.ops.size() > 3 ? t.get(i.ops[3]) : 0;
  uint64_t r;
  switch (i.type) {
    case PType::F32: r = bits_of(f32_op(i.i0, f32_of(a), f32_of(b), f32_of(c), i.flags)); break;
    case PType::F64: r = bits_of(f64_op(i.i0, f64_of(a), f64_of(b), f64_of(c))); break;
    case PType::F16: case PType::BF16: r = half_op(i.i0, uint16_t(a), uint16_t(b), uint16_t(c), i.type, i.flags); break;
    case PType::F16x2: case PType::BF16x2:
      r = uint64_t(half_op(i.i0, uint16_t(a), uint16_t(b), uint16_t(c), i.type, i.flags)) |
          uint64_t(half_op(i.i0, uint16_t(a >> 16), uint16_t(b >> 16), uint16_t(c >> 16), i.type, i.flags)) << 16;
      break;
    default: r = int_op(i, a, b, c); break;
  }
  t.set(i.ops[0], r);
  return Step::Next;
}

void decode_arith(Inst& i) {
  static const std::unordered_map<std::string, Op> ops = {
      {"add", Add}, {"sub", Sub}, {"mul", Mul}, {"mad", Mad}, {"fma", Fma}, {"div", Div}, {"rem", Rem},
      {"min", Min}, {"max", Max}, {"abs", Abs}, {"neg", Neg}, {"rcp", Rcp}, {"sqrt", Sqrt}, {"rsqrt", Rsqrt},
      {"ex2", Ex2}, {"lg2", Lg2}, {"sin", Sin}, {"cos", Cos}, {"tanh", Tanh}, {"copysign", Copysign},
      {"mul24", Mul24}, {"mad24", Mad24}};
  i.i0 = ops.at(i.base);
  i.type = last_type(i);
  if (i.type == PType::None) unsupported(i, "no operand type");
  for (const std::string& m : i.mods) {
    if (m == "hi") i.flags |= Hi;
    if (m == "wide") i.flags |= Wide;
    if (m == "sat") i.flags |= Sat;
    if (m == "ftz") i.flags |= Ftz;
    if (m == "relu") i.flags |= Relu;
    if (m == "NaN") i.flags |= NaN;
    if (m == "cc") unsupported(i, "carry-out (.cc) arithmetic");
  }
  if (i.ops.size() < 2) unsupported(i, "too few operands");
  i.run = run_arith;
}

}  // namespace

void register_ptx_arithmetic(PtxFamilyTable& t) {
  for (const char* b : {"add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "abs", "neg", "rcp", "sqrt",
                        "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "copysign", "mul24", "mad24"})
    t.add(b, decode_arith);
}

}  // namespace opencute::emulator::ptx
