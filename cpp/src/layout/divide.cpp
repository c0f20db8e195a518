// logical_divide and its zipped / tiled / flat rearrangements.
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

Layout logical_divide(const Layout& l, const Tiler& tiler) {
  switch (tiler.kind) {
    case Tiler::Kind::Underscore: return l;
    case Tiler::Kind::Tuple: {
      if (l.rank() < tiler.rank())
        throw LayoutError("logical_divide: tiler " + to_string(tiler) + " has higher rank than layout " + to_string(l));
      std::vector<Layout> modes;
      for (int i = 0; i < l.rank(); ++i) modes.push_back(i < tiler.rank() ? logical_divide(l[i], tiler.modes[i]) : l[i]);
      return make_layout(modes);
    }
    case Tiler::Kind::Layout: {
      const Layout& b = tiler.layout;
      try {
        return composition(l, make_layout({b, complement(b, size(l))}));
      } catch (const LayoutError& e) {
        throw LayoutError("logical_divide: " + to_string(l) + " by " + to_string(b) + ": " + e.what());
      }
    }
  }
  return l;
}


Layout zipped_divide(const Layout& l, const Tiler& tiler) {
  return zipped(unzip(logical_divide(l, tiler), tiler));
}
Layout tiled_divide(const Layout& l, const Tiler& tiler) {
  return tiled(unzip(logical_divide(l, tiler), tiler));
}
Layout flat_divide(const Layout& l, const Tiler& tiler) {
  return flat(unzip(logical_divide(l, tiler), tiler));
}

// ---- composed layouts: the algebra acts on the outer layout ----
ComposedLayout logical_divide(const ComposedLayout& l, const Tiler& t) { return with_outer(l, logical_divide(l.outer, t)); }
ComposedLayout zipped_divide(const ComposedLayout& l, const Tiler& t) { return with_outer(l, zipped_divide(l.outer, t)); }
ComposedLayout tiled_divide(const ComposedLayout& l, const Tiler& t) { return with_outer(l, tiled_divide(l.outer, t)); }
ComposedLayout flat_divide(const ComposedLayout& l, const Tiler& t) { return with_outer(l, flat_divide(l.outer, t)); }
}  // namespace opencute::layout
