// Reading tuples, lists, floats and function objects on the call path.
//
// A version-specific build uses CPython's inline accessors (no call, no reference counting); a
// stable-ABI build (Py_LIMITED_API, the cp312-abi3 wheel) has only the exported functions, which
// check their argument and cost a call each. Call sites use these names and get whichever the
// build allows. Every function returns a borrowed reference, as the macros do.
#pragma once

#include <Python.h>

namespace opencute::bindings {

#ifdef Py_LIMITED_API

inline Py_ssize_t tuple_size(PyObject* t) { return PyTuple_Size(t); }
inline PyObject* tuple_item(PyObject* t, Py_ssize_t i) { return PyTuple_GetItem(t, i); }
// `s` is a list or a tuple.
inline Py_ssize_t sequence_size(PyObject* s) { return PyList_Check(s) ? PyList_Size(s) : PyTuple_Size(s); }
inline PyObject* sequence_item(PyObject* s, Py_ssize_t i) {
  return PyList_Check(s) ? PyList_GetItem(s, i) : PyTuple_GetItem(s, i);
}
inline double float_value(PyObject* f) { return PyFloat_AsDouble(f); }

// Function objects are opaque in the stable ABI: their type comes from `types`, their fields
// from attributes. The attribute value is owned by the function, so dropping the new reference
// leaves a pointer that lives as long as the function (what the macros hand out).
inline PyTypeObject* python_function_type() {
  static PyTypeObject* type = [] {
    PyObject* types = PyImport_ImportModule("types");
    PyObject* t = types ? PyObject_GetAttrString(types, "FunctionType") : nullptr;
    Py_XDECREF(types);
    return reinterpret_cast<PyTypeObject*>(t);  // kept for the process
  }();
  return type;
}
inline bool is_python_function(PyObject* o) { return Py_TYPE(o) == python_function_type(); }
inline PyObject* borrowed_attribute(PyObject* o, const char* name, bool none_is_null) {
  PyObject* v = PyObject_GetAttrString(o, name);
  if (!v) {
    PyErr_Clear();
    return nullptr;
  }
  Py_DECREF(v);
  return none_is_null && v == Py_None ? nullptr : v;
}
inline PyObject* function_defaults(PyObject* fn) { return borrowed_attribute(fn, "__defaults__", true); }
inline PyObject* function_kw_defaults(PyObject* fn) { return borrowed_attribute(fn, "__kwdefaults__", true); }
inline PyObject* function_code(PyObject* fn) { return borrowed_attribute(fn, "__code__", false); }
// Null for an empty cell.
inline PyObject* cell_contents(PyObject* cell) { return borrowed_attribute(cell, "cell_contents", false); }

#else

inline Py_ssize_t tuple_size(PyObject* t) { return PyTuple_GET_SIZE(t); }
inline PyObject* tuple_item(PyObject* t, Py_ssize_t i) { return PyTuple_GET_ITEM(t, i); }
inline Py_ssize_t sequence_size(PyObject* s) { return PySequence_Fast_GET_SIZE(s); }
inline PyObject* sequence_item(PyObject* s, Py_ssize_t i) { return PySequence_Fast_ITEMS(s)[i]; }
inline double float_value(PyObject* f) { return PyFloat_AS_DOUBLE(f); }
inline bool is_python_function(PyObject* o) { return PyFunction_Check(o); }
inline PyObject* function_defaults(PyObject* fn) { return PyFunction_GET_DEFAULTS(fn); }
inline PyObject* function_kw_defaults(PyObject* fn) { return PyFunction_GET_KW_DEFAULTS(fn); }
inline PyObject* function_code(PyObject* fn) { return PyFunction_GET_CODE(fn); }
inline PyObject* cell_contents(PyObject* cell) { return PyCell_GET(cell); }

#endif

}  // namespace opencute::bindings
