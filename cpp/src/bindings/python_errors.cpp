#include "bindings/python_errors.h"

#include <typeinfo>

#include <nanobind/stl/string.h>

#include "dsl/tracer.h"
#include "emulator/host_interpreter.h"
#include "ir/builder.h"
#include "runtime/cuda_driver.h"

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

nb::object& user_error_class() {
  static nb::object* cls = new nb::object();  // cutlass._dsl.errors.from_core, set from Python
  return *cls;
}

nb::object& runtime_error_class() {
  static nb::object* cls = new nb::object();  // cutlass._dsl.errors.runtime_error_from_core, set from Python
  return *cls;
}

nb::object& cuda_error_class() {
  static nb::object* cls = new nb::object();  // cutlass._dsl.errors.cuda_error_from_core, set from Python
  return *cls;
}

// Errors of a running program (the emulator's and the host interpreter's) as DSLRuntimeError,
// pointing at the user's line when the error knows it.
void raise_runtime_error(const char* what, const std::string& file, int line) {
  nb::object& cls = runtime_error_class();
  if (!cls.is_valid() || cls.is_none()) {
    PyErr_SetString(PyExc_RuntimeError, what);
    return;
  }
  nb::object exc = file.empty() ? cls(what) : cls(what, nb::arg("line") = line, nb::arg("filename") = file);
  PyErr_SetObject((PyObject*)Py_TYPE(exc.ptr()), exc.ptr());
}

void raise_user_error(const char* what, const char* code, PyObject* fallback) {
  raise_python_error(user_error_class(), what, code, fallback);  // the class depends on the code
}

// Turns the DSL's C++ errors into DSLUserCodeError; rethrows anything else for nanobind.
void translate_dsl_exception(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (const dsl::UserError& e) {
    raise_user_error(e.what(), e.code.c_str(), PyExc_RuntimeError);
  } catch (const ir::ScopeError& e) {
    raise_user_error(e.what(), "SCOPE_VALUE_ESCAPES_REGION", PyExc_RuntimeError);
  } catch (const ir::TypeError& e) {
    raise_user_error(e.what(), "TYPE_MISMATCH", PyExc_TypeError);
  } catch (const runtime::CudaError& e) {
    nb::object& cls = cuda_error_class();
    if (!cls.is_valid() || cls.is_none()) throw;
    nb::object exc = cls(e.what(), e.code());
    PyErr_SetObject((PyObject*)Py_TYPE(exc.ptr()), exc.ptr());
  } catch (const emulator::ExecutionError& e) {  // unsupported ops, failed assertions, bad kernels
    raise_runtime_error(e.what(), e.file, e.line);
  } catch (const std::bad_cast&) {
    // A failed nb::cast in a binding that did not check the object's type first: say what kind
    // of mistake reaches there rather than "std::bad_cast".
    raise_user_error("a DSL operation received an object of another type than it takes (for example a host-side "
                     "cute.runtime.Tensor where a tensor of the traced function is needed)",
                     "TYPE_MISMATCH", PyExc_TypeError);
  }
}


}  // namespace opencute::bindings
