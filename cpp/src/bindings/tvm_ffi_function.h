// Compiled @jit functions as TVM-FFI functions (`--enable-tvm-ffi`): a C safe-call over the same
// executor and argument plan as the default ABI, created through tvm-ffi's C ABI (its library is
// dlopen()ed at run time, so OpenCuTe builds and imports without tvm-ffi). The callback reads
// the packed TVMFFIAny arguments (DLTensor*, scalars, tuples, opaque pointers), checks them
// against what was compiled, raising tvm-ffi's TypeError/ValueError, and runs the program.
#pragma once
#include <nanobind/nanobind.h>

#include <cstdint>

namespace opencute::bindings {

struct Executor;

// A new TVM-FFI function's state (owned by the caller until tvm-ffi takes it): the executor's
// plan and a description from the front end (signature, params, sources; see tvm_ffi.py).
// The entry point for other ABIs built on the same callback (AOT export).
void* tvm_ffi_new_function_state(const Executor& ex, nanobind::handle description);
// tvm-ffi's TVMFFISafeCallType over such a state (args/result are TVMFFIAny*), and its deleter.
int tvm_ffi_safe_call(void* state, const void* args, int32_t num_args, void* result);
void tvm_ffi_delete_function_state(void* state);

void bind_tvm_ffi_functions(nanobind::module_& m);

}  // namespace opencute::bindings
