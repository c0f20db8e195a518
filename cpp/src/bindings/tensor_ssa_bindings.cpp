// Bindings of cute::TensorSSA (cpp/src/cute/tensor_ssa.h). Operands arrive as C++ TensorSSA or
// Num objects (the Python class converts Python scalars with as_numeric first); shapes, keys and
// reduction profiles arrive as Python ints / tuples / None / DSL integers. No semantics here.
#include "bindings/tensor_ssa_bindings.h"
#include "bindings/num_convert.h"
#include "bindings/python_errors.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "cute/tensor_ssa.h"
#include "dsl/dtype.h"

namespace nb = nanobind;

namespace opencute::bindings {
namespace {

using cute::Operand;
using cute::TensorSSA;
using dsl::Num;
namespace L = opencute::layout;

nb::object& error_class() {  // cute.TensorSSAError, set from Python
  static nb::object* o = new nb::object();
  return *o;
}

std::string py_type_name(nb::handle h) { return nb::type_name(h.type()).c_str(); }

Num num_of(nb::handle h) {
  if (nb::isinstance<Num>(h)) return nb::cast<Num>(h);
  nb::object inner = nb::getattr(h, "_n", nb::none());
  if (!inner.is_none()) return nb::cast<Num>(inner);
  throw nb::type_error(("expected a DSL numeric value, got " + py_type_name(h)).c_str());
}

Operand operand(nb::handle h) {
  if (nb::isinstance<TensorSSA>(h)) return nb::cast<TensorSSA>(h);
  return num_of(h);
}

// An operand of arithmetic, comparisons and math: Python ints and floats stay Python literals
// (they take the tensor's element type where they can, see dsl::python_literal_int).
Operand arithmetic_operand(nb::handle h) {
  if (nb::isinstance<TensorSSA>(h)) return nb::cast<TensorSSA>(h);
  return to_operand(h);
}

std::vector<Operand> arithmetic_operands(nb::handle seq) {
  std::vector<Operand> out;
  for (nb::handle h : seq) out.push_back(arithmetic_operand(h));
  return out;
}

// Python shape / coordinate / profile -> IntTuple: ints are static leaves, DSL integers dynamic
// ones (static proxies fold to static leaves), None is `_`.
L::IntTuple to_key(nb::handle h) {
  if (h.is_none()) return L::IntTuple::underscore();
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    std::vector<L::IntTuple> v;
    for (nb::handle e : h) v.push_back(to_key(e));
    return L::IntTuple(std::move(v));
  }
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow) throw nb::value_error("integer out of the 64-bit range");
    return L::Int(int64_t(v));
  }
  if (!nb::hasattr(h, "_n"))
    throw nb::type_error(("expected an int, a DSL integer, None or a tuple of them, got " + py_type_name(h)).c_str());
  Num n = num_of(h);
  if (!n.type->is_int())
    throw nb::type_error(("TensorSSA shapes and indices are integers, got " + dsl::num_repr(n)).c_str());
  if (n.is_static) return L::Int(int64_t(n.s.i));
  if (n.type->width < 32) n = dsl::convert(n, ir::i32());
  return L::Int::dynamic(n.value);
}

nb::object shape_to_py(const L::IntTuple& t) {
  if (t.is_int()) return nb::int_(t.as_int().value());
  nb::list out;
  for (auto& e : t.elems()) out.append(shape_to_py(e));
  return nb::tuple(out);
}

nb::object result(std::variant<TensorSSA, Num> r) {
  if (auto* t = std::get_if<TensorSSA>(&r)) return nb::cast(std::move(*t));
  return nb::cast(std::get<Num>(r));
}

ir::Type dtype(const std::string& name) { return dsl::dtype_from_name(name); }

void translate_tensor_ssa_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const cute::TensorSSAError& e) {
    raise_python_error(error_class(), e.what(), e.code.c_str(), PyExc_ValueError);
  }
}

}  // namespace

void bind_tensor_ssa(nb::module_& m) {
  nb::register_exception_translator(&translate_tensor_ssa_error);
  m.def("_set_ssa_error_class", [](nb::object c) { error_class() = c; });

  nb::class_<TensorSSA>(m, "TensorSSA")
      .def_prop_ro("shape", [](const TensorSSA& t) { return shape_to_py(t.shape); })
      .def_prop_ro("dtype", [](const TensorSSA& t) { return dsl::dtype_name(t.element); })
      .def_prop_ro("size", &TensorSSA::size)
      .def_prop_ro("vector_type", &TensorSSA::vector_type)
      .def("values", [](const TensorSSA& t) { return t.values; })
      .def("__str__", &TensorSSA::str);

  m.def("ssa_from_values", [](nb::handle shape, const std::string& dt, nb::handle values) {
    std::vector<Num> v;
    for (nb::handle h : values) v.push_back(num_of(h));
    return TensorSSA::from_values(to_key(shape), dtype(dt), std::move(v));
  });
  m.def("ssa_full", [](nb::handle shape, nb::handle fill, const std::string& dt) {
    return TensorSSA::full(to_key(shape), num_of(fill), dtype(dt));
  });
  m.def("ssa_binary", [](int op, nb::handle a, nb::handle b) {
    return cute::binary(dsl::BinOp(op), arithmetic_operand(a), arithmetic_operand(b));
  });
  m.def("ssa_compare", [](int p, nb::handle a, nb::handle b) {
    return cute::compare(ir::CmpPredicate(p), arithmetic_operand(a), arithmetic_operand(b));
  });
  m.def("ssa_negate", &cute::negate);
  m.def("ssa_absolute", &cute::absolute);
  m.def("ssa_invert", &cute::invert);
  m.def("ssa_convert", [](const TensorSSA& t, const std::string& dt) { return cute::convert(t, dtype(dt)); });
  m.def("ssa_math", [](const std::string& fn, nb::handle args) { return cute::math(fn, arithmetic_operands(args)); });
  m.def("ssa_where", [](nb::handle c, nb::handle x, nb::handle y) {
    return cute::where(operand(c), operand(x), operand(y));
  });
  // The codes ssa_reduce takes, named as cute.ReductionOp names them.
  nb::enum_<cute::ReductionOp>(m, "ReductionOp", nb::is_arithmetic())
      .value("ADD", cute::ReductionOp::Add).value("MUL", cute::ReductionOp::Mul)
      .value("MAX", cute::ReductionOp::Max).value("MIN", cute::ReductionOp::Min);
  m.def("ssa_reduce", [](const TensorSSA& t, int op, nb::handle init, nb::handle profile) {
    if (op < 0 || op > 3) throw nb::value_error("reduce: op must be a cute.ReductionOp (ADD, MUL, MAX or MIN)");
    return result(cute::reduce(t, cute::ReductionOp(op), num_of(init), to_key(profile)));
  }, nb::arg("t"), nb::arg("op"), nb::arg("init"), nb::arg("profile").none());
  m.def("ssa_any", &cute::any);
  m.def("ssa_all", &cute::all);
  m.def("ssa_broadcast_to", [](const TensorSSA& t, nb::handle shape) { return cute::broadcast_to(t, to_key(shape)); });
  m.def("ssa_reshape", [](const TensorSSA& t, nb::handle shape) { return cute::reshape(t, to_key(shape)); });
  m.def("ssa_broadcast_shape", [](nb::handle a, nb::handle b) {
    return shape_to_py(cute::broadcast_shape(to_key(a), to_key(b)));
  });
  // v[key]: an element (Num) for an index or a full coordinate, a TensorSSA for a key with None.
  m.def("ssa_getitem", [](const TensorSSA& t, nb::handle key) -> nb::object {
    L::IntTuple k = to_key(key);
    if (L::has_underscore(k)) return nb::cast(cute::slice(t, k));
    return nb::cast(cute::element_at(t, k));
  }, nb::arg("t"), nb::arg("key").none());
}

}  // namespace opencute::bindings
