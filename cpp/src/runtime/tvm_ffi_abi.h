// tvm-ffi's stable C ABI (include/tvm/ffi/c_api.h, version 0.1): the layouts OpenCuTe reads and
// writes, declared here so that nothing of tvm-ffi is needed to build. Used by the TVM-FFI
// functions of the Python package (bindings/tvm_ffi_function.cpp) and by exported functions'
// TVM-FFI entry points (export_tvm_ffi.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace opencute::runtime::tvm_ffi_abi {

struct FfiObject {  // TVMFFIObject: every heap object starts with it
  uint64_t combined_ref_count;
  int32_t type_index;
  uint32_t padding;
  void* deleter;
};
struct FfiAny {  // TVMFFIAny
  int32_t type_index;
  uint32_t zero_padding;
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    FfiObject* v_obj;
  };
};
struct FfiShapeCell {  // TVMFFIShapeCell, after the object header of Shape
  const int64_t* data;
  size_t size;
};
struct FfiSeqCell {  // TVMFFISeqCell, after the object header of Array and List
  void* data;        // FfiAny[size]
  int64_t size;
  int64_t capacity;
  void (*data_deleter)(void*);
};
static_assert(sizeof(FfiObject) == 24 && sizeof(FfiAny) == 16, "tvm-ffi C ABI");

// TVMFFITypeIndex values OpenCuTe reads or writes.
enum FfiTypeIndex : int32_t {
  kNone = 0, kInt = 1, kBool = 2, kFloat = 3, kOpaquePtr = 4, kDLTensorPtr = 7,
  kFunction = 68, kShape = 69, kTensor = 70, kArray = 71, kList = 75,
};

}  // namespace opencute::runtime::tvm_ffi_abi
