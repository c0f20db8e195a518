// Direct calls of a @jit function without tracing (`_core.DirectCallCache`) and the recorder
// that watches a trace to learn what it read (`_core.TraceRecorder`).
//
// A @jit function called from Python is traced and compiled; the trace's result depends on the
// arguments' specialisation (element types, layouts, dynamic marks, Constexpr values) and on
// whatever Python state the traced code read (globals, closure cells, module attributes). The
// front end (python/cutlass/_dsl/direct_call.py) records that state as guard entries after a
// trace; the cache keys the compiled function by the arguments' specialisation, computed here
// in one C++ pass, and reuses it while every guard entry still holds. Anything it cannot key
// makes the call take the traced path.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_direct_calls(nanobind::module_& m);

}  // namespace opencute::bindings
