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

Num convert(const Num& n, Type to) {
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
  Type t;
  try {
    t = promote(a0.type, b0.type);
  } catch (const std::invalid_argument& e) {
    throw UserError("TYPE_PROMOTION", e.what());
  }
  bool bitwise = op == BinOp::And || op == BinOp::Or || op == BinOp::Xor || op == BinOp::Shl || op == BinOp::Shr;
  if (bitwise && t->is_float())
    throw UserError("TYPE_BITWISE_FLOAT", "bitwise operators need integer operands, got " + dtype_name(a0.type) + " and " +
                                              dtype_name(b0.type));
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
  Type t;
  try {
    t = promote(a0.type, b0.type);
  } catch (const std::invalid_argument& e) {
    throw UserError("TYPE_PROMOTION", e.what());
  }
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
  Type t = args0.at(0).type;
  for (auto& a : args0) t = promote(t, a.type);
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
