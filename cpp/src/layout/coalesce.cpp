// coalesce, filter_zeros, filter.
#include <algorithm>

#include "layout/layout.h"
#include "layout/print.h"

namespace opencute::layout {

namespace {
bool is_static_one(const IntTuple& t) { return t.is_int() && t.as_int().is_static_value(1); }
bool is_static_zero(const IntTuple& t) { return t.is_int() && t.as_int().is_static_value(0); }

// Provably s * d == e, without emitting IR (false when unknown).
bool known_scaled_eq(const Int& s, const Int& d, const Int& e) {
  if (s.is_static() && d.is_static() && e.is_static()) return s.value() * d.value() == e.value();
  if (d.is_static_value(0)) return e.is_static_value(0);
  if (s.is_static_value(1)) return d.same(e);
  if (d.is_static_value(1)) return s.same(e);
  return false;
}
bool known_stride_continues(const IntTuple& s, const IntTuple& d, const IntTuple& e) {
  if (!s.is_int()) return false;
  if (d.is_int() && e.is_int()) return known_scaled_eq(s.as_int(), d.as_int(), e.as_int());
  if (d.is_basis() && e.is_basis() && d.as_basis().mode == e.as_basis().mode)
    return known_scaled_eq(s.as_int(), d.as_basis().value, e.as_basis().value);
  return false;
}
}  // namespace

Layout coalesce(const Layout& l) {
  std::vector<IntTuple> shapes = flatten_to_vector(l.shape), strides = flatten_to_vector(l.stride);
  std::vector<IntTuple> rs, rd;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const IntTuple& s = shapes[i];
    const IntTuple& d = strides[i];
    if (is_static_one(s)) continue;
    if (!rs.empty() && known_stride_continues(rs.back(), rd.back(), d)) {
      rs.back() = rs.back().as_int() * s.as_int();
      continue;
    }
    rs.push_back(s);
    rd.push_back(d);
  }
  if (rs.empty()) return Layout(1, 0);
  if (rs.size() == 1) return Layout(rs[0], rd[0]);
  return Layout(IntTuple(std::move(rs)), IntTuple(std::move(rd)));
}

Layout coalesce(const Layout& l, const IntTuple& target_profile) {
  if (target_profile.is_leaf()) return coalesce(l);
  if (l.rank() < target_profile.rank())
    throw LayoutError("coalesce: layout " + to_string(l) + " has lower rank than target profile " +
                      to_string(target_profile));
  std::vector<Layout> modes;
  for (int i = 0; i < l.rank(); ++i)
    modes.push_back(i < target_profile.rank() ? coalesce(l[i], target_profile[i]) : l[i]);
  return make_layout(modes);
}

static IntTuple filter_shape(const IntTuple& shape, const IntTuple& profile) {
  if (shape.is_leaf()) return is_static_zero(profile) ? IntTuple(1) : shape;
  std::vector<IntTuple> out;
  for (int i = 0; i < shape.rank(); ++i) out.push_back(filter_shape(shape[i], profile[i]));
  return IntTuple(std::move(out));
}
Layout filter_zeros(const Layout& l, const IntTuple& target_profile) {
  if (!congruent(l.stride, target_profile))
    throw LayoutError("filter_zeros: target profile " + to_string(target_profile) + " is not congruent to " +
                      to_string(l));
  return Layout(filter_shape(l.shape, target_profile), l.stride);
}
Layout filter_zeros(const Layout& l) { return filter_zeros(l, l.stride); }
Layout filter(const Layout& l) { return coalesce(filter_zeros(l)); }

}  // namespace opencute::layout
