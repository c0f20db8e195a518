// A value crossing dynamic control flow flattens to (Structure, [IR values]); a Structure keeps
// everything static (the value itself as a template, and the IR types of its values) and
// rebuilds the value from new IR values. Python (cutlass/_dsl/carry.py) composes these with
// tuples, lists, scalars and user classes.
#include "bindings/carry_bindings.h"

#include <string>
#include <variant>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/layout_convert.h"
#include "bindings/num_convert.h"
#include "cute/carry.h"
#include "cute/pointer.h"
#include "cute/tensor.h"
#include "dsl/num.h"
#include "layout/print.h"

namespace nb = nanobind;

namespace opencute::bindings {
namespace {

namespace L = opencute::layout;
using cute::Tensor;
using cute::TensorSSA;
using dsl::Num;

// A pointer: its joined type, and the pointer object itself, whose own value protocol
// rebuilds it (keeping whatever else it carries, e.g. a byte-address swizzle).
struct PointerTemplate {
  ir::Type type = nullptr;
  nb::object object;
};

struct Structure {
  std::variant<Tensor, L::Layout, PointerTemplate, TensorSSA, L::ComposedLayout> value;
  std::vector<ir::Type> types;  // of the carried IR values, in order

  std::string describe() const {
    if (auto* t = std::get_if<Tensor>(&value)) return "tensor " + cute::to_string(*t);
    if (auto* l = std::get_if<L::Layout>(&value)) return "layout " + L::to_string(*l);
    if (auto* p = std::get_if<PointerTemplate>(&value)) return "pointer " + cute::pointer_string(p->type);
    if (auto* c = std::get_if<L::ComposedLayout>(&value)) return "layout " + L::to_string(*c);
    return std::get<TensorSSA>(value).str();
  }
};

nb::object cute_module() { return nb::module_::import_("cutlass._core").attr("cute"); }

std::vector<ir::Type> types_of(const std::vector<Num>& vals) {
  std::vector<ir::Type> out;
  for (const auto& v : vals) out.push_back(v.type);
  return out;
}

nb::list as_list(const std::vector<Num>& vals) {
  nb::list out;
  for (const auto& v : vals) out.append(v);
  return out;
}

std::vector<Num> nums_of(nb::handle values) {
  std::vector<Num> out;
  for (nb::handle v : values) out.push_back(to_num(v));
  return out;
}

// (structure, values), or None when `h` is not a C++ value with this protocol.
nb::object flatten(nb::handle h) {
  Structure s;
  std::vector<Num> vals;
  if (nb::isinstance<Tensor>(h)) {
    Tensor t = nb::cast<Tensor>(h);
    vals = cute::tensor_values(t);
    s.value = t;
  } else if (nb::isinstance<L::Layout>(h)) {
    L::Layout l = nb::cast<L::Layout>(h);
    vals = cute::tuple_values(l.shape);
    for (auto& v : cute::tuple_values(l.stride)) vals.push_back(v);
    s.value = l;
  } else if (nb::isinstance<L::ComposedLayout>(h)) {
    L::ComposedLayout c = nb::cast<L::ComposedLayout>(h);
    vals = cute::composed_values(c);
    s.value = c;
  } else if (nb::isinstance<TensorSSA>(h)) {
    TensorSSA t = nb::cast<TensorSSA>(h);
    vals = cute::tensor_ssa_values(t);
    s.value = t;
  } else if (nb::isinstance(h, cute_module().attr("_Pointer"))) {
    Num p = to_num(h.attr("_value"));
    vals = {p};
    s.value = PointerTemplate{p.type, nb::borrow(h)};
  } else {
    return nb::none();
  }
  s.types = types_of(vals);
  return nb::make_tuple(s, as_list(vals));
}

// (joined structure or None, widened, reason of a mismatch)
nb::tuple join(const Structure& a, const Structure& b) {
  auto mismatch = [&](const std::string& why) {
    return nb::make_tuple(nb::none(), false, why.empty() ? a.describe() + " and " + b.describe() : why);
  };
  if (a.value.index() != b.value.index()) return mismatch("");
  Structure r = a;
  bool widened = false;
  if (auto* t = std::get_if<Tensor>(&a.value)) {
    auto j = cute::join_tensor(*t, std::get<Tensor>(b.value));
    if (!j.value) return mismatch(j.why);
    r.value = *j.value;
    if (j.pointer_type) r.types[0] = j.pointer_type;
    widened = j.widened;
  } else if (auto* l = std::get_if<L::Layout>(&a.value)) {
    auto j = cute::join_layout(*l, std::get<L::Layout>(b.value));
    if (!j.value) return mismatch(j.why);
    r.value = *j.value;
    widened = j.widened;
  } else if (auto* p = std::get_if<PointerTemplate>(&a.value)) {
    const PointerTemplate& q = std::get<PointerTemplate>(b.value);
    auto j = cute::join_pointer_type(p->type, q.type);
    if (!j.value) return mismatch("pointer " + j.why);
    nb::object sa = nb::getattr(p->object, "swizzle", nb::none()), sb = nb::getattr(q.object, "swizzle", nb::none());
    if (!sa.equal(sb)) return mismatch("");
    r.value = PointerTemplate{*j.value, p->object};
    r.types[0] = *j.value;
    widened = j.widened;
  } else if (auto* c = std::get_if<L::ComposedLayout>(&a.value)) {
    auto j = cute::join_composed(*c, std::get<L::ComposedLayout>(b.value));
    if (!j.value) return mismatch(j.why);
    r.value = *j.value;
    widened = j.widened;
  } else {
    auto j = cute::join_tensor_ssa(std::get<TensorSSA>(a.value), std::get<TensorSSA>(b.value));
    if (!j.value) return mismatch(j.why);
  }
  return nb::make_tuple(r, widened, "");
}

// The values typed as the structure says: pointers with a stronger alignment than the join are
// recast (the address is the same); everything else already has the structure's type.
nb::list conform(const Structure& s, nb::handle values) {
  std::vector<Num> vals = nums_of(values);
  if (vals.size() != s.types.size()) throw nb::value_error("carried value count differs from its structure");
  for (size_t i = 0; i < vals.size(); ++i) {
    ir::Value* v = dsl::materialize(vals[i]);
    if (v->type != s.types[i]) {
      if (!v->type->is_pointer() || !s.types[i]->is_pointer())
        throw nb::value_error("carried value type differs from its structure");
      v = cute::trace_builder("dynamic control flow").bitcast(v, s.types[i]);
    }
    vals[i] = Num::of_value(v);
  }
  return as_list(vals);
}

nb::object rebuild(const Structure& s, nb::handle values) {
  std::vector<Num> vals = nums_of(values);
  if (auto* t = std::get_if<Tensor>(&s.value)) return nb::cast(cute::tensor_with_values(*t, vals));
  if (auto* l = std::get_if<L::Layout>(&s.value)) {
    size_t next = 0;
    L::IntTuple shape = cute::tuple_with_values(l->shape, vals, next);
    L::IntTuple stride = cute::tuple_with_values(l->stride, vals, next);
    return nb::cast(L::Layout(shape, stride));
  }
  if (auto* p = std::get_if<PointerTemplate>(&s.value)) {
    nb::list one;
    one.append(vals.at(0));
    return p->object.attr("__new_from_mlir_values__")(one);
  }
  if (auto* c = std::get_if<L::ComposedLayout>(&s.value)) return nb::cast(cute::composed_with_values(*c, vals));
  return nb::cast(cute::tensor_ssa_with_values(std::get<TensorSSA>(s.value), vals));
}

}  // namespace

void bind_carry(nb::module_& root) {
  nb::module_ m = root.def_submodule("carry", "values across dynamic control flow");
  nb::class_<Structure>(m, "Structure")
      .def("join", &join)
      .def("conform", &conform)
      .def("rebuild", &rebuild)
      .def_prop_ro("count", [](const Structure& s) { return s.types.size(); })
      .def("__str__", &Structure::describe);
  m.def("flatten", &flatten);
}

}  // namespace opencute::bindings
