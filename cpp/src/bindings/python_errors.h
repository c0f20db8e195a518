// Raising the DSL's Python exception classes from C++ error translators. Each class is
// registered from Python at import; until then the fallback built-in exception is used.
#pragma once
#include <nanobind/nanobind.h>

#include <exception>

namespace opencute::bindings {

// Sets the Python error `cls(what, code=code)` (its type may be a subclass chosen by `cls`,
// e.g. by the code), or `fallback(what)` when no class is registered.
void raise_python_error(const nanobind::object& cls, const char* what, const char* code, PyObject* fallback);

// The classes registered from Python: cutlass._dsl.errors.from_core (picks the class by the
// error's code) and runtime_error_from_core (errors of a running program, as DSLRuntimeError).
nanobind::object& user_error_class();
nanobind::object& runtime_error_class();
// cutlass._dsl.errors.cuda_error_from_core(message, code): CUDA driver failures as DSLCudaRuntimeError.
nanobind::object& cuda_error_class();
// Sets the Python error for the DSL's C++ exceptions (UserError, IR type/scope errors, the
// emulator's errors); rethrows anything else.
void translate_dsl_exception(const std::exception_ptr& p);

}  // namespace opencute::bindings
