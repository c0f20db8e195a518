#include "runtime/tensor_spec.h"

#include <algorithm>
#include <climits>
#include <numeric>

namespace opencute::runtime {

const char* const kInt32OverflowMessage =
    "Layout in DLTensorWrapper has int32 overflow risk. Please set use_32bit_stride to False.";

namespace {

std::string leaf_string(const SpecEntry& e) {
  if (!e.dynamic) return std::to_string(e.value);
  return e.divisibility > 1 ? "?{div=" + std::to_string(e.divisibility) + "}" : "?";
}

std::string join(const std::vector<SpecEntry>& v, bool layout_form) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += layout_form ? "," : ", ";
    s += layout_form ? leaf_string(v[i]) : std::to_string(v[i].value);
  }
  if (!layout_form && v.size() == 1) s += ",";
  return s + ")";
}

// What a static value tells about divisibility, for multiplying divisibilities together.
int64_t divisor_of(const SpecEntry& e) { return e.dynamic ? e.divisibility : std::max<int64_t>(1, e.value); }

std::string order_string(const std::vector<int>& order) {
  std::string s = "(";
  for (size_t i = 0; i < order.size(); ++i) s += (i ? ", " : "") + std::to_string(order[i]);
  return s + ")";
}

}  // namespace

int64_t cosize(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride) {
  int64_t span = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] <= 0) return 0;
    // Saturate instead of overflowing: only the comparison with INT32_MAX matters.
    int64_t s = stride[i] < 0 ? -stride[i] : stride[i];
    if (s != 0 && shape[i] - 1 > (INT64_MAX - span) / s) return INT64_MAX;
    span += (shape[i] - 1) * s;
  }
  return span + 1;
}

TensorSpec::TensorSpec(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride, bool use_32bit_stride)
    : use_32bit_stride_(use_32bit_stride) {
  if (shape.size() != stride.size())
    throw TensorSpecError("shape " + std::to_string(shape.size()) + " and stride " + std::to_string(stride.size()) +
                          " have different ranks");
  for (size_t i = 0; i < shape.size(); ++i) {
    shape_.push_back(SpecEntry{shape[i], false, 1, 32});
    stride_.push_back(SpecEntry{stride[i], false, 1, use_32bit_stride ? 32 : 64});
  }
}

TensorSpec::TensorSpec(std::vector<SpecEntry> shape, std::vector<SpecEntry> stride)
    : shape_(std::move(shape)), stride_(std::move(stride)) {
  if (shape_.size() != stride_.size()) throw TensorSpecError("shape and stride have different ranks");
  for (const auto* v : {&shape_, &stride_})
    for (const SpecEntry& e : *v) {
      if (e.divisibility < 1) throw TensorSpecError("divisibility must be >= 1, got " + std::to_string(e.divisibility));
      if (e.width != 32 && e.width != 64) throw TensorSpecError("integer width must be 32 or 64, got " + std::to_string(e.width));
    }
}

void TensorSpec::check_int32_overflow() const {
  if (!use_32bit_stride_) return;
  std::vector<int64_t> sh, st;
  for (size_t i = 0; i < rank(); ++i) {
    sh.push_back(shape_[i].value);
    st.push_back(stride_[i].value);
  }
  if (cosize(sh, st) > INT32_MAX) throw TensorSpecError(kInt32OverflowMessage);
}

void TensorSpec::mark_layout_dynamic(std::optional<int> leading_dim) {
  check_int32_overflow();  // every check comes before any change: a failed call changes nothing
  const int r = int(rank());
  int lead = -1;
  if (leading_dim) {
    lead = *leading_dim < 0 ? *leading_dim + r : *leading_dim;
    if (lead < 0 || lead >= r)
      throw TensorSpecError("Expected leading_dim to be in range [" + std::to_string(-r) + ", " + std::to_string(r) +
                            "), but got " + std::to_string(*leading_dim));
    if (stride_[size_t(lead)].value != 1)
      throw TensorSpecError("Expected strides[leading_dim] == 1, but got " + std::to_string(stride_[size_t(lead)].value));
  } else {
    std::vector<int> unit, unit_and_long;
    for (int i = 0; i < r; ++i)
      if (stride_[size_t(i)].value == 1) {
        unit.push_back(i);
        if (shape_[size_t(i)].value > 1) unit_and_long.push_back(i);
      }
    if (unit.size() == 1) {
      lead = unit[0];
    } else if (unit.size() > 1) {
      if (unit_and_long.size() != 1)
        throw TensorSpecError(std::string("Can't deduce the leading dimension from layout (multiple dimensions have "
                                          "stride 1 but ") +
                              (unit_and_long.empty() ? "none has" : "more than one has") +
                              " size > 1), please specify the leading_dim explicitly.");
      lead = unit_and_long[0];
    }
  }
  for (int i = 0; i < r; ++i) {
    shape_[size_t(i)] = SpecEntry{shape_[size_t(i)].value, true, 1, 32};
    SpecEntry& st = stride_[size_t(i)];
    bool keep_static = i == lead || st.value == 0;
    st = SpecEntry{st.value, !keep_static, 1, use_32bit_stride_ ? 32 : 64};
  }
  stride_order_.clear();
}

std::optional<std::vector<int>> TensorSpec::deduce_stride_order() const {
  size_t units = 0;
  for (const SpecEntry& e : stride_) units += e.value == 1;
  if (units > 1) return std::nullopt;
  std::vector<int> order(rank());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return stride_[size_t(a)].value > stride_[size_t(b)].value; });
  return order;
}

// A compact layout in this order: each mode's stride is the product of the extents of the
// modes inside it. Size-1 modes take no room, so their strides do not matter.
bool TensorSpec::order_matches_layout(const std::vector<int>& order) const {
  int64_t expected = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const size_t m = size_t(*it);
    if (shape_[m].value == 1) continue;
    if (stride_[m].value != expected) return false;
    expected *= shape_[m].value;
  }
  return true;
}

void TensorSpec::mark_compact_shape_dynamic(int mode, std::optional<std::vector<int>> stride_order,
                                            int64_t divisibility) {
  check_int32_overflow();
  const int r = int(rank());
  if (mode < 0 || mode >= r)
    throw TensorSpecError("Expected mode value to be in range [0, " + std::to_string(r) + "), but got " +
                          std::to_string(mode));
  if (stride_order) {
    if (int(stride_order->size()) != r)
      throw TensorSpecError("Expected stride_order to have " + std::to_string(r) + " elements, but got " +
                            std::to_string(stride_order->size()) + ".");
    for (int d = 0; d < r; ++d)
      if (std::find(stride_order->begin(), stride_order->end(), d) == stride_order->end())
        throw TensorSpecError("Expected stride_order to contain all the dimensions of the tensor, but it doesn't "
                              "contain " + std::to_string(d) + ".");
  }
  std::vector<int> order;
  if (!stride_order_.empty()) {
    if (stride_order && *stride_order != stride_order_)
      throw TensorSpecError("The stride_order is not consistent with the last stride_order");
    order = stride_order_;
  } else if (std::optional<std::vector<int>> deduced = deduce_stride_order()) {
    if (stride_order && *stride_order != *deduced && !order_matches_layout(*stride_order))
      throw TensorSpecError("The stride_order is not consistent with the deduced stride_order");
    order = stride_order ? *stride_order : *deduced;
    if (!order_matches_layout(order))
      throw TensorSpecError("The layout " + value_string() + " is not compact in stride_order " +
                            order_string(order) + "; mark_compact_shape_dynamic needs a compact layout");
  } else {
    if (!stride_order) throw TensorSpecError("The layout could not be deduced, please specify the stride_order explicitly");
    if (!order_matches_layout(*stride_order)) throw TensorSpecError("The stride_order is not consistent with the layout");
    order = *stride_order;
  }
  if (divisibility < 1) throw TensorSpecError("divisibility must be >= 1, got " + std::to_string(divisibility));
  SpecEntry& target = shape_[size_t(mode)];
  if (target.value % divisibility != 0)
    throw TensorSpecError("The shape(" + std::to_string(target.value) + ") of mode(" + std::to_string(mode) +
                          ") is not divisible by the divisibility(" + std::to_string(divisibility) + ")");
  target = SpecEntry{target.value, true, divisibility, 32};

  // Walk from the innermost mode outwards, carrying the extent covered so far.
  SpecEntry covered{1, false, 1, 64};
  const int stride_width = use_32bit_stride_ ? 32 : 64;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const size_t m = size_t(*it);
    const SpecEntry& extent = shape_[m];
    SpecEntry& st = stride_[m];
    if (!extent.dynamic && extent.value == 1) {
      st = SpecEntry{0, false, 1, stride_width};
      continue;
    }
    const bool dynamic = covered.dynamic || st.dynamic;
    st = SpecEntry{covered.value, dynamic, dynamic ? divisor_of(covered) : 1, stride_width};
    covered = SpecEntry{covered.value * extent.value, covered.dynamic || extent.dynamic,
                        divisor_of(covered) * divisor_of(extent), 64};
  }
  stride_order_ = order;
}

std::string TensorSpec::layout_string() const { return join(shape_, true) + ":" + join(stride_, true); }

std::string TensorSpec::value_string() const { return join(shape_, false) + ":" + join(stride_, false); }

int TensorSpec::leading_dim() const {
  for (size_t i = 0; i < rank(); ++i)
    if (!stride_[i].dynamic && stride_[i].value == 1) return int(i);
  return -1;
}

}  // namespace opencute::runtime
