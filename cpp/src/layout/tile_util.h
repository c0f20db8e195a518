// Internal helpers shared by divide.cpp and product.cpp (not part of the public API).
#pragma once
#include <utility>
#include <vector>

#include "layout/layout.h"

namespace opencute::layout::detail {
// Split the result of a by-mode divide/product into (first parts, second parts + extra modes).
// A Layout tiler's result already is (tile, rest).
inline std::pair<Layout, Layout> unzip(const Layout& r, const Tiler& tiler) {
  if (tiler.kind != Tiler::Kind::Tuple) return {r[0], r.rank() > 1 ? r[1] : Layout(1, 0)};
  std::vector<Layout> first, second;
  for (int i = 0; i < r.rank(); ++i) {
    if (i < tiler.rank()) {
      if (tiler.modes[i].kind == Tiler::Kind::Underscore) {
        first.push_back(r[i]);  // `_`: the whole mode is the tile
        second.push_back(Layout(1, 0));
      } else if (tiler.modes[i].kind == Tiler::Kind::Tuple) {
        // A by-mode tiler of a nested mode (CuTe's zip2_by): its sub-modes' tiles, then their rests.
        auto [t, rest] = unzip(r[i], tiler.modes[i]);
        first.push_back(t);
        second.push_back(rest);
      } else {
        first.push_back(r[i][0]);
        second.push_back(r[i][1]);
      }
    } else {
      second.push_back(r[i]);
    }
  }
  return {make_layout(first), make_layout(second)};
}
inline std::vector<Layout> modes_of(const Layout& l) {
  std::vector<Layout> out;
  for (int i = 0; i < l.rank(); ++i) out.push_back(l[i]);
  return out;
}
// The three arrangements of a (tile, rest) split: ((T...),(R...)), ((T...),R...), (T...,R...).
inline Layout zipped(const std::pair<Layout, Layout>& tr) { return make_layout({tr.first, tr.second}); }
inline Layout tiled(const std::pair<Layout, Layout>& tr) {
  std::vector<Layout> out{tr.first};
  for (auto& m : modes_of(tr.second)) out.push_back(m);
  return make_layout(out);
}
inline Layout flat(const std::pair<Layout, Layout>& tr) {
  std::vector<Layout> out = modes_of(tr.first);
  for (auto& m : modes_of(tr.second)) out.push_back(m);
  return make_layout(out);
}
// The composed layout with its outer layout replaced (the algebra acts on the outer layout).
inline ComposedLayout with_outer(const ComposedLayout& c, Layout outer) {
  ComposedLayout r = c;
  r.outer = std::move(outer);
  return r;
}
}  // namespace opencute::layout::detail
