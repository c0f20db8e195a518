// What a compiled function is told about a tensor argument: for each shape and stride entry,
// whether it is baked into the code (static) or read at call time (dynamic, with a known
// divisibility and integer width). `cute.runtime.from_dlpack` starts fully static;
// `mark_layout_dynamic` and `mark_compact_shape_dynamic` implement the rules of the CuTe DSL's
// "Integration with Frameworks" page, including its error messages.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace opencute::runtime {

// A misuse of the marking API (bad mode, leading dim, stride order, divisibility, overflow).
struct TensorSpecError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct SpecEntry {
  int64_t value = 0;         // the tensor's actual extent or stride, in elements
  bool dynamic = false;
  int64_t divisibility = 1;  // what the compiled code may assume of a dynamic entry
  int width = 32;            // integer width of a dynamic entry in the compiled code
};

class TensorSpec {
 public:
  // Fully static. `use_32bit_stride` makes strides that become dynamic Int32 instead of Int64.
  TensorSpec(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride, bool use_32bit_stride);
  // Explicit entries (fake tensors).
  TensorSpec(std::vector<SpecEntry> shape, std::vector<SpecEntry> stride);

  size_t rank() const { return shape_.size(); }
  const std::vector<SpecEntry>& shape() const { return shape_; }
  const std::vector<SpecEntry>& stride() const { return stride_; }
  bool use_32bit_stride() const { return use_32bit_stride_; }

  // All shapes dynamic; all strides dynamic except the leading dimension's (static 1) and
  // zero strides (broadcast). `leading_dim` may be negative (counted from the end); when
  // absent it is deduced: the unique stride-1 mode, else the unique stride-1 mode of size > 1.
  void mark_layout_dynamic(std::optional<int> leading_dim);
  // Shape mode `mode` becomes dynamic with `divisibility`; the strides of a compact layout are
  // recomputed in `stride_order` (outermost mode first, like torch's dim_order()), deduced
  // from the strides when absent. Size-1 static modes get stride 0.
  void mark_compact_shape_dynamic(int mode, std::optional<std::vector<int>> stride_order, int64_t divisibility);

  // "(?{div=2},4):(4,1)": the layout the compiled code sees (widths are not shown).
  std::string layout_string() const;
  // "(30, 20):(20, 1)": the actual values, as Python prints tuples.
  std::string value_string() const;
  // The leading dimension: the static stride-1 mode, or -1.
  int leading_dim() const;

 private:
  std::optional<std::vector<int>> deduce_stride_order() const;
  bool order_matches_layout(const std::vector<int>& order) const;
  void check_int32_overflow() const;

  std::vector<SpecEntry> shape_, stride_;
  std::vector<int> stride_order_;  // the last order mark_compact_shape_dynamic used
  bool use_32bit_stride_ = false;
};

// 1 + sum((shape-1) * |stride|): the number of elements the layout spans.
int64_t cosize(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride);

// The message the CuTe DSL gives when 32-bit strides cannot address a layout.
extern const char* const kInt32OverflowMessage;

}  // namespace opencute::runtime
