#include "cute/carry.h"

#include <algorithm>

#include "cute/pointer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;

namespace {

// Joins two leaves into `out`; returns false on a mismatch.
bool join_int(const L::Int& a, const L::Int& b, L::Int& out, bool& widened) {
  if (a.is_static() != b.is_static()) return false;
  if (a.is_static()) {
    out = a;
    return a.value() == b.value();
  }
  if (a.ir_value()->type != b.ir_value()->type) return false;
  int64_t div = L::gcd64(a.divisibility(), b.divisibility());
  if (div != a.divisibility()) widened = true;
  out = L::Int::dynamic(a.ir_value(), std::max<int64_t>(div, 1));
  return true;
}

bool join_tree(const L::IntTuple& a, const L::IntTuple& b, L::IntTuple& out, bool& widened) {
  if (a.is_tuple() != b.is_tuple()) return false;
  if (a.is_tuple()) {
    if (a.elems().size() != b.elems().size()) return false;
    std::vector<L::IntTuple> elems(a.elems().size());
    for (size_t i = 0; i < elems.size(); ++i)
      if (!join_tree(a.elems()[i], b.elems()[i], elems[i], widened)) return false;
    out = L::IntTuple(elems);
    return true;
  }
  if (a.is_underscore() || b.is_underscore()) {
    out = a;
    return a.is_underscore() && b.is_underscore();
  }
  if (a.is_int() != b.is_int()) return false;
  if (a.is_int()) {
    L::Int v;
    if (!join_int(a.as_int(), b.as_int(), v, widened)) return false;
    out = L::IntTuple(v);
    return true;
  }
  const L::ScaledBasis &x = a.as_basis(), &y = b.as_basis();
  if (x.mode != y.mode) return false;
  L::ScaledBasis r = x;
  if (!join_int(x.value, y.value, r.value, widened)) return false;
  out = L::IntTuple(r);
  return true;
}

void collect(const L::IntTuple& t, std::vector<dsl::Num>& out) {
  if (t.is_tuple()) {
    for (const auto& e : t.elems()) collect(e, out);
  } else if (t.is_int() && t.as_int().is_dynamic()) {
    out.push_back(dsl::Num::of_value(t.as_int().ir_value()));
  } else if (t.is_basis() && t.as_basis().value.is_dynamic()) {
    out.push_back(dsl::Num::of_value(t.as_basis().value.ir_value()));
  }
}

}  // namespace

Join<L::IntTuple> join_tuple(const L::IntTuple& a, const L::IntTuple& b) {
  Join<L::IntTuple> j;
  L::IntTuple out;
  if (join_tree(a, b, out, j.widened)) {
    j.value = out;
  } else {
    j.why = L::to_string(a) + " and " + L::to_string(b);
  }
  return j;
}

Join<L::Layout> join_layout(const L::Layout& a, const L::Layout& b) {
  Join<L::Layout> j;
  L::IntTuple shape, stride;
  if (join_tree(a.shape, b.shape, shape, j.widened) && join_tree(a.stride, b.stride, stride, j.widened)) {
    j.value = L::Layout(shape, stride);
  } else {
    j.why = "layout " + L::to_string(a) + " and layout " + L::to_string(b);
  }
  return j;
}

Join<L::ComposedLayout> join_composed(const L::ComposedLayout& a, const L::ComposedLayout& b) {
  Join<L::ComposedLayout> j;
  j.why = "layout " + L::to_string(a) + " and layout " + L::to_string(b);
  if (a.inner_is_swizzle() != b.inner_is_swizzle()) return j;
  L::ComposedLayout r = a;
  if (a.inner_is_swizzle()) {
    if (!(a.swizzle() == b.swizzle())) return j;
  } else {
    auto inner = join_layout(a.inner_layout(), b.inner_layout());
    if (!inner.value) return j;
    r.inner = *inner.value;
    j.widened |= inner.widened;
  }
  auto outer = join_layout(a.outer, b.outer);
  auto offset = join_tuple(a.offset, b.offset);
  if (!outer.value || !offset.value) return j;
  r.outer = *outer.value;
  r.offset = *offset.value;
  j.widened |= outer.widened || offset.widened;
  j.value = r;
  j.why.clear();
  return j;
}

std::vector<dsl::Num> composed_values(const L::ComposedLayout& c) {
  std::vector<dsl::Num> vals;
  if (!c.inner_is_swizzle()) {
    collect(c.inner_layout().shape, vals);
    collect(c.inner_layout().stride, vals);
  }
  collect(c.offset, vals);
  collect(c.outer.shape, vals);
  collect(c.outer.stride, vals);
  return vals;
}

L::ComposedLayout composed_with_values(const L::ComposedLayout& c, const std::vector<dsl::Num>& vals) {
  size_t next = 0;
  L::ComposedLayout r = c;
  if (!c.inner_is_swizzle()) {
    L::IntTuple s = tuple_with_values(c.inner_layout().shape, vals, next);
    L::IntTuple d = tuple_with_values(c.inner_layout().stride, vals, next);
    r.inner = L::Layout(s, d);
  }
  r.offset = tuple_with_values(c.offset, vals, next);
  L::IntTuple s = tuple_with_values(c.outer.shape, vals, next);
  L::IntTuple d = tuple_with_values(c.outer.stride, vals, next);
  r.outer = L::Layout(s, d);
  return r;
}

Join<ir::Type> join_pointer_type(ir::Type a, ir::Type b) {
  Join<ir::Type> j;
  if (a->element != b->element || a->space != b->space) {
    j.why = pointer_string(a) + " and " + pointer_string(b);
    return j;
  }
  int align = std::min(a->align, b->align);
  j.widened = align != a->align;
  j.value = ir::pointer_type(a->element, a->space, align);
  return j;
}

// A tripwire for whoever adds state to cute::Tensor (a swizzle, a composed layout): it must be
// compared in join_tensor and its IR values carried by tensor_values / tensor_with_values.
struct TensorFieldsKnownHere {
  ir::Value* ptr;
  L::IntTuple coord;
  L::Layout layout;
  std::optional<L::Swizzle> swizzle;
  L::Int swizzle_offset;
  bool swizzle_in_address;
  std::optional<L::Layout> desc_tile;  // static: compared, no IR values
  ir::Value* desc_value;               // carried when present
};
static_assert(sizeof(Tensor) == sizeof(TensorFieldsKnownHere),
              "cute::Tensor gained a field: join, flatten and rebuild it in cute/carry.cpp");

Join<Tensor> join_tensor(const Tensor& a, const Tensor& b) {
  Join<Tensor> j;
  j.why = "tensor " + to_string(a) + " and tensor " + to_string(b);
  if (a.is_memory() != b.is_memory()) return j;
  Tensor r = a;
  if (a.is_memory()) {
    Join<ir::Type> p = join_pointer_type(a.ptr->type, b.ptr->type);
    if (!p.value) return j;
    j.widened |= p.widened;
    j.pointer_type = *p.value;
  }
  if (a.swizzle.has_value() != b.swizzle.has_value() || (a.swizzle && !(*a.swizzle == *b.swizzle)) ||
      a.swizzle_in_address != b.swizzle_in_address)
    return j;
  if (a.desc_tile.has_value() != b.desc_tile.has_value() ||
      (a.desc_tile && L::to_string(*a.desc_tile) != L::to_string(*b.desc_tile)) ||
      (a.desc_value == nullptr) != (b.desc_value == nullptr))
    return j;
  bool widened = false;
  L::IntTuple coord, shape, stride, offset;
  if (!join_tree(a.coord, b.coord, coord, widened) || !join_tree(a.layout.shape, b.layout.shape, shape, widened) ||
      !join_tree(a.layout.stride, b.layout.stride, stride, widened) ||
      !join_tree(L::IntTuple(a.swizzle_offset), L::IntTuple(b.swizzle_offset), offset, widened))
    return j;
  r.swizzle_offset = offset.as_int();
  r.coord = coord;
  r.layout = L::Layout(shape, stride);
  j.widened |= widened;
  j.value = r;
  j.why.clear();
  return j;
}

Join<TensorSSA> join_tensor_ssa(const TensorSSA& a, const TensorSSA& b) {
  Join<TensorSSA> j;
  if (a.element != b.element || python_shape_string(a.shape) != python_shape_string(b.shape)) {
    j.why = a.str() + " and " + b.str();
    return j;
  }
  j.value = a;
  return j;
}

std::vector<dsl::Num> tuple_values(const L::IntTuple& t) {
  std::vector<dsl::Num> out;
  collect(t, out);
  return out;
}

L::IntTuple tuple_with_values(const L::IntTuple& t, const std::vector<dsl::Num>& vals, size_t& next) {
  if (t.is_tuple()) {
    std::vector<L::IntTuple> out;
    for (const auto& e : t.elems()) out.push_back(tuple_with_values(e, vals, next));
    return L::IntTuple(out);
  }
  if (t.is_int() && t.as_int().is_dynamic())
    return L::IntTuple(L::Int::dynamic(vals.at(next++).value, t.as_int().divisibility()));
  if (t.is_basis() && t.as_basis().value.is_dynamic()) {
    L::ScaledBasis b = t.as_basis();
    b.value = L::Int::dynamic(vals.at(next++).value, b.value.divisibility());
    return L::IntTuple(b);
  }
  return t;
}

std::vector<dsl::Num> tensor_values(const Tensor& t) {
  std::vector<dsl::Num> vals;
  if (t.is_memory()) vals.push_back(dsl::Num::of_value(t.ptr));
  collect(t.coord, vals);
  collect(t.layout.shape, vals);
  collect(t.layout.stride, vals);
  if (t.is_swizzled()) collect(L::IntTuple(t.swizzle_offset), vals);
  if (t.desc_value) vals.push_back(dsl::Num::of_value(t.desc_value));
  return vals;
}

Tensor tensor_with_values(const Tensor& t, const std::vector<dsl::Num>& vals) {
  size_t next = 0;
  Tensor r = t;
  if (t.is_memory()) r.ptr = vals.at(next++).value;
  r.coord = tuple_with_values(t.coord, vals, next);
  L::IntTuple shape = tuple_with_values(t.layout.shape, vals, next);
  L::IntTuple stride = tuple_with_values(t.layout.stride, vals, next);
  r.layout = L::Layout(shape, stride);
  if (t.is_swizzled()) r.swizzle_offset = tuple_with_values(L::IntTuple(t.swizzle_offset), vals, next).as_int();
  if (t.desc_value) r.desc_value = vals.at(next++).value;
  return r;
}

std::vector<dsl::Num> tensor_ssa_values(const TensorSSA& t) {
  std::vector<dsl::Num> out;
  for (const auto& v : t.values) out.push_back(dsl::Num::of_value(dsl::materialize(v)));
  return out;
}

TensorSSA tensor_ssa_with_values(const TensorSSA& t, const std::vector<dsl::Num>& vals) {
  TensorSSA r = t;
  r.values = vals;
  return r;
}

}  // namespace opencute::cute
