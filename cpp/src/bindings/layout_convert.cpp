// Python <-> C++ conversions of the layout algebra's values, shared by the layout and tensor
// bindings: Python ints are static leaves, DSL integer proxies dynamic ones, None is `_`.
#include "bindings/layout_convert.h"

#include <optional>
#include <string>
#include <vector>

#include "dsl/tracer.h"

namespace nb = nanobind;

namespace opencute::bindings {

namespace L = opencute::layout;
using dsl::Num;

nb::object& int_wrapper() {  // (Num, divisibility) -> DSL integer proxy; set from Python
  static nb::object* o = new nb::object();
  return *o;
}
nb::object& error_class() {  // the DSL error class LayoutError surfaces as; set from Python
  static nb::object* o = new nb::object();
  return *o;
}

Scope::Scope() {
  if (auto* t = dsl::Tracer::current()) scope.emplace(&t->builder());
}

std::string py_type_name(nb::handle h) { return nb::type_name(h.type()).c_str(); }

bool is_seq(nb::handle h) { return PyTuple_Check(h.ptr()) || PyList_Check(h.ptr()); }

// ---- Python -> C++ -------------------------------------------------------------------------

L::Int to_int(nb::handle h) {
  if (PyBool_Check(h.ptr())) return L::Int(int64_t(h.ptr() == Py_True));
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow) throw dsl::UserError("TYPE_CONVERSION", "integer out of the 64-bit range in a layout");
    return L::Int(int64_t(v));
  }
  Num n;
  int64_t div = 1;
  if (nb::isinstance<Num>(h)) {
    n = nb::cast<Num>(h);
  } else if (nb::hasattr(h, "_n")) {
    n = nb::cast<Num>(h.attr("_n"));
    nb::object d = nb::getattr(h, "_div", nb::none());
    if (!d.is_none()) div = nb::cast<int64_t>(d);
  } else {
    throw nb::type_error(("expected an int, a DSL integer or a tuple of them, got " + py_type_name(h)).c_str());
  }
  if (n.type->is_float())
    throw nb::type_error(("layout leaves must be integers, got " + dsl::num_repr(n)).c_str());
  if (!dsl::Tracer::current()) {
    if (n.is_static) return L::Int(int64_t(n.s.i));
    throw dsl::UserError("PHASE_OUTSIDE_JIT", "a dynamic layout leaf needs a @cute.jit trace");
  }
  // A DSL integer is a run-time value for the algebra even when its value is known now: CuTe
  // types `make_layout(..., stride=(cutlass.Int32(6), 2))` as `(?,2)` and keeps the algebra on
  // it dynamic. A constant IR value would fold back to a static leaf, so a static proxy is
  // first made opaque (stored to and reloaded from a one-element local array), and the proxy
  // is updated to that value so that later uses share it -- only when made in a function's own
  // body: a value made inside a dynamic region does not reach uses after it (a proxy defined
  // before a loop and first used as a layout leaf inside it stays static for the code after).
  if (n.is_static) {
    ir::Builder& b = dsl::Tracer::current()->builder();
    ir::Value* slot = b.local_array(n.type, 1, int(n.type->byte_size()));
    b.store(dsl::materialize(n), slot);
    Num opaque = Num::of_value(b.load(slot, n.type));
    if (!nb::isinstance<Num>(h) && b.block()->parent_op == nullptr) nb::setattr(h, "_n", nb::cast(opaque));
    n = opaque;
  }
  return L::Int::dynamic(n.value, div);
}

L::IntTuple to_tuple(nb::handle h) {
  if (h.is_none()) return L::IntTuple::underscore();
  if (is_seq(h)) {
    std::vector<L::IntTuple> v;
    for (nb::handle e : h) v.push_back(to_tuple(e));
    return L::IntTuple(std::move(v));
  }
  if (nb::isinstance<L::ScaledBasis>(h)) return L::IntTuple(nb::cast<L::ScaledBasis>(h));
  return L::IntTuple(to_int(h));
}

std::vector<int> to_mode(nb::handle h) {
  std::vector<int> out;
  if (h.is_none()) return out;
  if (is_seq(h)) {
    for (nb::handle e : h) out.push_back(nb::cast<int>(e));
  } else {
    out.push_back(nb::cast<int>(h));
  }
  return out;
}

bool is_layout(nb::handle h) { return nb::isinstance<L::Layout>(h); }
bool is_composed(nb::handle h) { return nb::isinstance<L::ComposedLayout>(h); }
bool is_swizzle(nb::handle h) { return nb::isinstance<L::Swizzle>(h); }
L::Layout as_layout(nb::handle h) { return nb::cast<L::Layout>(h); }
L::ComposedLayout as_composed(nb::handle h) { return nb::cast<L::ComposedLayout>(h); }

// A Layout, or a shape made into a compact layout.
L::Layout layout_or_shape(nb::handle h) {
  if (is_layout(h)) return as_layout(h);
  return L::make_layout(to_tuple(h));
}

L::Layout require_layout(nb::handle h, const char* fn) {
  if (!is_layout(h))
    throw nb::type_error((std::string(fn) + ": expected a Layout, got " + py_type_name(h)).c_str());
  return as_layout(h);
}

bool tiler_has_layout(nb::handle h) {
  if (is_layout(h) || h.is_none()) return true;
  if (is_seq(h))
    for (nb::handle e : h)
      if (tiler_has_layout(e)) return true;
  return false;
}

L::Tiler to_tiler(nb::handle h) {
  if (is_layout(h)) return L::Tiler(as_layout(h));
  if (h.is_none()) return L::Tiler::underscore();
  if (is_seq(h) && tiler_has_layout(h)) {
    std::vector<L::Tiler> modes;
    for (nb::handle e : h) modes.push_back(to_tiler(e));
    return L::Tiler(std::move(modes));
  }
  return L::Tiler::from_shape(to_tuple(h));
}

// ---- C++ -> Python -------------------------------------------------------------------------

nb::object to_py(const L::Int& v) {
  if (v.is_static()) return nb::int_(v.value());
  return int_wrapper()(Num::of_value(v.ir_value()), v.divisibility());
}

nb::object to_py(const L::IntTuple& t) {
  switch (t.kind()) {
    case L::IntTuple::Kind::Int: return to_py(t.as_int());
    case L::IntTuple::Kind::Basis: return nb::cast(t.as_basis());
    case L::IntTuple::Kind::Underscore: return nb::none();
    case L::IntTuple::Kind::Tuple: break;
  }
  nb::list out;
  for (const auto& e : t.elems()) out.append(to_py(e));
  return nb::tuple(out);
}

nb::object to_bool(const L::Int& v) {
  if (v.is_static()) return nb::bool_(v.value() != 0);
  return to_py(v);
}

nb::object py(L::Layout l) { return nb::cast(std::move(l)); }
nb::object py(L::ComposedLayout l) { return nb::cast(std::move(l)); }

}  // namespace opencute::bindings
