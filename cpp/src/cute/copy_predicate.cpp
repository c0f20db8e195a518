#include "cute/copy_predicate.h"

#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;

CopyPredicate::CopyPredicate(const Tensor& pred, int64_t calls_per_rest, int64_t rest, const std::string& context)
    : pred_(pred), calls_per_rest_(calls_per_rest) {
  L::Int n = L::size(pred.layout);
  if (n.is_static() && n.value() == calls_per_rest * rest) return;
  if (pred.layout.rank() > 1) {
    L::Layout grouped = L::group_modes(pred.layout, 1, pred.layout.rank());
    L::Int n0 = L::size(grouped, {0}), n1 = L::size(grouped, {1});
    if (n0.is_static() && n0.value() == 1 && n1.is_static() && n1.value() == rest) {
      pred_ = with_layout(pred, grouped);
      one_per_value_mode_ = true;
      return;
    }
  }
  throw L::LayoutError(context + ": the predicate " + to_string(pred) + " needs one entry per atom call (" +
                       std::to_string(calls_per_rest * rest) + ")");
}

dsl::Num CopyPredicate::at(int64_t rest, int64_t call) const {
  if (one_per_value_mode_) return load_element(pred_, L::IntTuple{L::IntTuple(0), L::IntTuple(rest)});
  return load_element(pred_, L::IntTuple(rest * calls_per_rest_ + call));
}

}  // namespace opencute::cute
