// Compiled @jit functions as Python objects (`_core.JitCompiledFunction`) and their call path:
// the argument plan the front end builds at compile time, the checks each call makes on its
// arguments against what was compiled, and the run through the executor.
#pragma once
#include <nanobind/nanobind.h>

#include <memory>

namespace opencute::runtime {
struct ExportedFunction;
}

namespace opencute::bindings {

struct Executor;

// A compiled function rebuilt from an exported one (runtime/export.h): its program, exported GPU
// code and argument plan (the XLA custom call of cutlass.jax rebuilds calls traced elsewhere).
std::unique_ptr<Executor> executor_from_exported_function(const runtime::ExportedFunction& f);

void bind_compiled_functions(nanobind::module_& m);

}  // namespace opencute::bindings
