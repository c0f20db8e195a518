// Swizzle functors, composed layouts, and recast_layout.
#include <algorithm>
#include <functional>

#include "layout/layout.h"
#include "layout/print.h"

namespace opencute::layout {

Swizzle make_swizzle(int b, int m, int s) {
  if (b < 0 || m < 0 || (s < 0 ? -s : s) < b)
    throw LayoutError("make_swizzle: invalid S<" + std::to_string(b) + "," + std::to_string(m) + "," +
                      std::to_string(s) + "> (need B >= 0, M >= 0, |S| >= B)");
  if (b == 0) return Swizzle{0, 4, 3};
  return Swizzle{b, m, s};
}

int64_t Swizzle::operator()(int64_t offset) const {
  if (bits == 0) return offset;
  int64_t mask = (int64_t(1) << bits) - 1;
  if (shift >= 0) return offset ^ ((offset & (mask << (base + shift))) >> shift);
  return offset ^ ((offset & (mask << base)) << -shift);
}

Int Swizzle::operator()(const Int& offset) const {
  if (offset.is_static()) return (*this)(offset.value());
  if (bits == 0) return offset;
  ir::Builder* b = current_builder();
  if (!b) throw LayoutError("swizzle: dynamic offset with no IR builder installed");
  ir::Value* x = offset.ir_value();
  ir::Type t = x->type;
  int64_t mask = (int64_t(1) << bits) - 1;
  ir::Value* sel;
  if (shift >= 0) {
    sel = b->binary(ir::OpCode::And, x, b->const_int(t, mask << (base + shift)));
    sel = b->binary(ir::OpCode::Shr, sel, b->const_int(t, shift));
  } else {
    sel = b->binary(ir::OpCode::And, x, b->const_int(t, mask << base));
    sel = b->binary(ir::OpCode::Shl, sel, b->const_int(t, -shift));
  }
  int64_t keep = int64_t(1) << std::min<int64_t>(base, 62);
  return Int::dynamic(b->binary(ir::OpCode::Xor, x, sel), gcd64(offset.divisibility(), keep));
}

IntTuple ComposedLayout::operator()(const IntTuple& coord) const {
  IntTuple idx = offset_add(offset, outer(coord));
  if (inner_is_swizzle()) {
    if (!idx.is_int()) throw LayoutError("swizzle: offset must be an integer, got " + to_string(idx));
    return swizzle()(idx.as_int());
  }
  return inner_layout()(idx);
}

bool operator==(const ComposedLayout& a, const ComposedLayout& b) {
  if (a.inner_is_swizzle() != b.inner_is_swizzle()) return false;
  if (a.inner_is_swizzle() ? !(a.swizzle() == b.swizzle()) : !(a.inner_layout() == b.inner_layout())) return false;
  return a.offset == b.offset && a.outer == b.outer;
}

namespace {
IntTuple zip_layout(const IntTuple& shape, const IntTuple& stride, IntTuple* out_stride,
                    const std::function<std::pair<IntTuple, IntTuple>(const Int&, const IntTuple&)>& f) {
  if (shape.is_tuple()) {
    std::vector<IntTuple> s, d;
    for (int i = 0; i < shape.rank(); ++i) {
      IntTuple di;
      s.push_back(zip_layout(shape[i], stride[i], &di, f));
      d.push_back(di);
    }
    *out_stride = IntTuple(std::move(d));
    return IntTuple(std::move(s));
  }
  auto [s, d] = f(shape.as_int(), stride);
  *out_stride = d;
  return s;
}

Layout upcast(int64_t n, const Layout& l) {
  IntTuple stride;
  IntTuple shape = zip_layout(l.shape, l.stride, &stride, [n](const Int& s, const IntTuple& d) -> std::pair<IntTuple, IntTuple> {
    if (!d.is_int()) throw LayoutError("recast_layout: scaled-basis strides not supported");
    const Int& di = d.as_int();
    if (di.is_static_value(0)) return {s, d};
    if (di.is_static()) {
      int64_t a = di.value() < 0 ? -di.value() : di.value();
      return {shape_div(s, shape_div(Int(n), Int(a))), shape_div(di, Int(n))};
    }
    return {s, di / Int(n)};
  });
  return Layout(shape, stride);
}
Layout downcast(int64_t n, const Layout& l) {
  IntTuple stride;
  IntTuple shape = zip_layout(l.shape, l.stride, &stride, [n](const Int& s, const IntTuple& d) -> std::pair<IntTuple, IntTuple> {
    if (!d.is_int()) throw LayoutError("recast_layout: scaled-basis strides not supported");
    if (d.as_int().is_static_value(1)) return {s * Int(n), d};
    return {s, d.as_int() * Int(n)};
  });
  return Layout(shape, stride);
}
}  // namespace

Layout recast_layout(int new_type_bits, int old_type_bits, const Layout& layout) {
  if (new_type_bits <= 0 || old_type_bits <= 0)
    throw LayoutError("recast_layout: type widths must be positive, got " + std::to_string(new_type_bits) + " and " +
                      std::to_string(old_type_bits));
  int64_t g = gcd64(new_type_bits, old_type_bits);
  int64_t num = new_type_bits / g, den = old_type_bits / g;
  try {
    if (num == 1 && den == 1) return layout;
    if (num == 1) return downcast(den, layout);
    if (den == 1) return upcast(num, layout);
    return upcast(num, downcast(den, layout));
  } catch (const LayoutError& e) {
    if (std::string(e.what()).rfind("recast_layout:", 0) == 0) throw;
    throw LayoutError("recast_layout: " + to_string(layout) + ": " + e.what());
  }
}

namespace {
int log2_exact(const char* fn, int64_t n) {
  if (n <= 0 || (n & (n - 1)) != 0) throw LayoutError(std::string(fn) + ": " + std::to_string(n) + " is not a power of two");
  int k = 0;
  while ((int64_t(1) << k) < n) ++k;
  return k;
}
}  // namespace

Swizzle upcast(const Swizzle& s, int64_t n) {
  int k = log2_exact("upcast", n);
  int m = s.base - k;
  if (m >= 0) return make_swizzle(s.bits, m, s.shift);
  return make_swizzle(std::max(s.bits + m, 0), 0, s.shift);
}
Swizzle downcast(const Swizzle& s, int64_t n) {
  int k = log2_exact("downcast", n);
  return make_swizzle(s.bits, s.base + k, s.shift);
}

ComposedLayout recast_layout(int new_type_bits, int old_type_bits, const ComposedLayout& layout) {
  if (new_type_bits == old_type_bits) return layout;
  ComposedLayout r = layout;
  r.outer = recast_layout(new_type_bits, old_type_bits, layout.outer);
  if (!layout.inner_is_swizzle()) {
    r.inner = recast_layout(new_type_bits, old_type_bits, layout.inner_layout());
    return r;
  }
  int64_t g = gcd64(new_type_bits, old_type_bits);
  int64_t num = new_type_bits / g, den = old_type_bits / g;
  Swizzle sw = layout.swizzle();
  try {
    if (num != 1) sw = upcast(sw, num);
    if (den != 1) sw = downcast(sw, den);
  } catch (const LayoutError& e) {
    throw LayoutError("recast_layout: " + to_string(layout) + ": " + e.what());
  }
  r.inner = sw;
  if (!layout.offset.is_int())
    throw LayoutError("recast_layout: offset must be an integer, got " + to_string(layout.offset));
  r.offset = layout.offset.as_int() * Int(den) / Int(num);
  return r;
}

Int max_common_vector(const ComposedLayout& a, const Layout& b) {
  Int v = max_common_vector(a.outer, b);
  if (!a.inner_is_swizzle()) return 1;
  return min(v, Int(int64_t(1) << a.swizzle().base));
}
Int max_common_vector(const Layout& a, const ComposedLayout& b) { return max_common_vector(b, a); }
Int max_common_vector(const ComposedLayout& a, const ComposedLayout& b) {
  if (!a.inner_is_swizzle() || !b.inner_is_swizzle()) return 1;
  Int v = max_common_vector(a.outer, b.outer);
  if (a.swizzle() == b.swizzle()) return v;
  return min(min(v, Int(int64_t(1) << a.swizzle().base)), Int(int64_t(1) << b.swizzle().base));
}

}  // namespace opencute::layout
