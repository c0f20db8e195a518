// Layout construction and queries.
#include "layout/layout.h"

#include <algorithm>
#include <numeric>

#include "layout/print.h"

namespace opencute::layout {

Layout::Layout(IntTuple shape_, IntTuple stride_) : shape(std::move(shape_)), stride(std::move(stride_)) {
  if (!congruent(shape, stride))
    throw LayoutError("make_layout: shape and stride must be congruent, got shape " + to_string(shape) +
                      " and stride " + to_string(stride));
  if (has_underscore(shape) || has_underscore(stride))
    throw LayoutError("make_layout: underscore in shape or stride " + to_string(shape) + ":" + to_string(stride));
}

Layout Layout::operator[](int i) const {
  if (i < 0 || i >= rank())
    throw LayoutError("get: mode " + std::to_string(i) + " out of range for " + to_string(*this));
  return Layout(shape[i], stride[i]);
}

IntTuple Layout::operator()(const IntTuple& coord) const { return crd2idx(coord, shape, stride); }

bool operator==(const Layout& a, const Layout& b) { return a.shape == b.shape && a.stride == b.stride; }

Tiler Tiler::from_shape(const IntTuple& shape) {
  switch (shape.kind()) {
    case IntTuple::Kind::Int: return Tiler(make_layout(shape));
    case IntTuple::Kind::Underscore: return Tiler::underscore();
    case IntTuple::Kind::Tuple: {
      std::vector<Tiler> modes;
      for (auto& e : shape.elems()) modes.push_back(from_shape(e));
      return Tiler(std::move(modes));
    }
    default: throw LayoutError("composition: invalid tile " + to_string(shape));
  }
}

// ---- construction ----
Layout make_layout(const IntTuple& shape) {
  if (has_underscore(shape) || has_basis(shape))
    throw LayoutError("make_layout: invalid shape " + to_string(shape));
  return Layout(shape, compact_col_major(shape));
}
Layout make_layout(const IntTuple& shape, const IntTuple& stride) { return Layout(shape, stride); }
Layout make_layout(const std::vector<Layout>& modes) {
  std::vector<IntTuple> shapes, strides;
  for (auto& m : modes) {
    shapes.push_back(m.shape);
    strides.push_back(m.stride);
  }
  return Layout(IntTuple(std::move(shapes)), IntTuple(std::move(strides)));
}

Layout make_ordered_layout(const IntTuple& shape, const IntTuple& order) {
  std::vector<IntTuple> leaves = flatten_to_vector(shape);
  // Each leaf gets a sort key (order value, leaf position): either `order` is congruent to the
  // shape, or it gives one value per top-level mode whose sub-modes then go column-major.
  std::vector<std::pair<int64_t, size_t>> keys;
  auto order_value = [&](const IntTuple& o) -> int64_t {
    if (!o.is_int() || !o.as_int().is_static())
      throw LayoutError("make_ordered_layout: order must be static integers, got " + to_string(order));
    return o.as_int().value();
  };
  if (congruent(shape, order)) {
    std::vector<IntTuple> ord = flatten_to_vector(order);
    for (size_t i = 0; i < leaves.size(); ++i) keys.push_back({order_value(ord[i]), i});
  } else if (order.rank() == shape.rank() && depth(order) <= 1) {
    size_t pos = 0;
    for (int m = 0; m < shape.rank(); ++m) {
      size_t n = flatten_to_vector(shape[m]).size();
      int64_t o = order_value(order[m]);
      for (size_t j = 0; j < n; ++j, ++pos) keys.push_back({o, pos});
    }
  } else {
    throw LayoutError("make_ordered_layout: order " + to_string(order) + " does not match shape " + to_string(shape));
  }
  std::vector<size_t> idx(leaves.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  std::vector<IntTuple> strides(leaves.size());
  Int acc = 1;
  for (size_t i : idx) {
    if (leaves[i].as_int().is_static_value(1)) {  // compact: size-1 modes get stride 0
      strides[i] = Int(0);
      continue;
    }
    strides[i] = acc;
    acc = acc * leaves[i].as_int();
  }
  return Layout(shape, unflatten(strides, shape));
}

static IntTuple basis_like(const IntTuple& shape, std::vector<int>& path) {
  if (shape.is_leaf()) {
    if (path.empty()) return Int(1);
    return ScaledBasis{Int(1), path};
  }
  std::vector<IntTuple> out;
  for (int i = 0; i < shape.rank(); ++i) {
    path.push_back(i);
    out.push_back(basis_like(shape[i], path));
    path.pop_back();
  }
  return IntTuple(std::move(out));
}
Layout make_identity_layout(const IntTuple& shape) {
  std::vector<int> path;
  return Layout(shape, basis_like(shape, path));
}

ComposedLayout make_composed_layout(const Swizzle& inner, const IntTuple& offset, const Layout& outer) {
  if (has_basis(outer.stride))
    throw LayoutError("make_composed_layout: a swizzle cannot compose with scaled-basis strides " + to_string(outer));
  ComposedLayout c;
  c.inner = inner;
  c.offset = offset;
  c.outer = outer;
  return c;
}
ComposedLayout make_composed_layout(const Layout& inner, const IntTuple& offset, const Layout& outer) {
  ComposedLayout c;
  c.inner = inner;
  c.offset = offset;
  c.outer = outer;
  return c;
}

// ---- queries ----
Int size(const IntTuple& t, const std::vector<int>& mode) { return product(get(t, mode)); }
Int size(const Layout& l, const std::vector<int>& mode) { return product(get(l.shape, mode)); }
Int size(const ComposedLayout& l, const std::vector<int>& mode) { return size(l.outer, mode); }

Int cosize(const Layout& l, const std::vector<int>& mode) {
  Layout m = get(l, mode);
  if (has_basis(m.stride)) throw LayoutError("cosize: scaled-basis strides have no cosize: " + to_string(l));
  std::vector<IntTuple> s = flatten_to_vector(m.shape), d = flatten_to_vector(m.stride);
  Int r = 1;
  for (size_t i = 0; i < s.size(); ++i) r = r + (s[i].as_int() - 1) * abs(d[i].as_int());
  return r;
}
Int cosize(const ComposedLayout& l, const std::vector<int>& mode) { return cosize(l.outer, mode); }

int rank(const IntTuple& t, const std::vector<int>& mode) { return get(t, mode).rank(); }
int rank(const Layout& l, const std::vector<int>& mode) { return get(l.shape, mode).rank(); }
int depth(const Layout& l, const std::vector<int>& mode) { return depth(get(l.shape, mode)); }
IntTuple shape(const Layout& l, const std::vector<int>& mode) { return get(l.shape, mode); }
static IntTuple tiler_shape(const Tiler& t) {
  switch (t.kind) {
    case Tiler::Kind::Layout: return t.layout.shape;
    case Tiler::Kind::Tuple: {
      std::vector<IntTuple> modes;
      for (const Tiler& m : t.modes) modes.push_back(tiler_shape(m));
      return IntTuple(std::move(modes));
    }
    case Tiler::Kind::Underscore: break;
  }
  throw LayoutError("shape: the tiler " + to_string(t) + " has a mode `_`, which has no shape");
}
IntTuple shape(const Tiler& t, const std::vector<int>& mode) { return get(tiler_shape(t), mode); }
Layout get(const Layout& l, const std::vector<int>& mode) {
  return Layout(get(l.shape, mode), get(l.stride, mode));
}
Layout select(const Layout& l, const std::vector<int>& modes) {
  return Layout(select(l.shape, modes), select(l.stride, modes));
}
Layout group_modes(const Layout& l, int begin, int end) {
  return Layout(group_modes(l.shape, begin, end), group_modes(l.stride, begin, end));
}
Layout slice(const IntTuple& coord, const Layout& l) {
  return Layout(slice(coord, l.shape), slice(coord, l.stride));
}
std::pair<Layout, IntTuple> slice_and_offset(const IntTuple& coord, const Layout& l) {
  return {slice(coord, l), crd2idx(coord, l.shape, l.stride)};
}
Layout dice(const IntTuple& coord, const Layout& l) { return Layout(dice(coord, l.shape), dice(coord, l.stride)); }
Layout prepend(const Layout& l, const Layout& x, int up_to_rank) {
  return Layout(prepend(l.shape, x.shape, up_to_rank), prepend(l.stride, x.stride, up_to_rank));
}
Layout append(const Layout& l, const Layout& x, int up_to_rank) {
  return Layout(append(l.shape, x.shape, up_to_rank), append(l.stride, x.stride, up_to_rank));
}
Layout flatten(const Layout& l) { return Layout(flatten(l.shape), flatten(l.stride)); }

int64_t max_alignment(const Layout& l) {
  std::vector<IntTuple> shapes = flatten_to_vector(l.shape), strides = flatten_to_vector(l.stride);
  int64_t contiguous = 1;  // the leading modes so far cover [0, contiguous) in order
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (!shapes[i].is_int()) break;
    const Int& s = shapes[i].as_int();
    if (s.is_static_value(1)) continue;  // a mode of one coordinate moves nothing
    if (!strides[i].is_int() || !strides[i].as_int().is_static() || strides[i].as_int().value() != contiguous) break;
    if (!s.is_static()) {
      contiguous *= s.divisibility();
      break;
    }
    contiguous *= s.value();
  }
  return contiguous & -contiguous;  // the largest power of two dividing it
}
IntTuple crd2idx(const IntTuple& coord, const Layout& l) { return crd2idx(coord, l.shape, l.stride); }
IntTuple idx2crd(const IntTuple& idx, const Layout& l) { return idx2crd(idx, l.shape); }

}  // namespace opencute::layout
