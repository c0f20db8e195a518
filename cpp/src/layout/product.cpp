// logical_product and its zipped / tiled / flat / blocked / raked forms, make_layout_tv,
// tile_to_shape.
#include <algorithm>

#include "layout/layout.h"
#include "layout/print.h"
#include "layout/tile_util.h"

namespace opencute::layout {

using detail::modes_of;
using detail::unzip;
using detail::zipped;
using detail::tiled;
using detail::flat;
using detail::with_outer;

Layout logical_product(const Layout& block, const Tiler& tiler) {
  switch (tiler.kind) {
    case Tiler::Kind::Underscore: return block;
    case Tiler::Kind::Tuple: {
      if (block.rank() < tiler.rank())
        throw LayoutError("logical_product: tiler " + to_string(tiler) + " has higher rank than block " +
                          to_string(block));
      std::vector<Layout> modes;
      for (int i = 0; i < block.rank(); ++i)
        modes.push_back(i < tiler.rank() ? logical_product(block[i], tiler.modes[i]) : block[i]);
      return make_layout(modes);
    }
    case Tiler::Kind::Layout: {
      const Layout& b = tiler.layout;
      try {
        return make_layout({block, composition(complement(block, size(block) * cosize(b)), b)});
      } catch (const LayoutError& e) {
        throw LayoutError("logical_product: " + to_string(block) + " by " + to_string(b) + ": " + e.what());
      }
    }
  }
  return block;
}
Layout zipped_product(const Layout& block, const Tiler& tiler) {
  return zipped(unzip(logical_product(block, tiler), tiler));
}
Layout tiled_product(const Layout& block, const Tiler& tiler) {
  return tiled(unzip(logical_product(block, tiler), tiler));
}
Layout flat_product(const Layout& block, const Tiler& tiler) {
  return flat(unzip(logical_product(block, tiler), tiler));
}

namespace {
Layout zip_product(const char* fn, const Layout& block, const Layout& tiler, bool raked) {
  int R = std::max(block.rank(), tiler.rank());
  Layout a = block.rank() < R ? append(block, Layout(1, 0), R) : block;
  Layout b = tiler.rank() < R ? append(tiler, Layout(1, 0), R) : tiler;
  Layout r;
  try {
    r = logical_product(a, Tiler(b));
  } catch (const LayoutError& e) {
    throw LayoutError(std::string(fn) + ": " + to_string(block) + " by " + to_string(tiler) + ": " + e.what());
  }
  std::vector<Layout> modes;
  for (int i = 0; i < R; ++i) {
    Layout x = r[0][i], y = r[1][i];
    modes.push_back(raked ? make_layout({y, x}) : make_layout({x, y}));
  }
  return make_layout(modes);
}
}  // namespace

Layout blocked_product(const Layout& block, const Layout& tiler) {
  return zip_product("blocked_product", block, tiler, false);
}
Layout raked_product(const Layout& block, const Layout& tiler) {
  return zip_product("raked_product", block, tiler, true);
}

std::pair<IntTuple, Layout> make_layout_tv(const Layout& thr, const Layout& val) {
  Layout mn = raked_product(thr, val);
  Layout tv = composition(right_inverse(mn), make_layout(IntTuple{size(thr), size(val)}));
  return {product_each(mn.shape), tv};
}

Layout tile_to_shape(const Layout& block, const IntTuple& trg_shape, const IntTuple& order) {
  int R = trg_shape.rank();
  if (block.rank() > R)
    throw LayoutError("tile_to_shape: block " + to_string(block) + " has higher rank than shape " + to_string(trg_shape));
  Layout padded = block.rank() < R ? append(block, Layout(1, 0), R) : block;
  IntTuple block_shape = product_each(padded.shape);
  IntTuple target_shape = product_each(wrap(trg_shape));
  for (int i = 0; i < R; ++i) {
    const Int& t = target_shape[i].as_int();
    const Int& b = block_shape[i].as_int();
    if (t.is_static() && b.is_static() && t.value() % b.value() != 0)
      throw LayoutError("tile_to_shape: shape " + to_string(trg_shape) + " is not divisible by block " +
                        to_string(block));
  }
  IntTuple product_shape = ceil_div(target_shape, block_shape);
  IntTuple ord = order;
  if (ord.is_tuple() && ord.rank() == 0) {
    std::vector<IntTuple> o;
    for (int i = 0; i < R; ++i) o.push_back(i);
    ord = IntTuple(std::move(o));
  }
  Layout rep = make_ordered_layout(product_shape, ord);
  return coalesce(blocked_product(padded, rep), product_shape);
}

// ---- composed layouts: the product acts on the outer layout ----
ComposedLayout blocked_product(const ComposedLayout& b, const Layout& t) { return with_outer(b, blocked_product(b.outer, t)); }
ComposedLayout raked_product(const ComposedLayout& b, const Layout& t) { return with_outer(b, raked_product(b.outer, t)); }
ComposedLayout tile_to_shape(const ComposedLayout& b, const IntTuple& s, const IntTuple& o) {
  return with_outer(b, tile_to_shape(b.outer, s, o));
}

}  // namespace opencute::layout
