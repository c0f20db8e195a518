// Functional composition of layouts (CuTe's composition), by-mode with tilers.
#include "layout/layout.h"
#include "layout/print.h"

namespace opencute::layout {

namespace {
bool is_one(const Int& v) { return v.is_static_value(1); }

Layout from_modes(std::vector<IntTuple> rs, std::vector<IntTuple> rd) {
  if (rs.size() == 1) return Layout(rs[0], rd[0]);
  return Layout(IntTuple(std::move(rs)), IntTuple(std::move(rd)));
}

// CuTe's general form, for strides that are only known at run time: divide the rhs stride out
// of the lhs modes, then take the rhs shape from what is left. Size-1 modes it cannot see stay
// (the notebook's dynamic example prints ((5,1),(2,2)):((16,4),(80,4))), and the divisibility
// condition is the caller's promise, as in CuTe.
Layout compose_mode_dynamic(const std::vector<IntTuple>& shapes, const std::vector<IntTuple>& strides, const Int& s,
                            const Int& d) {
  std::vector<IntTuple> divided, rd;
  Int rest_stride = d;
  for (size_t i = 0; i + 1 < shapes.size(); ++i) {
    const Int& cs = shapes[i].as_int();
    divided.push_back(shape_div(cs, rest_stride));
    rd.push_back(stride_scale(rest_stride, strides[i]));
    rest_stride = shape_div(rest_stride, cs);
  }
  rd.push_back(stride_scale(rest_stride, strides.back()));
  std::vector<IntTuple> rs;
  Int rest_shape = s;
  for (auto& m : divided) {
    rs.push_back(min(m.as_int(), rest_shape));
    rest_shape = shape_div(rest_shape, m.as_int());
  }
  rs.push_back(rest_shape);
  return from_modes(std::move(rs), std::move(rd));
}

// lhs o (s:d) for a single rhs mode with an integer stride d.
Layout compose_mode(const Layout& lhs, const Int& s, const Int& d) {
  if (d.is_static_value(0)) return Layout(s, 0);
  Layout flat = coalesce(lhs);
  std::vector<IntTuple> shapes = flatten_to_vector(flat.shape), strides = flatten_to_vector(flat.stride);
  bool needs_runtime_division = !d.is_static() && shapes.size() > 1;
  for (size_t i = 0; !d.is_static_value(1) && i + 1 < shapes.size(); ++i)
    if (!shapes[i].as_int().is_static()) needs_runtime_division = true;
  if (needs_runtime_division) return compose_mode_dynamic(shapes, strides, s, d);
  std::vector<IntTuple> rs, rd;
  Int rest_shape = s, rest_stride = d;
  for (size_t i = 0; i + 1 < shapes.size(); ++i) {
    const Int& cs = shapes[i].as_int();
    if (rest_shape.is_static_value(1) && rest_stride.is_static_value(1)) break;  // nothing left
    if (cs.is_static() && rest_stride.is_static()) {
      int64_t a = cs.value(), b = rest_stride.value();
      if (b != 0 && a % b != 0 && b % a != 0)
        throw LayoutError("composition: stride divisibility condition fails for " + to_string(lhs) + " o " +
                          to_string(Layout(s, d)));
    } else if (!rest_stride.is_static()) {
      throw LayoutError("composition: dynamic stride " + to_string(d) + " needs a single-mode lhs, got " +
                        to_string(lhs));
    }
    // new_shape = min(max(1, cs / rest_stride), rest_shape)
    Int q;
    if (is_one(rest_stride)) q = cs;
    else if (cs.is_static()) q = std::max<int64_t>(1, cs.value() / rest_stride.value());
    else if (cs.divisibility() % rest_stride.value() == 0) q = cs / rest_stride;
    else q = max(cs / rest_stride, 1);
    Int new_shape = rest_shape.is_static_value(1) ? Int(1) : min(q, rest_shape);
    if (!is_one(new_shape)) {
      rs.push_back(new_shape);
      rd.push_back(stride_scale(rest_stride, strides[i]));
    }
    rest_shape = shape_div(rest_shape, new_shape);
    rest_stride = ceil_div(rest_stride, cs);
  }
  if (!is_one(rest_shape) || rs.empty()) {
    rs.push_back(rest_shape);
    rd.push_back(stride_scale(rest_stride, strides.back()));
  }
  return from_modes(std::move(rs), std::move(rd));
}

Layout compose_rec(const Layout& lhs, const IntTuple& shape, const IntTuple& stride) {
  if (shape.is_tuple()) {
    std::vector<Layout> modes;
    for (int i = 0; i < shape.rank(); ++i) modes.push_back(compose_rec(lhs, shape[i], stride[i]));
    return make_layout(modes);
  }
  if (stride.is_basis()) {
    const ScaledBasis& b = stride.as_basis();
    return compose_mode(get(lhs, b.mode), shape.as_int(), b.value);
  }
  return compose_mode(lhs, shape.as_int(), stride.as_int());
}
}  // namespace

Layout composition(const Layout& lhs, const Layout& rhs) {
  try {
    return compose_rec(lhs, rhs.shape, rhs.stride);
  } catch (const LayoutError& e) {
    if (std::string(e.what()).rfind("composition:", 0) == 0) throw;
    throw LayoutError("composition: " + to_string(lhs) + " o " + to_string(rhs) + ": " + e.what());
  }
}

Layout composition(const Layout& lhs, const Tiler& rhs) {
  switch (rhs.kind) {
    case Tiler::Kind::Underscore: return lhs;
    case Tiler::Kind::Layout: return composition(lhs, rhs.layout);
    case Tiler::Kind::Tuple: {
      if (lhs.rank() < rhs.rank())
        throw LayoutError("composition: tiler " + to_string(rhs) + " has higher rank than layout " + to_string(lhs));
      std::vector<Layout> modes;
      for (int i = 0; i < lhs.rank(); ++i) modes.push_back(i < rhs.rank() ? composition(lhs[i], rhs.modes[i]) : lhs[i]);
      return make_layout(modes);
    }
  }
  return lhs;
}
Layout composition(const Layout& lhs, const IntTuple& tile) { return composition(lhs, Tiler::from_shape(tile)); }

ComposedLayout composition(const Swizzle& lhs, const Layout& rhs) { return make_composed_layout(lhs, 0, rhs); }
ComposedLayout composition(const ComposedLayout& lhs, const Tiler& rhs) {
  ComposedLayout r = lhs;
  r.outer = composition(lhs.outer, rhs);
  return r;
}

}  // namespace opencute::layout
