// Raising the DSL's Python exception classes from C++ error translators. Each class is
// registered from Python at import; until then the fallback built-in exception is used.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

// Sets the Python error `cls(what, code=code)` (its type may be a subclass chosen by `cls`,
// e.g. by the code), or `fallback(what)` when no class is registered.
void raise_python_error(const nanobind::object& cls, const char* what, const char* code, PyObject* fallback);

}  // namespace opencute::bindings
