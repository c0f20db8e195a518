#include "bindings/python_errors.h"

namespace nb = nanobind;

namespace opencute::bindings {

void raise_python_error(const nb::object& cls, const char* what, const char* code, PyObject* fallback) {
  if (!cls.is_valid() || cls.is_none()) {
    PyErr_SetString(fallback, what);
    return;
  }
  nb::object exc = cls(what, nb::arg("code") = code);
  PyErr_SetObject((PyObject*)Py_TYPE(exc.ptr()), exc.ptr());
}

}  // namespace opencute::bindings
