// The meaning of every scalar IR operation, in one place. The builder folds constants with
// these functions and the host interpreter / emulator executes with them, so a folded value and
// an executed value can never disagree.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/directed_rounding.h"
#include "ir/ir.h"

namespace opencute::ir {

// A scalar in registers: ints are kept sign- or zero-extended to 64 bits according to their
// type, floats are doubles already rounded to their type's precision.
struct Scalar {
  int64_t i = 0;
  double f = 0.0;
  static Scalar of_int(int64_t v) { Scalar s; s.i = v; return s; }
  static Scalar of_float(double v) { Scalar s; s.f = v; return s; }
};

int64_t wrap_int(Type t, int64_t v);
double round_float(Type t, double v);
// Memory encodings (little endian) of a scalar of type t.
void store_scalar(Type t, Scalar s, void* dst);
Scalar load_scalar(Type t, const void* src);
// Sub-byte scalars (is_sub_byte): element `index` of a packed array at `base`, element 0 in the
// low bits of the first byte; the other bits of the byte are kept.
void store_packed_scalar(Type t, Scalar s, void* base, int64_t index);
Scalar load_packed_scalar(Type t, const void* base, int64_t index);

// Returns false (and sets *error) when the operation has no defined result, e.g. integer
// division by zero; the caller then reports or leaves the op for run time.
bool eval_binary(OpCode code, Type t, Scalar a, Scalar b, Scalar* out, std::string* error);
Scalar eval_unary(OpCode code, Type t, Scalar a);
bool eval_cmp(CmpPredicate p, Type t, Scalar a, Scalar b);
Scalar eval_cast(Type from, Type to, Scalar a);
Scalar eval_bitcast(Type from, Type to, Scalar a);
bool eval_math(const std::string& fn, Type t, const std::vector<Scalar>& args, Scalar* out);
// A math function name resolved once, for evaluating it many times (the emulator, per lane).
struct MathFunction {
  int id = -1;            // which function (scalar_semantics.cpp's table), when not directed
  bool directed = false;  // an f32 add / mul / fma with directed rounding
  DirectedRounding rounded;
};
// False when `fn` is not a known math function (is_known_math_function).
bool resolve_math_function(const std::string& fn, MathFunction* out);
// eval_math of a resolved function; `args` holds the function's arity of values.
Scalar eval_math(const MathFunction& f, Type t, const Scalar* args, size_t nargs);
bool is_known_math_function(const std::string& fn, int* arity);
// Whether `fn` names a fastmath variant ("log_fast"); its exact function goes to *base.
bool fast_math_base(const std::string& fn, std::string* base);

}  // namespace opencute::ir
