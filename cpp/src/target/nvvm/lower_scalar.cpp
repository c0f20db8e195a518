// NVVM lowering of the scalar family: constants, integer and float arithmetic (Add ... Shr, Neg,
// Not, Abs), comparisons, select, fma, math functions and vector lanes (extract, insert, splat).
// Results follow ir/scalar_semantics.h:
//   * narrow floats compute in f32 and round back once per op (narrow_floats.h);
//   * integer division and shifts are guarded so that the cases LLVM leaves undefined (MIN / -1,
//     out-of-range shift amounts) give scalar_semantics' values; a constant right operand needs
//     no guard, and 32-bit shifts by a variable amount are PTX's own, which clamp it;
//   * float Rem, FloorDiv, Pow and the math functions call libdevice (__nv_*), which sets
//     ModuleState::needs_libdevice; Min / Max use the NaN-ignoring min.f32 / max.f32.
// Vector operands are lowered lane by lane (KernelLowering::lanewise).
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ir/directed_rounding.h"
#include "ir/scalar_semantics.h"
#include "target/nvvm/narrow_floats.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

using ir::CmpPredicate;
using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::Value;

namespace {

const std::map<std::string, std::string>& libdevice_names() {
  // IR math name -> libdevice base name (the f32 variant appends "f").
  static const std::map<std::string, std::string> table = {
      {"exp", "exp"},     {"exp2", "exp2"},   {"log", "log"},       {"log2", "log2"},   {"log10", "log10"},
      {"sqrt", "sqrt"},   {"rsqrt", "rsqrt"}, {"sin", "sin"},       {"cos", "cos"},     {"tan", "tan"},
      {"asin", "asin"},   {"acos", "acos"},   {"atan", "atan"},     {"sinh", "sinh"},   {"cosh", "cosh"},
      {"tanh", "tanh"},   {"erf", "erf"},     {"floor", "floor"},   {"ceil", "ceil"},   {"round", "rint"},
      {"trunc", "trunc"}, {"fabs", "fabs"},   {"atan2", "atan2"},   {"pow", "pow"},     {"fmod", "fmod"},
      {"copysign", "copysign"}, {"log1p", "log1p"}, {"expm1", "expm1"},
  };
  return table;
}

std::string libdevice_call(KernelLowering& k, const std::string& fn, Type c, const std::vector<std::string>& args) {
  auto it = libdevice_names().find(fn);
  if (it == libdevice_names().end()) k.error("no libdevice lowering for math function '" + fn + "'");
  std::string name = "__nv_" + it->second + (c->is_f64() ? "" : "f");
  std::string t = llvm_type(c);
  std::string params, typed;
  for (size_t i = 0; i < args.size(); ++i) {
    params += (i ? ", " : "") + t;
    typed += (i ? ", " : "") + t + " " + args[i];
  }
  k.module().declare(t, name, params);
  k.module().needs_libdevice = true;
  return k.emit_def("call " + t + " @" + name + "(" + typed + ")");
}

std::string float_binary(KernelLowering& k, const Op& op, Type t, const std::string& a, const std::string& b) {
  Type c = compute_type(t);
  std::string ct = llvm_type(c);
  std::string x = widen(k, t, a), y = widen(k, t, b);
  std::string r;
  switch (op.code) {
    case OpCode::Add: r = k.emit_def("fadd " + ct + " " + x + ", " + y); break;
    case OpCode::Sub: r = k.emit_def("fsub " + ct + " " + x + ", " + y); break;
    case OpCode::Mul: r = k.emit_def("fmul " + ct + " " + x + ", " + y); break;
    case OpCode::Div: r = k.emit_def("fdiv " + ct + " " + x + ", " + y); break;
    case OpCode::Rem: r = libdevice_call(k, "fmod", c, {x, y}); break;  // frem is not exact on NVPTX
    case OpCode::FloorDiv: {
      if (c->is_f64()) {
        r = libdevice_call(k, "floor", c, {k.emit_def("fdiv double " + x + ", " + y)});
        break;
      }
      // scalar_semantics floors the double quotient: a float quotient can round up to the
      // next integer (1 / 0.33333334f is 3.0f) or underflow to zero and floor differently.
      std::string xd = k.emit_def("fpext float " + x + " to double"),
                  yd = k.emit_def("fpext float " + y + " to double");
      std::string q = libdevice_call(k, "floor", ir::f64(), {k.emit_def("fdiv double " + xd + ", " + yd)});
      r = k.emit_def("fptrunc double " + q + " to float");
      break;
    }
    case OpCode::Pow: r = libdevice_call(k, "pow", c, {x, y}); break;
    case OpCode::Min:
    case OpCode::Max: {
      // min.f32/max.f32 ignore a NaN operand, as fmin/fmax do.
      std::string name =
          std::string("llvm.nvvm.f") + (op.code == OpCode::Min ? "min" : "max") + (c->is_f64() ? ".d" : ".f");
      r = k.call_intrinsic(ct, name, {ct + " " + x, ct + " " + y}, ct + ", " + ct);
      break;
    }
    default: k.error(op, "not defined on floats");
  }
  return narrow(k, t, r);
}

std::string ipow_helper(KernelLowering& k, Type t) {
  const int w = t->width;
  std::string T = "i" + std::to_string(w);
  std::string name = std::string("__opencute_ipow_") + (t->is_signed ? "i" : "u") + std::to_string(w);
  if (k.module().helpers.count(name)) return name;
  auto L = [&](int64_t v) { return int_literal(w, v); };
  // scalar_semantics' ipow looks at the exponent as a signed 64-bit value, so only signed
  // types and u64 can take the negative-exponent path.
  bool may_be_negative = t->is_signed || w >= 64;
  std::ostringstream s;
  s << "define internal " << T << " @" << name << "(" << T << " %base, " << T << " %exp) alwaysinline {\n";
  s << "entry:\n";
  if (may_be_negative) {
    s << "  %neg = icmp slt " << T << " %exp, 0\n";
    s << "  br i1 %neg, label %negative, label %head\n";
    s << "negative:\n";
    s << "  %is_one = icmp eq " << T << " %base, " << L(1) << "\n";
    s << "  %is_minus_one = icmp eq " << T << " %base, " << L(-1) << "\n";
    s << "  %odd_bit = and " << T << " %exp, " << L(1) << "\n";
    s << "  %odd = icmp ne " << T << " %odd_bit, " << L(0) << "\n";
    s << "  %sign = select i1 %odd, " << T << " " << L(-1) << ", " << T << " " << L(1) << "\n";
    s << "  %r_minus_one = select i1 %is_minus_one, " << T << " %sign, " << T << " " << L(0) << "\n";
    s << "  %r_negative = select i1 %is_one, " << T << " " << L(1) << ", " << T << " %r_minus_one\n";
    s << "  ret " << T << " %r_negative\n";
  } else {
    s << "  br label %head\n";
  }
  s << "head:\n";
  s << "  %r = phi " << T << " [" << L(1) << ", %entry], [%r_next, %body]\n";
  s << "  %b = phi " << T << " [%base, %entry], [%b_next, %body]\n";
  s << "  %e = phi " << T << " [%exp, %entry], [%e_next, %body]\n";
  s << "  %done = icmp eq " << T << " %e, " << L(0) << "\n";
  s << "  br i1 %done, label %exit, label %body\n";
  s << "body:\n";
  s << "  %bit = and " << T << " %e, " << L(1) << "\n";
  s << "  %take = icmp ne " << T << " %bit, " << L(0) << "\n";
  s << "  %r_mul = mul " << T << " %r, %b\n";
  s << "  %r_next = select i1 %take, " << T << " %r_mul, " << T << " %r\n";
  s << "  %b_next = mul " << T << " %b, %b\n";
  s << "  %e_next = lshr " << T << " %e, " << L(1) << "\n";
  s << "  br label %head\n";
  s << "exit:\n";
  s << "  ret " << T << " %r\n";
  s << "}\n";
  k.module().helpers.emplace(name, s.str());
  return name;
}

std::string int_binary(KernelLowering& k, const Op& op, Type t, const std::string& a, const std::string& b) {
  const std::string T = llvm_type(t);
  const int w = t->width;
  const bool s = t->is_signed;
  auto L = [&](int64_t v) { return int_literal(w, v); };
  auto bin = [&](const char* inst, const std::string& x, const std::string& y) {
    return k.emit_def(std::string(inst) + " " + T + " " + x + ", " + y);
  };
  auto sel = [&](const std::string& c, const std::string& x, const std::string& y) {
    return k.emit_def("select i1 " + c + ", " + T + " " + x + ", " + T + " " + y);
  };
  // A constant right operand (a layout's stride, a swizzle's shift) needs none of the guards
  // below; libNVVM would fold them, but each costs it time on kernels with hundreds of them.
  const Value* rhs = op.operands.size() == 2 ? op.operands[1] : nullptr;
  const bool rhs_const = rhs && !rhs->type->is_vector() && ir::is_constant(rhs);
  const int64_t c = rhs_const ? sign_wrap(w, ir::constant_int(rhs)) : 0;
  if (rhs_const && s && op.code == OpCode::FloorDiv && c > 0 && (c & (c - 1)) == 0) {
    // Rounding toward -inf by a power of two is the arithmetic shift; the sdiv / srem / select
    // below leave ptxas five instructions for it (FA4's causal mask and its pipeline phases).
    return bin("ashr", a, L(__builtin_ctzll(uint64_t(c))));
  }
  if (rhs_const && s && c != 0 && c != -1) {
    switch (op.code) {
      case OpCode::Div: return bin("sdiv", a, b);
      case OpCode::Rem: return bin("srem", a, b);
      case OpCode::FloorDiv: {
        // Rounds toward -inf: one less where the remainder is nonzero with the other sign than c.
        std::string q = bin("sdiv", a, b);
        std::string r = bin("srem", a, b);
        std::string adjust = bin(c > 0 ? "icmp slt" : "icmp sgt", r, L(0));
        return sel(adjust, bin("sub", q, L(1)), q);
      }
      default: break;
    }
  }
  if (rhs_const && (op.code == OpCode::Shl || op.code == OpCode::Shr) && c >= 0 && c < w)
    return bin(op.code == OpCode::Shl ? "shl" : (s ? "ashr" : "lshr"), a, b);
  switch (op.code) {
    case OpCode::Add: return bin("add", a, b);
    case OpCode::Sub: return bin("sub", a, b);
    case OpCode::Mul: return bin("mul", a, b);
    case OpCode::And: return bin("and", a, b);
    case OpCode::Or: return bin("or", a, b);
    case OpCode::Xor: return bin("xor", a, b);
    case OpCode::Div:
    case OpCode::Rem:
    case OpCode::FloorDiv: {
      if (!s) return bin(op.code == OpCode::Rem ? "urem" : "udiv", a, b);
      // MIN / -1 overflows (poison in LLVM); scalar_semantics wraps it to MIN with remainder 0.
      std::string minus_one = bin("icmp eq", b, L(-1));
      std::string safe = sel(minus_one, L(1), b);
      if (op.code == OpCode::Rem) return bin("srem", a, safe);
      std::string q0 = bin("sdiv", a, safe);
      std::string q = sel(minus_one, bin("sub", L(0), a), q0);
      if (op.code == OpCode::Div) return q;
      std::string r = bin("srem", a, safe);
      std::string nonzero = bin("icmp ne", r, L(0));
      std::string r_neg = bin("icmp slt", r, L(0));
      std::string b_neg = bin("icmp slt", b, L(0));
      std::string differ = k.emit_def("xor i1 " + r_neg + ", " + b_neg);
      std::string adjust = k.emit_def("and i1 " + nonzero + ", " + differ);
      return sel(adjust, bin("sub", q, L(1)), q);
    }
    case OpCode::Min:
    case OpCode::Max: {
      const char* pred = op.code == OpCode::Min ? (s ? "icmp slt" : "icmp ult") : (s ? "icmp sgt" : "icmp ugt");
      return sel(bin(pred, a, b), a, b);
    }
    case OpCode::Pow: {
      std::string name = ipow_helper(k, t);
      return k.emit_def("call " + T + " @" + name + "(" + T + " " + a + ", " + T + " " + b + ")");
    }
    case OpCode::Shl:
    case OpCode::Shr: {
      if (w == 32) {
        // PTX's 32-bit shifts clamp the amount, read as unsigned, to 32: scalar_semantics' rule.
        // LLVM's shifts are poison there, and the compare and select that guard them stay in
        // the SASS (FA4's `(1 << limit) - 1` masks).
        const char* inst = op.code == OpCode::Shl ? "shl.b32" : (s ? "shr.s32" : "shr.u32");
        return k.emit_def(std::string("call i32 asm \"") + inst + " $0, $1, $2;\", \"=r,r,r\"(i32 " + a + ", i32 " +
                          b + ")");
      }
      // Out-of-range amounts (negative ones included, seen as unsigned) are poison in LLVM;
      // scalar_semantics gives 0, or the sign fill for an arithmetic shift.
      std::string in_range = bin("icmp ult", b, L(w));
      if (op.code == OpCode::Shr && s) return bin("ashr", a, sel(in_range, b, L(w - 1)));
      std::string shifted = bin(op.code == OpCode::Shl ? "shl" : "lshr", a, sel(in_range, b, L(0)));
      return sel(in_range, shifted, L(0));
    }
    default: k.error(op, "not defined on integers");
  }
}

std::string unary(KernelLowering& k, const Op& op, Type t, const std::string& a) {
  if (t->is_float()) {
    switch (op.code) {
      case OpCode::Neg:
      case OpCode::Abs: {
        bool neg = op.code == OpCode::Neg;
        if (t->is_bf16())
          return k.emit_def(std::string(neg ? "xor" : "and") + " i16 " + a + ", " + (neg ? "-32768" : "32767"));
        if (t->is_fp8()) return k.emit_def(std::string(neg ? "xor" : "and") + " i8 " + a + ", " + (neg ? "-128" : "127"));
        if (t->is_fp4()) return k.emit_def(std::string(neg ? "xor" : "and") + " i4 " + a + ", " + (neg ? "-8" : "7"));
        if (t->is_f16()) {
          std::string bits = k.emit_def("bitcast half " + a + " to i16");
          std::string r =
              k.emit_def(std::string(neg ? "xor" : "and") + " i16 " + bits + ", " + (neg ? "-32768" : "32767"));
          return k.emit_def("bitcast i16 " + r + " to half");
        }
        if (!neg) return libdevice_call(k, "fabs", t, {a});
        // LLVM 7 has no fneg; fsub from -0.0 is its negation idiom.
        return k.emit_def("fsub " + llvm_type(t) + " " + hex_double(-0.0) + ", " + a);
      }
      case OpCode::Not: return a;  // scalar_semantics leaves floats unchanged
      default: k.error(op, "unsupported unary float op");
    }
  }
  if (!t->is_int()) k.error(op, "needs a numeric operand");
  const std::string T = llvm_type(t);
  switch (op.code) {
    case OpCode::Neg: return k.emit_def("sub " + T + " " + int_literal(t->width, 0) + ", " + a);
    case OpCode::Not: return k.emit_def("xor " + T + " " + a + ", " + int_literal(t->width, -1));
    case OpCode::Abs: {
      // scalar_semantics tests the sign of the 64-bit view, which for unsigned types below 64
      // bits is never negative.
      if (!t->is_signed && t->width < 64) return a;
      std::string neg = k.emit_def("icmp slt " + T + " " + a + ", 0");
      std::string n = k.emit_def("sub " + T + " 0, " + a);
      return k.emit_def("select i1 " + neg + ", " + T + " " + n + ", " + T + " " + a);
    }
    default: k.error(op, "unsupported unary int op");
  }
}

std::string compare(KernelLowering& k, const Op& op, CmpPredicate p, Type t, const std::string& a,
                    const std::string& b) {
  static const char* fpreds[] = {"oeq", "une", "olt", "ole", "ogt", "oge"};  // ne is unordered
  static const char* spreds[] = {"eq", "ne", "slt", "sle", "sgt", "sge"};
  static const char* upreds[] = {"eq", "ne", "ult", "ule", "ugt", "uge"};
  int i = int(p);
  if (i < 0 || i > 5) k.error(op, "bad predicate");
  if (t->is_float()) {
    Type c = compute_type(t);
    std::string x = widen(k, t, a), y = widen(k, t, b);
    return k.emit_def(std::string("fcmp ") + fpreds[i] + " " + llvm_type(c) + " " + x + ", " + y);
  }
  if (!t->is_int() && !t->is_pointer()) k.error(op, "cannot compare " + ir::to_string(t));
  bool sgn = t->is_signed || t->is_pointer();
  return k.emit_def(std::string("icmp ") + (sgn ? spreds[i] : upreds[i]) + " " + llvm_type(t) + " " + a + ", " + b);
}
std::string fma(KernelLowering& k, const Op& op, Type t, const std::string& a, const std::string& b,
                const std::string& c) {
  if (!t->is_float()) k.error(op, "fma needs floats");
  Type ct = compute_type(t);
  std::string T = llvm_type(ct);
  std::string x = widen(k, t, a), y = widen(k, t, b), z = widen(k, t, c);
  std::string r = k.call_intrinsic(T, std::string("llvm.fma.") + (ct->is_f64() ? "f64" : "f32"),
                                   {T + " " + x, T + " " + y, T + " " + z}, T + ", " + T + ", " + T);
  return narrow(k, t, r);
}

std::string math(KernelLowering& k, const Op& op, Type t, const std::vector<std::string>& args) {
  if (!t->is_float()) k.error(op, "math function '" + op.str_attr + "' needs floats");
  Type c = compute_type(t);
  std::vector<std::string> w;
  for (auto& a : args) w.push_back(widen(k, t, a));
  ir::DirectedRounding rounded;
  if (ir::parse_directed_rounding(op.str_attr, &rounded)) {  // f32 only (the builder checks)
    std::string operands = "$1, $2", constraints = "=f,f,f", typed = "float " + w[0] + ", float " + w[1];
    if (rounded.arity() == 3) operands += ", $3", constraints += ",f", typed += ", float " + w[2];
    return k.emit_def("call float asm \"" + rounded.ptx_instruction() + " $0, " + operands + ";\", \"" + constraints +
                      "\"(" + typed + ")");
  }
  if (op.str_attr == "rcp_approx" || op.str_attr == "exp2_approx") {
    // The PTX fast paths work on f32 (f64 rounds to f32 first, as the emulator does).
    std::string x = c->is_f64() ? k.emit_def("fptrunc double " + w[0] + " to float") : w[0];
    const char* insn = op.str_attr == "rcp_approx" ? "rcp.approx.ftz.f32" : "ex2.approx.ftz.f32";
    std::string r = k.emit_def(std::string("call float asm \"") + insn + " $0, $1;\", \"=f,f\"(float " + x + ")");
    return narrow(k, t, c->is_f64() ? k.emit_def("fpext float " + r + " to double") : r);
  }
  std::string base;
  if (ir::fast_math_base(op.str_attr, &base)) {
    // fastmath: libdevice's approximate f32 function, as MLIR's NVVM lowering picks for `afn`.
    if (c->is_f64()) return narrow(k, t, libdevice_call(k, base, c, w));
    std::string name = "__nv_fast_" + base + "f";
    k.module().declare("float", name, "float");
    k.module().needs_libdevice = true;
    return narrow(k, t, k.emit_def("call float @" + name + "(float " + w[0] + ")"));
  }
  return narrow(k, t, libdevice_call(k, op.str_attr, c, w));
}

std::string constant_text(KernelLowering& k, const Op& op) {
  Type t = op.result()->type;
  Type s = ir::scalar_of(t);
  auto scalar = [&]() -> std::string {
    if (s->is_float()) return float_literal(s, op.float_attr);
    if (s->is_int()) return int_literal(s->width, op.int_attr);
    if (s->is_pointer()) {
      if (op.int_attr == 0) return "null";
      return "inttoptr (i64 " + std::to_string(op.int_attr) + " to " + llvm_type(s) + ")";
    }
    k.error(op, "constant of type " + ir::to_string(t));
  };
  std::string v = scalar();
  if (!t->is_vector()) return v;
  std::string out = "<";
  for (int i = 0; i < t->lanes; ++i) out += (i ? ", " : "") + llvm_type(s) + " " + v;
  return out + ">";
}

void lower_constant(const Op& op, KernelLowering& k) { k.define(op, 0, constant_text(k, op)); }

void lower_binary(const Op& op, KernelLowering& k) {
  if (op.operands.size() != 2) k.error(op, "needs two operands");
  Type t = ir::scalar_of(op.operands[0]->type);
  k.define(op, 0, k.lanewise(op, [&](const std::vector<std::string>& s) {
    if (t->is_float()) return float_binary(k, op, t, s[0], s[1]);
    if (!t->is_int()) k.error(op, "needs numeric operands");
    return int_binary(k, op, t, s[0], s[1]);
  }));
}

void lower_unary(const Op& op, KernelLowering& k) {
  Type t = ir::scalar_of(op.operands[0]->type);
  k.define(op, 0, k.lanewise(op, [&](const std::vector<std::string>& s) { return unary(k, op, t, s[0]); }));
}

void lower_cmp(const Op& op, KernelLowering& k) {
  Type t = op.operands[0]->type;
  CmpPredicate p = CmpPredicate(op.int_attr);
  if (t->is_vector() && !op.result()->type->is_vector()) k.error(op, "comparing vectors needs a vector result");
  Type s = ir::scalar_of(t);
  k.define(op, 0, k.lanewise(op, [&](const std::vector<std::string>& v) { return compare(k, op, p, s, v[0], v[1]); }));
}

void lower_select(const Op& op, KernelLowering& k) {
  const Value *c = op.operands[0], *a = op.operands[1], *b = op.operands[2];
  k.define(op, 0,
           k.emit_def("select " + llvm_type(c->type) + " " + k.operand(c) + ", " + llvm_type(a->type) + " " +
                      k.operand(a) + ", " + llvm_type(b->type) + " " + k.operand(b)));
}

void lower_fma(const Op& op, KernelLowering& k) {
  Type t = ir::scalar_of(op.operands[0]->type);
  k.define(op, 0, k.lanewise(op, [&](const std::vector<std::string>& s) { return fma(k, op, t, s[0], s[1], s[2]); }));
}

void lower_math(const Op& op, KernelLowering& k) {
  Type t = ir::scalar_of(op.operands[0]->type);
  k.define(op, 0, k.lanewise(op, [&](const std::vector<std::string>& s) { return math(k, op, t, s); }));
}

void lower_vec_extract(const Op& op, KernelLowering& k) {
  const Value* v = op.operands[0];
  k.define(
      op, 0,
      k.emit_def("extractelement " + llvm_type(v->type) + " " + k.operand(v) + ", i32 " + std::to_string(op.int_attr)));
}

void lower_vec_insert(const Op& op, KernelLowering& k) {
  const Value *v = op.operands[0], *s = op.operands[1];
  k.define(op, 0,
           k.emit_def("insertelement " + llvm_type(v->type) + " " + k.operand(v) + ", " + llvm_type(s->type) + " " +
                      k.operand(s) + ", i32 " + std::to_string(op.int_attr)));
}

void lower_vec_splat(const Op& op, KernelLowering& k) {
  const Value* s = op.operands[0];
  Type vt = op.result()->type;
  std::string V = llvm_type(vt);
  std::string one = k.emit_def("insertelement " + V + " undef, " + llvm_type(s->type) + " " + k.operand(s) + ", i32 0");
  k.define(op, 0,
           k.emit_def("shufflevector " + V + " " + one + ", " + V + " undef, <" + std::to_string(vt->lanes) +
                      " x i32> zeroinitializer"));
}

}  // namespace

void register_scalar_lowerings(LoweringTable& t) {
  t.add(OpCode::Constant, lower_constant);
  for (OpCode c : {OpCode::Add, OpCode::Sub, OpCode::Mul, OpCode::Div, OpCode::Rem, OpCode::FloorDiv, OpCode::Min,
                   OpCode::Max, OpCode::Pow, OpCode::And, OpCode::Or, OpCode::Xor, OpCode::Shl, OpCode::Shr})
    t.add(c, lower_binary);
  for (OpCode c : {OpCode::Neg, OpCode::Not, OpCode::Abs}) t.add(c, lower_unary);
  t.add(OpCode::Cmp, lower_cmp);
  t.add(OpCode::Select, lower_select);
  t.add(OpCode::Fma, lower_fma);
  t.add(OpCode::Math, lower_math);
  t.add(OpCode::VecExtract, lower_vec_extract);
  t.add(OpCode::VecInsert, lower_vec_insert);
  t.add(OpCode::VecSplat, lower_vec_splat);
}

}  // namespace opencute::target
