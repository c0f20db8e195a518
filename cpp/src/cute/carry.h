// Values carried through dynamic control flow (loop-carried, or assigned in a dynamic `if`):
// a tensor, layout, pointer or TensorSSA flattens to its IR values plus a "structure" that
// holds everything static about it (the template here: the value itself, whose IR values are
// replaced on rebuild). Two structures join when they describe the same static value: the same
// static layout leaves, engine kind, element type and address space. Facts that are only known
// bounds -- the alignment of a pointer, the divisibility of a dynamic leaf -- join to what holds
// on both paths. Anything else is a mismatch, which the front end reports at the user's line.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cute/tensor.h"
#include "cute/tensor_ssa.h"
#include "layout/layout.h"

namespace opencute::cute {

// Result of joining two structures: `value` is the join (absent on a mismatch, with `why`);
// `widened` is true when the join knows less than the first operand (loops re-trace then).
template <typename T>
struct Join {
  std::optional<T> value;
  bool widened = false;
  std::string why;
  ir::Type pointer_type = nullptr;  // tensors: the joined type of the engine pointer
};

Join<layout::IntTuple> join_tuple(const layout::IntTuple& a, const layout::IntTuple& b);
Join<layout::Layout> join_layout(const layout::Layout& a, const layout::Layout& b);
// Composed layouts: equal swizzle (or joinable inner layout), offset and outer layout.
Join<layout::ComposedLayout> join_composed(const layout::ComposedLayout& a, const layout::ComposedLayout& b);
std::vector<dsl::Num> composed_values(const layout::ComposedLayout& c);
layout::ComposedLayout composed_with_values(const layout::ComposedLayout& c, const std::vector<dsl::Num>& vals);
// Pointer types: same element and address space; the alignment both guarantee.
Join<ir::Type> join_pointer_type(ir::Type a, ir::Type b);
// Tensors: same engine kind, element, space, static layout (and coordinate) leaves.
// When shared-memory tensors gain a swizzle or composed layout, it joins here (must be equal).
Join<Tensor> join_tensor(const Tensor& a, const Tensor& b);
// TensorSSA: same shape and element type (every element is carried).
Join<TensorSSA> join_tensor_ssa(const TensorSSA& a, const TensorSSA& b);

// The IR values of a carried value, in order, and the template rebuilt from new values.
std::vector<dsl::Num> tuple_values(const layout::IntTuple& t);
layout::IntTuple tuple_with_values(const layout::IntTuple& t, const std::vector<dsl::Num>& vals, size_t& next);
std::vector<dsl::Num> tensor_values(const Tensor& t);
Tensor tensor_with_values(const Tensor& t, const std::vector<dsl::Num>& vals);
std::vector<dsl::Num> tensor_ssa_values(const TensorSSA& t);  // every element, materialized
TensorSSA tensor_ssa_with_values(const TensorSSA& t, const std::vector<dsl::Num>& vals);

}  // namespace opencute::cute
