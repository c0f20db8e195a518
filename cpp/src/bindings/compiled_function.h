// Compiled @jit functions as Python objects (`_core.JitCompiledFunction`) and their call path:
// the argument plan the front end builds at compile time, the checks each call makes on its
// arguments against what was compiled, and the run through the executor.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_compiled_functions(nanobind::module_& m);

}  // namespace opencute::bindings
