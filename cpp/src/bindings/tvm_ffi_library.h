// tvm-ffi's library, dlopen()ed when the first TVM-FFI function is made (or the copy the Python
// package has loaded): the few C functions the TVM-FFI functions call.
#pragma once
#include <string>

#include "runtime/tvm_ffi_abi.h"

namespace opencute::bindings {

using SafeCall = int (*)(void* self, const runtime::tvm_ffi_abi::FfiAny* args, int32_t num_args,
                         runtime::tvm_ffi_abi::FfiAny* result);
struct FfiApi {
  int (*FunctionCreate)(void* self, SafeCall call, void (*deleter)(void*), void** out) = nullptr;
  void (*ErrorSetRaisedFromCStr)(const char* kind, const char* message) = nullptr;
  void* (*EnvGetStream)(int32_t device_type, int32_t device_id) = nullptr;
};

// The loaded functions (all null until load_ffi_api).
FfiApi& ffi_api();
// Loads them from `library_path` unless already loaded; throws std::runtime_error when the
// library is missing or has a C ABI other than 0.1's.
void load_ffi_api(const std::string& library_path);

}  // namespace opencute::bindings
