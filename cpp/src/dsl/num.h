// A DSL numeric value as the Python proxies (cutlass.Int32, Float32 ...) see it: either a
// static value known while tracing, or a dynamic IR value. All arithmetic, promotion and
// constant folding for the proxies happens here.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/scalar_semantics.h"

namespace opencute::dsl {

struct Num {
  ir::Type type = nullptr;
  bool is_static = true;
  ir::Scalar s;                 // the value when static
  ir::Value* value = nullptr;   // the IR value when dynamic

  static Num of_int(ir::Type t, long long v);
  static Num of_float(ir::Type t, double v);
  static Num of_value(ir::Value* v);
  bool is_float() const { return type->is_float(); }
};

enum class BinOp { Add, Sub, Mul, TrueDiv, FloorDiv, Mod, Pow, And, Or, Xor, Shl, Shr, Min, Max };

// The IR value of n in the current trace (a constant when n is static).
ir::Value* materialize(const Num& n);
// T(x) / x.to(T): static values convert at once (ints wrap like a C cast, floats truncate).
Num convert(const Num& n, ir::Type to);
Num binary(BinOp op, const Num& a, const Num& b);
Num compare(ir::CmpPredicate p, const Num& a, const Num& b);
Num negate(const Num& a);
Num invert(const Num& a);        // ~a on integers, logical not on Boolean
Num absolute(const Num& a);
Num to_boolean(const Num& a);    // a != 0
Num select(const Num& cond, const Num& a, const Num& b);
Num math(const std::string& fn, const std::vector<Num>& args);
Num bitcast(const Num& a, ir::Type to);

std::string num_repr(const Num& n);  // "Int32(5)" / "Int32(?)"

}  // namespace opencute::dsl
