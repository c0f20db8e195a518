// cute.TensorSSA: an immutable, thread-local tensor value with a static shape and an element
// type, whose elements live in registers. Here it is a list of scalar DSL values (dsl::Num):
// static elements stay static and fold, dynamic ones are IR values. Every operation works
// element by element through the scalar semantics of dsl::Num (promotion, folding, IR).
//
// Element order: CuTe's linear order of the shape, i.e. colexicographic (mode 0 fastest):
// values[i] is the element at coordinate idx2crd(i, shape).
//
// Interface for memory tensors (Tensor.load / Tensor.store):
//   load:  TensorSSA::from_values(shape, element_type, values) with the loaded scalars in the
//          order above (values are converted to element_type);
//   store: read `values` (same order) and the `element` type; convert on store as needed.
// From Python: cute.TensorSSA._from_values(shape, dtype, [scalar proxies]) and v._values().
#pragma once
#include <string>
#include <variant>
#include <vector>

#include "dsl/num.h"
#include "dsl/tracer.h"
#include "layout/int_tuple.h"

namespace opencute::cute {

// A TensorSSA mistake the CuTe DSL reports as a ValueError (incompatible shapes, a bad
// reduction profile, mismatched dtypes in `where`, a dynamic value where a static one is
// needed). Python raises it as cute.TensorSSAError (DSLUserCodeError and ValueError).
struct TensorSSAError : dsl::UserError {
  TensorSSAError(const std::string& code, const std::string& msg) : dsl::UserError(code, msg) {}
};

enum class ReductionOp { Add, Mul, Max, Min };

struct TensorSSA {
  layout::IntTuple shape;        // static, every extent >= 1
  ir::Type element = nullptr;    // scalar element type (Boolean is i1)
  std::vector<dsl::Num> values;  // size(shape) elements, colexicographic order

  // Checks the shape (static, positive extents) and the count, converts each value to `element`.
  static TensorSSA from_values(layout::IntTuple shape, ir::Type element, std::vector<dsl::Num> values);
  // cute.full: every element is `fill` converted to `element`.
  static TensorSSA full(const layout::IntTuple& shape, const dsl::Num& fill, ir::Type element);

  int64_t size() const { return int64_t(values.size()); }
  // "tensor_value<vector<12xf32> o (3, 4)>": the vector type, then the shape as Python prints it.
  std::string str() const;
  std::string vector_type() const;  // "vector<12xf32>"
};

// A TensorSSA or a scalar; scalars broadcast to any shape.
using Operand = std::variant<TensorSSA, dsl::Num>;

// ---- shapes ----
// The shape two operands broadcast to: both are right-padded with 1s to one rank (CuTe
// append), then each mode must be equal or 1 (nested modes compare recursively).
layout::IntTuple broadcast_shape(const layout::IntTuple& a, const layout::IntTuple& b);
TensorSSA broadcast_to(const TensorSSA& t, const layout::IntTuple& target);
// The same elements (colexicographic order) read as `target`, a static shape of the same size.
TensorSSA reshape(const TensorSSA& t, const layout::IntTuple& target);
// Python's tuple formatting of a static shape: 8, (3,), (3, 4), ((2, 2), 3).
std::string python_shape_string(const layout::IntTuple& shape);

// ---- element-wise ----
// Scalar promotion per element (dsl::binary); at least one operand must be a TensorSSA. A
// Python literal operand (dsl::python_literal_int/float) takes the element type where it can,
// so `x * 0.5` on Float16 stays Float16.
// + and - on two Boolean tensors compute in Int32 and give Boolean (x != 0), as the DSL does.
TensorSSA binary(dsl::BinOp op, const Operand& a, const Operand& b);
TensorSSA compare(ir::CmpPredicate p, const Operand& a, const Operand& b);  // Boolean result
TensorSSA negate(const TensorSSA& t);
TensorSSA absolute(const TensorSSA& t);
TensorSSA invert(const TensorSSA& t);  // ~ on integers, logical not on Boolean
TensorSSA convert(const TensorSSA& t, ir::Type to);
// cute.math.<fn> on each element; operands broadcast together (at least one a TensorSSA).
TensorSSA math(const std::string& fn, const std::vector<Operand>& args);
// cute.where: cond must be Boolean, x and y of one dtype, at least one of them a TensorSSA.
// Scalars here are typed values (a Python 0.0 arrives as Float32), never adapting literals.
TensorSSA where(const Operand& cond, const Operand& x, const Operand& y);

// ---- reductions ----
// `profile` is a leaf (not `_`): reduce every element to one scalar. A tuple: its `_` modes
// are kept, its integer modes reduced, e.g. shape (2,3) with (_,1) gives shape (2). The result
// starts from `init` (converted to the element type) and combines the elements in order.
// A profile that keeps no mode reduces to a scalar too.
std::variant<TensorSSA, dsl::Num> reduce(const TensorSSA& t, ReductionOp op, const dsl::Num& init,
                                         const layout::IntTuple& profile);
dsl::Num any(const TensorSSA& t);  // Boolean: some element != 0
dsl::Num all(const TensorSSA& t);  // Boolean: every element != 0

// ---- indexing ----
// v[i] with an integer i: the element at position i of the row-major (last mode fastest)
// order of the flattened shape, which is what the CuTe DSL's vector extraction gives.
// v[crd] with a full coordinate: the element at crd (colexicographic, as CuTe). A dynamic index
// selects among the elements at run time; a static one out of range is an error.
dsl::Num element_at(const TensorSSA& t, const layout::IntTuple& key);
// v[crd] where crd has `_` modes: the static sub-tensor of the kept modes, e.g. (4,2,3) sliced
// by (_,1,_) has shape (4,3). The fixed coordinates must be static.
TensorSSA slice(const TensorSSA& t, const layout::IntTuple& crd);

}  // namespace opencute::cute
