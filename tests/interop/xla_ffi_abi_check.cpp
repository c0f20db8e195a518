// Compiled by tests/interop/test_jax.py against jaxlib's xla/ffi/api/c_api.h: every offset, size and enum value
// OpenCuTe's runtime/xla_ffi_abi.h declares must equal the real header's. Prints one line per
// fact and "MISMATCH" where they differ.
#include "xla/ffi/api/c_api.h"
#include "runtime/xla_ffi_abi.h"  // OpenCuTe's own declarations, checked here against XLA's header
#include <cstdio>
namespace o = opencute::xla_ffi;
#define CHK(a,b) printf("%-40s %zu %zu %s\n", #a, (size_t)(a), (size_t)(b), (size_t)(a)==(size_t)(b)?"":"MISMATCH")
int main() {
CHK(XLA_FFI_Api_Version_STRUCT_SIZE, o::kApiVersionSize);
CHK(XLA_FFI_Error_Create_Args_STRUCT_SIZE, o::kErrorCreateArgsSize);
CHK(XLA_FFI_Stream_Get_Args_STRUCT_SIZE, o::kStreamGetArgsSize);
CHK(XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE, o::kDeviceOrdinalGetArgsSize);
CHK(XLA_FFI_CallFrame_STRUCT_SIZE, o::kCallFrameSize);
CHK(offsetof(XLA_FFI_CallFrame, args), offsetof(o::CallFrame, args));
CHK(offsetof(XLA_FFI_CallFrame, rets), offsetof(o::CallFrame, rets));
CHK(offsetof(XLA_FFI_CallFrame, attrs), offsetof(o::CallFrame, attrs));
CHK(offsetof(XLA_FFI_CallFrame, stage), offsetof(o::CallFrame, stage));
CHK(XLA_FFI_Buffer_STRUCT_SIZE, o::kBufferSize);
CHK(offsetof(XLA_FFI_Buffer, data), offsetof(o::Buffer, data));
CHK(offsetof(XLA_FFI_Buffer, rank), offsetof(o::Buffer, rank));
CHK(sizeof(XLA_FFI_Scalar), sizeof(o::Scalar));
CHK(offsetof(XLA_FFI_Scalar, value), offsetof(o::Scalar, value));
CHK(sizeof(XLA_FFI_ByteSpan), sizeof(o::ByteSpan));
CHK(XLA_FFI_Metadata_STRUCT_SIZE, o::kMetadataSize);
CHK(offsetof(XLA_FFI_Metadata, state_type_id), offsetof(o::Metadata, state_type_id));
CHK(XLA_FFI_Metadata_Extension_STRUCT_SIZE, o::kMetadataExtensionSize);
CHK(offsetof(XLA_FFI_Api, XLA_FFI_Error_Create), offsetof(o::Api, Error_Create));
CHK(offsetof(XLA_FFI_Api, XLA_FFI_Stream_Get), offsetof(o::Api, Stream_Get));
CHK(offsetof(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get), offsetof(o::Api, DeviceOrdinal_Get));
CHK(XLA_FFI_Api_STRUCT_SIZE, o::kApiSizeWithDeviceOrdinal);
CHK(XLA_FFI_DataType_F8E8M0FNU, o::kF8E8M0FNU); CHK(XLA_FFI_DataType_BF16, o::kBF16); CHK(XLA_FFI_DataType_F8E4M3FN, o::kF8E4M3FN);
CHK(XLA_FFI_Extension_Metadata, o::kExtensionMetadata); CHK(XLA_FFI_ExecutionStage_EXECUTE, o::kExecute); CHK(XLA_FFI_AttrType_SCALAR, o::kAttrScalar);
CHK(XLA_FFI_Error_Code_INVALID_ARGUMENT, o::kInvalidArgument);
  return 0;
}
