// complement, right_inverse, left_inverse, max_common_layout / max_common_vector.
#include <algorithm>
#include <numeric>

#include "layout/layout.h"
#include "layout/print.h"

namespace opencute::layout {

namespace {
// The flat (shape, stride) leaves of a layout that must be static integers for `fn`.
void static_leaves(const char* fn, const Layout& l, std::vector<int64_t>& shapes, std::vector<int64_t>& strides) {
  if (has_basis(l.stride)) throw LayoutError(std::string(fn) + ": scaled-basis strides not supported: " + to_string(l));
  if (!l.is_static()) throw LayoutError(std::string(fn) + ": layout must be static, got " + to_string(l));
  for (auto& s : flatten_to_vector(l.shape)) shapes.push_back(s.as_int().value());
  for (auto& d : flatten_to_vector(l.stride)) strides.push_back(d.as_int().value());
}
}  // namespace

Layout complement(const Layout& l, const IntTuple& cotarget) {
  std::vector<int64_t> shapes, strides;
  static_leaves("complement", l, shapes, strides);
  std::vector<size_t> idx(shapes.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    int64_t da = std::llabs(strides[a]), db = std::llabs(strides[b]);
    return da != db ? da < db : shapes[a] < shapes[b];
  });
  std::vector<IntTuple> rs, rd;
  int64_t current = 1;
  for (size_t i : idx) {
    int64_t d = std::llabs(strides[i]), s = shapes[i];
    if (d == 0 || s == 1) continue;
    if (d % current != 0 || current > s * d)
      throw LayoutError("complement: layout " + to_string(l) + " is not injective or its strides do not divide");
    rs.push_back(Int(d / current));
    rd.push_back(Int(current));
    current = s * d;
  }
  Int target = product(cotarget);
  rs.push_back(ceil_div(target, Int(current)));
  rd.push_back(Int(current));
  return coalesce(Layout(IntTuple(std::move(rs)), IntTuple(std::move(rd))));
}
Layout complement(const Layout& l) { return complement(l, cosize(l)); }

Layout right_inverse(const Layout& l) {
  std::vector<int64_t> shapes, strides;
  static_leaves("right_inverse", l, shapes, strides);
  std::vector<int64_t> prefix(shapes.size());
  int64_t acc = 1;
  for (size_t i = 0; i < shapes.size(); ++i) {
    prefix[i] = acc;
    acc *= shapes[i];
  }
  std::vector<IntTuple> rs, rd;
  int64_t current = 1;
  std::vector<bool> used(shapes.size(), false);
  for (;;) {
    size_t found = shapes.size();
    for (size_t i = 0; i < shapes.size(); ++i)
      if (!used[i] && shapes[i] != 1 && strides[i] == current) {
        found = i;
        break;
      }
    if (found == shapes.size()) break;
    used[found] = true;
    rs.push_back(Int(shapes[found]));
    rd.push_back(Int(prefix[found]));
    current = shapes[found] * strides[found];
  }
  if (rs.empty()) return Layout(1, 0);
  return coalesce(Layout(IntTuple(std::move(rs)), IntTuple(std::move(rd))));
}

Layout left_inverse(const Layout& l) {
  if (!l.is_static()) throw LayoutError("left_inverse: layout must be static, got " + to_string(l));
  return right_inverse(make_layout({l, complement(l)}));
}

Layout max_common_layout(const Layout& a, const Layout& b) {
  Layout inv_b = right_inverse(b);
  Layout common = coalesce(composition(a, inv_b));
  Layout first = common.rank() > 1 ? common[0] : common;
  if (first.shape.is_static() && first.stride.is_int() && first.stride.as_int().is_static_value(1))
    return composition(inv_b, first);
  return Layout(1, 0);
}

Int max_common_vector(const Layout& a, const Layout& b) {
  if (!a.is_static() || !b.is_static()) return 1;
  Layout common = coalesce(composition(a, right_inverse(b)));
  Layout first = common.rank() > 1 ? common[0] : common;
  if (first.stride.is_int() && first.stride.as_int().is_static_value(1)) return first.shape.as_int();
  return 1;
}

}  // namespace opencute::layout
