#include "bindings/num_convert.h"

#include <string>

#include <nanobind/stl/string.h>

#include "bindings/layout_convert.h"
#include "dsl/dtype.h"
#include "dsl/tracer.h"

namespace nb = nanobind;

namespace opencute::bindings {

using dsl::Num;

namespace {

nb::object& wrapper() {  // cutlass._dsl.numeric.wrap
  static nb::object* o = new nb::object();
  return *o;
}
nb::object& dtype_lookup() {  // cutlass._dsl.numeric.dtype
  static nb::object* o = new nb::object();
  return *o;
}

}  // namespace

ir::Type dtype_of(nb::handle h, const char* unsupported_code) {
  if (PyUnicode_Check(h.ptr())) return dsl::dtype_from_name(nb::cast<std::string>(h));
  if (!nb::hasattr(h, "__name__")) throw nb::type_error(("expected a numeric type, got " + py_type_name(h)).c_str());
  std::string name = nb::cast<std::string>(h.attr("__name__"));
  try {
    return dsl::dtype_from_name(name);
  } catch (const std::invalid_argument&) {
    if (!unsupported_code) throw;
    throw dsl::UserError(unsupported_code, "the numeric type " + name + " is not supported here");
  }
}

Num to_num(nb::handle h) {
  if (nb::isinstance<Num>(h)) return nb::cast<Num>(h);
  if (PyBool_Check(h.ptr())) return Num::of_int(ir::bool_type(), h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow) throw dsl::UserError("TYPE_CONVERSION", "integer out of the 64-bit range");
    return Num::of_int(dsl::type_of_python_int(v), v);
  }
  if (PyFloat_Check(h.ptr())) return Num::of_float(ir::f32(), PyFloat_AsDouble(h.ptr()));
  nb::object inner = nb::getattr(h, "_n", nb::none());
  if (!inner.is_none()) return nb::cast<Num>(inner);
  throw dsl::UserError("TYPE_CONVERSION", "expected a DSL numeric or a Python scalar, got " +
                                              std::string(nb::str(nb::handle((PyObject*)Py_TYPE(h.ptr()))).c_str()));
}

Num to_operand(nb::handle h) {
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow) throw dsl::UserError("TYPE_CONVERSION", "integer out of the 64-bit range");
    return dsl::python_literal_int(v);
  }
  if (PyFloat_Check(h.ptr())) return dsl::python_literal_float(PyFloat_AsDouble(h.ptr()));
  return to_num(h);
}

nb::object wrap_num(const Num& n) { return wrapper()(n); }

nb::object dtype_class(ir::Type t) { return dtype_lookup()(dsl::dtype_name(t)); }

void bind_num_convert(nb::module_& m) {
  m.def("_set_numeric_wrappers", [](nb::object wrap, nb::object dtype) {
    wrapper() = wrap;
    dtype_lookup() = dtype;
  });
}

nanobind::object python_value(const dsl::Num& n) {
  if (!n.is_static) return nanobind::none();
  if (n.type->is_float()) return nanobind::float_(n.s.f);
  if (n.type->is_bool()) return nanobind::bool_(n.s.i != 0);
  if (!n.type->is_signed && n.type->width == 64) return nanobind::steal(PyLong_FromUnsignedLongLong(uint64_t(n.s.i)));
  return nanobind::int_(n.s.i);
}


}  // namespace opencute::bindings
