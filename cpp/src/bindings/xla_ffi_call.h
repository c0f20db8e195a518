// Compiled @jit functions as XLA custom calls (`cutlass.jax.cutlass_call`): an XLA FFI handler
// (XLA's C ABI, runtime/xla_ffi_abi.h) that reads the call's buffers and stream, checks them
// against what was compiled and runs the program, with no Python on the way. The front end
// compiles at JAX trace time and registers the compiled function here; the custom call names
// it by an index (and this process's token) in its attributes.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_xla_ffi_calls(nanobind::module_& m);

}  // namespace opencute::bindings
