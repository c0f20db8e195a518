#include "dsl/num.h"

#include <cmath>

#include "dsl/dtype.h"
#include "dsl/tracer.h"

namespace opencute::dsl {

using ir::OpCode;
using ir::Scalar;
using ir::Type;

Num Num::of_int(Type t, long long v) {
  Num n;
  n.type = t;
  if (t->is_float()) n.s = Scalar::of_float(ir::round_float(t, double(v)));
  else n.s = Scalar::of_int(ir::wrap_int(t, v));
  return n;
}

Num Num::of_float(Type t, double v) {
  Num n;
  n.type = t;
  if (t->is_float()) n.s = Scalar::of_float(ir::round_float(t, v));
  else n.s = ir::eval_cast(ir::f64(), t, Scalar::of_float(v));
  return n;
}

Num Num::of_value(ir::Value* v) {
  Num n;
  n.type = v->type;
  n.is_static = false;
  n.value = v;
  return n;
}

Num python_literal_int(long long v) {
  Num n = Num::of_int(ir::i64(), v);
  n.python_literal = true;
  return n;
}

Num python_literal_float(double v) {
  Num n = Num::of_float(ir::f64(), v);
  n.python_literal = true;
  return n;
}

Type literal_default_type(const Num& n) {
  if (!n.python_literal) return n.type;
  return n.type->is_float() ? ir::f32() : type_of_python_int(n.s.i);
}

// Whether literal `lit` can take type t without changing its value's meaning: an int must fit
// t's range (or round to a finite t), a finite float must stay finite.
static bool literal_takes(const Num& lit, Type t) {
  if (!t->is_scalar() || t->is_bool()) return false;
  if (lit.type->is_float()) {
    if (!t->is_float()) return false;
    return !std::isfinite(lit.s.f) || std::isfinite(ir::round_float(t, lit.s.f));
  }
  if (t->is_float()) return std::isfinite(ir::round_float(t, double(lit.s.i)));
  if (!t->is_signed && lit.s.i < 0) return false;  // Uint64 holds its values in int64 bits
  return ir::wrap_int(t, lit.s.i) == lit.s.i;
}

static Type promote_or_raise(Type a, Type b) {
  try {
    return promote(a, b);
  } catch (const std::invalid_argument& e) {
    throw UserError("TYPE_PROMOTION", e.what());
  }
}

Type common_type(const std::vector<Num>& operands) {
  Type t = nullptr;
  for (auto& n : operands)
    if (!n.python_literal) t = t ? promote_or_raise(t, n.type) : n.type;
  for (auto& n : operands) {
    if (!n.python_literal || (t && literal_takes(n, t))) continue;
    t = t ? promote_or_raise(t, literal_default_type(n)) : literal_default_type(n);
  }
  return t;
}

ir::Value* materialize(const Num& n) {
  if (!n.is_static) return n.value;
  ir::Builder& b = Tracer::require("materialising a constant").builder();
  return n.type->is_float() ? b.const_float(n.type, n.s.f) : b.const_int(n.type, n.s.i);
}

static Num from_value(ir::Value* v) {
  // Keep folded results static so they never reach the IR unless used by a dynamic op.
  if (ir::is_constant(v)) {
    Num n;
    n.type = v->type;
    n.s = v->type->is_float() ? Scalar::of_float(ir::constant_float(v)) : Scalar::of_int(ir::constant_int(v));
    return n;
  }
  return Num::of_value(v);
}

Num convert(const Num& n0, Type to) {
  Num n = n0;
  n.python_literal = false;
  if (n.type == to) return n;
  if (!to->is_scalar() || !n.type->is_scalar())
    throw UserError("TYPE_CONVERSION", "cannot convert " + dtype_name(n.type) + " to " + dtype_name(to));
  if (n.is_static) {
    Num r;
    r.type = to;
    r.s = ir::eval_cast(n.type, to, n.s);
    return r;
  }
  return from_value(Tracer::require("conversion").builder().cast(n.value, to));
}

static Scalar python_mod(Type t, Scalar a, Scalar b) {
  if (t->is_float()) {
    double r = std::fmod(a.f, b.f);
    if (r != 0 && ((r < 0) != (b.f < 0))) r += b.f;
    return Scalar::of_float(ir::round_float(t, r));
  }
  int64_t r = a.i % b.i;
  if (r != 0 && ((r < 0) != (b.i < 0))) r += b.i;
  return Scalar::of_int(ir::wrap_int(t, r));
}

Num binary(BinOp op, const Num& a0, const Num& b0) {
  Type t = common_type({a0, b0});
  bool bitwise = op == BinOp::And || op == BinOp::Or || op == BinOp::Xor || op == BinOp::Shl || op == BinOp::Shr;
  if (bitwise && t->is_float())
    throw UserError("TYPE_BITWISE_FLOAT", "bitwise operators need integer operands, got " +
                                              dtype_name(literal_default_type(a0)) + " and " +
                                              dtype_name(literal_default_type(b0)));
  // Arithmetic on Booleans happens in Int32; logic ops keep i1.
  if (t->is_bool() && !bitwise && op != BinOp::Min && op != BinOp::Max) t = ir::i32();
  if (op == BinOp::TrueDiv && t->is_int()) t = ir::f32();
  if (op == BinOp::Pow && t->is_int() && (a0.type->is_float() || b0.type->is_float())) t = ir::f32();
  Num a = convert(a0, t), b = convert(b0, t);

  OpCode code;
  switch (op) {
    case BinOp::Add: code = OpCode::Add; break;
    case BinOp::Sub: code = OpCode::Sub; break;
    case BinOp::Mul: code = OpCode::Mul; break;
    case BinOp::TrueDiv: code = OpCode::Div; break;
    case BinOp::FloorDiv: code = OpCode::FloorDiv; break;
    case BinOp::Mod: code = OpCode::Rem; break;
    case BinOp::Pow: code = OpCode::Pow; break;
    case BinOp::And: code = OpCode::And; break;
    case BinOp::Or: code = OpCode::Or; break;
    case BinOp::Xor: code = OpCode::Xor; break;
    case BinOp::Shl: code = OpCode::Shl; break;
    case BinOp::Shr: code = OpCode::Shr; break;
    case BinOp::Min: code = OpCode::Min; break;
    case BinOp::Max: code = OpCode::Max; break;
    default: code = OpCode::Add;
  }

  if (a.is_static && b.is_static) {
    // Static operands fold with Python's semantics (the meta-program is Python).
    bool int_div = t->is_int() && (op == BinOp::FloorDiv || op == BinOp::Mod || op == BinOp::TrueDiv);
    // In a kernel, an integer division by a constant zero is left to run time as CUDA leaves it
    // (an unspecified result on the GPU, an error on the emulator if it runs): quack's pingpong
    // GEMM advances a 0-stage pipeline state on a path whose result it never uses.
    Tracer* tracer = Tracer::current();
    if (int_div && b.s.i == 0 && tracer && tracer->in_kernel())
      return from_value(tracer->builder().binary(code, materialize(a), materialize(b)));
    if ((int_div && b.s.i == 0) || (t->is_float() && (op == BinOp::FloorDiv || op == BinOp::Mod || op == BinOp::TrueDiv) && b.s.f == 0.0))
      throw UserError("ZERO_DIVISION", "division by zero");
    Num r;
    r.type = t;
    if (op == BinOp::Mod) {
      r.s = python_mod(t, a.s, b.s);
      return r;
    }
    std::string err;
    if (!ir::eval_binary(code, t, a.s, b.s, &r.s, &err)) throw UserError("TYPE_OPERATION", err);
    return r;
  }
  ir::Builder& bld = Tracer::require("arithmetic").builder();
  return from_value(bld.binary(code, materialize(a), materialize(b)));
}

Num compare(ir::CmpPredicate p, const Num& a0, const Num& b0) {
  Type t = common_type({a0, b0});
  Num a = convert(a0, t), b = convert(b0, t);
  if (a.is_static && b.is_static) return Num::of_int(ir::bool_type(), ir::eval_cmp(p, t, a.s, b.s));
  return from_value(Tracer::require("comparison").builder().cmp(p, materialize(a), materialize(b)));
}

static Num unary(OpCode code, const Num& a) {
  if (a.is_static) {
    Num r = a;
    r.s = ir::eval_unary(code, a.type, a.s);
    return r;
  }
  return from_value(Tracer::require("arithmetic").builder().unary(code, a.value));
}

Num negate(const Num& a) {
  if (a.type->is_bool()) throw UserError("TYPE_OPERATION", "unary minus is not defined on Boolean");
  return unary(OpCode::Neg, a);
}

Num invert(const Num& a) {
  if (a.type->is_float()) throw UserError("TYPE_BITWISE_FLOAT", "~ needs an integer operand, got " + dtype_name(a.type));
  return unary(OpCode::Not, a);
}

Num absolute(const Num& a) { return unary(OpCode::Abs, a); }

Num to_boolean(const Num& a) { return convert(a, ir::bool_type()); }

Num select(const Num& cond0, const Num& a0, const Num& b0) {
  Num cond = to_boolean(cond0);
  if (a0.type != b0.type)
    throw UserError("TYPE_CONDITIONAL_BRANCH_MISMATCH", "both arms of a dynamic conditional expression must have the same "
                                                        "type, got " + dtype_name(a0.type) + " and " + dtype_name(b0.type));
  if (cond.is_static) return cond.s.i ? a0 : b0;
  ir::Builder& b = Tracer::require("select").builder();
  return from_value(b.select(cond.value, materialize(a0), materialize(b0)));
}

Num math(const std::string& fn, const std::vector<Num>& args0) {
  if (args0.empty()) throw UserError("UNSUP_MATH", "cute.math." + fn + " needs an argument");
  Type t = common_type(args0);
  if (!t->is_float()) t = ir::f32();
  std::vector<Num> args;
  bool all_static = true;
  for (auto& a : args0) {
    args.push_back(convert(a, t));
    all_static = all_static && args.back().is_static;
  }
  if (all_static) {
    std::vector<Scalar> s;
    for (auto& a : args) s.push_back(a.s);
    Num r;
    r.type = t;
    if (!ir::eval_math(fn, t, s, &r.s)) throw UserError("UNSUP_MATH", "unknown math function '" + fn + "'");
    return r;
  }
  std::vector<ir::Value*> vals;
  for (auto& a : args) vals.push_back(materialize(a));
  return from_value(Tracer::require("math").builder().math(fn, vals));
}

Num fma(const Num& a, const Num& b, const Num& c) {
  Type t = common_type({a, b, c});
  if (!t->is_float()) t = ir::f32();
  Num x = convert(a, t), y = convert(b, t), z = convert(c, t);
  if (x.is_static && y.is_static && z.is_static) {
    // As the host interpreter and the emulator evaluate OpCode::Fma.
    return Num::of_float(t, ir::round_float(t, x.s.f * y.s.f + z.s.f));
  }
  return from_value(Tracer::require("fma").builder().fma(materialize(x), materialize(y), materialize(z)));
}

Num bitcast(const Num& a, Type to) {
  if (a.type->width != to->width)
    throw UserError("TYPE_BITCAST", "bitcast needs types of one width, got " + dtype_name(a.type) + " and " + dtype_name(to));
  if (a.is_static) {
    Num r;
    r.type = to;
    r.s = ir::eval_bitcast(a.type, to, a.s);
    return r;
  }
  return from_value(Tracer::require("bitcast").builder().bitcast(a.value, to));
}

std::string num_repr(const Num& n) {
  std::string v;
  if (!n.is_static) v = "?";
  else if (n.type->is_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", n.s.f);
    v = buf;
  } else if (n.type->is_bool()) v = n.s.i ? "True" : "False";
  else if (!n.type->is_signed && n.type->width == 64) v = std::to_string(uint64_t(n.s.i));
  else v = std::to_string(n.s.i);
  return dtype_name(n.type) + "(" + v + ")";
}

}  // namespace opencute::dsl
