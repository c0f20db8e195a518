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
  // A Python int/float written next to a DSL value in arithmetic or a comparison. It is kept
  // exact (Int64 / Float64) until the operation picks its type: see python_literal_* below.
  bool python_literal = false;

  static Num of_int(ir::Type t, long long v);
  static Num of_float(ir::Type t, double v);
  static Num of_value(ir::Value* v);
  bool is_float() const { return type->is_float(); }
};

// A Python scalar operand of binary / compare / math (and the TensorSSA forms). It takes the
// type of the DSL operand it meets when it is of that kind (an int also with a float type) and
// its value survives the conversion (fits the integer range / stays finite), so that `x * 0.5`
// keeps a Float16 x in Float16 and `i + 1` keeps an Int8 i in Int8. Otherwise it has its
// default type (int -> Int32, or Int64 when it does not fit; float -> Float32) and the usual
// promotion applies. Booleans are never literals: Python bools are plain Boolean values.
Num python_literal_int(long long v);
Num python_literal_float(double v);
// The type a literal has when it does not take the other operand's type.
ir::Type literal_default_type(const Num& n);

enum class BinOp { Add, Sub, Mul, TrueDiv, FloorDiv, Mod, Pow, And, Or, Xor, Shl, Shr, Min, Max };

// The IR value of n in the current trace (a constant when n is static).
ir::Value* materialize(const Num& n);
// T(x) / x.to(T): static values convert at once (ints wrap like a C cast, floats truncate).
// The result is never a Python literal.
Num convert(const Num& n, ir::Type to);
// The type operands combine in: the promotion of the DSL operands' types, with each Python
// literal taking that type where it can (see python_literal_int).
ir::Type common_type(const std::vector<Num>& operands);
Num binary(BinOp op, const Num& a, const Num& b);
Num compare(ir::CmpPredicate p, const Num& a, const Num& b);
Num negate(const Num& a);
Num invert(const Num& a);        // ~a on integers, logical not on Boolean
Num absolute(const Num& a);
Num to_boolean(const Num& a);    // a != 0
Num select(const Num& cond, const Num& a, const Num& b);
Num math(const std::string& fn, const std::vector<Num>& args);
Num bitcast(const Num& a, ir::Type to);
// a*b+c rounded once (fma.rn): the operands' common float type (Float32 for integers).
Num fma(const Num& a, const Num& b, const Num& c);

std::string num_repr(const Num& n);  // "Int32(5)" / "Int32(?)"

}  // namespace opencute::dsl
