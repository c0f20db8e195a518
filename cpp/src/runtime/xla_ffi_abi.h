// The part of XLA's FFI C ABI (`xla/ffi/api/c_api.h`, shipped in jaxlib under
// `jax.ffi.include_dir()`) that OpenCuTe's custom-call handler uses, declared here so that building
// OpenCuTe needs nothing of XLA or JAX. Layouts, enum values and version numbers are those of the
// header of API version 0.3 (jaxlib 0.10/0.11); XLA only appends to these structs, and every struct
// carries its size, which the handler checks before reading a field past the first version's.
#pragma once
#include <cstddef>
#include <cstdint>

namespace opencute::xla_ffi {

// What the handler reports it was written against (XLA accepts a handler of an older minor).
constexpr int kApiMajor = 0;
constexpr int kApiMinor = 1;

// C enums are int-sized.
enum ExtensionType : int32_t { kExtensionMetadata = 1 };
enum ErrorCode : int32_t { kOk = 0, kUnknown = 2, kInvalidArgument = 3, kFailedPrecondition = 9, kInternal = 13 };
enum ExecutionStage : int32_t { kInstantiate = 0, kPrepare = 1, kInitialize = 2, kExecute = 3 };
enum ArgType : int32_t { kArgBuffer = 1 };
enum AttrType : int32_t { kAttrArray = 1, kAttrDictionary = 2, kAttrScalar = 3, kAttrString = 4 };
enum DataType : int32_t {
  kInvalid = 0, kPred = 1, kS8 = 2, kS16 = 3, kS32 = 4, kS64 = 5, kU8 = 6, kU16 = 7, kU32 = 8, kU64 = 9,
  kF16 = 10, kF32 = 11, kF64 = 12, kC64 = 15, kBF16 = 16, kToken = 17, kF8E5M2 = 19, kF8E4M3FN = 20,
  kS4 = 21, kU4 = 22, kF8E4M3B11FNUZ = 23, kF8E5M2FNUZ = 24, kF8E4M3FNUZ = 25, kF8E4M3 = 28, kF8E3M4 = 29,
  kF4E2M1FN = 32, kF8E8M0FNU = 33,
};

struct Error;             // opaque: made by the API's Error_Create
struct ExecutionContext;  // opaque
struct Api;

struct ExtensionBase {
  size_t struct_size;
  ExtensionType type;
  ExtensionBase* next;
};

struct ApiVersion {
  size_t struct_size;
  ExtensionBase* extension_start;
  int major_version;
  int minor_version;
};

struct ErrorCreateArgs {
  size_t struct_size;
  ExtensionBase* extension_start;
  const char* message;
  ErrorCode errc;
};

struct Buffer {
  size_t struct_size;
  ExtensionBase* extension_start;
  DataType dtype;
  void* data;
  int64_t rank;
  int64_t* dims;  // row-major: XLA hands custom calls buffers in the default layout
};

struct ByteSpan {
  const char* ptr;
  size_t len;
};

struct Scalar {
  DataType dtype;
  void* value;
};

struct Args {
  size_t struct_size;
  ExtensionBase* extension_start;
  int64_t size;
  ArgType* types;
  void** args;
};

struct Rets {
  size_t struct_size;
  ExtensionBase* extension_start;
  int64_t size;
  int32_t* types;
  void** rets;
};

struct Attrs {
  size_t struct_size;
  ExtensionBase* extension_start;
  int64_t size;
  AttrType* types;
  ByteSpan** names;
  void** attrs;
};

struct CallFrame {
  size_t struct_size;
  ExtensionBase* extension_start;
  const Api* api;
  ExecutionContext* ctx;
  ExecutionStage stage;
  Args args;
  Rets rets;
  Attrs attrs;
  void* future;  // out
};

struct StreamGetArgs {
  size_t struct_size;
  ExtensionBase* extension_start;
  ExecutionContext* ctx;
  void* stream;  // out
};

struct DeviceOrdinalGetArgs {
  size_t struct_size;
  ExtensionBase* extension_start;
  ExecutionContext* ctx;
  int32_t device_ordinal;  // out
};

struct Metadata {
  size_t struct_size;
  ApiVersion api_version;
  uint32_t traits;
  int64_t state_type_id;
};

struct MetadataExtension {
  ExtensionBase extension_base;
  Metadata* metadata;
};

using ApiFn = void*;  // an entry of the API table this handler does not call
struct Api {
  size_t struct_size;
  ExtensionBase* extension_start;
  ApiVersion api_version;
  const void* internal_api;
  Error* (*Error_Create)(ErrorCreateArgs* args);
  ApiFn Error_GetMessage;
  ApiFn Error_Destroy;
  ApiFn Handler_Register;
  Error* (*Stream_Get)(StreamGetArgs* args);
  ApiFn Type_Register;
  ApiFn ExecutionContext_Get;
  ApiFn State_Set;
  ApiFn State_Get;
  ApiFn DeviceMemory_Allocate;
  ApiFn DeviceMemory_Free;
  ApiFn ThreadPool_Schedule;
  ApiFn ThreadPool_NumThreads;
  ApiFn Future_Create;
  ApiFn Future_SetAvailable;
  ApiFn Future_SetError;
  ApiFn RunId_Get;
  Error* (*DeviceOrdinal_Get)(DeviceOrdinalGetArgs* args);
};

using Handler = Error*(CallFrame* frame);

// c_api.h's XLA_FFI_STRUCT_SIZE: the end of a struct's last field (what its `struct_size` holds).
#define OPENCUTE_XLA_STRUCT_SIZE(type, last) (offsetof(type, last) + sizeof(((type*)nullptr)->last))
constexpr size_t kApiVersionSize = OPENCUTE_XLA_STRUCT_SIZE(ApiVersion, minor_version);
constexpr size_t kErrorCreateArgsSize = OPENCUTE_XLA_STRUCT_SIZE(ErrorCreateArgs, errc);
constexpr size_t kStreamGetArgsSize = OPENCUTE_XLA_STRUCT_SIZE(StreamGetArgs, stream);
constexpr size_t kDeviceOrdinalGetArgsSize = OPENCUTE_XLA_STRUCT_SIZE(DeviceOrdinalGetArgs, device_ordinal);
constexpr size_t kCallFrameSize = OPENCUTE_XLA_STRUCT_SIZE(CallFrame, attrs);
constexpr size_t kBufferSize = OPENCUTE_XLA_STRUCT_SIZE(Buffer, dims);
constexpr size_t kMetadataSize = OPENCUTE_XLA_STRUCT_SIZE(Metadata, traits);
constexpr size_t kMetadataExtensionSize = OPENCUTE_XLA_STRUCT_SIZE(MetadataExtension, metadata);
constexpr size_t kApiSizeWithDeviceOrdinal = OPENCUTE_XLA_STRUCT_SIZE(Api, DeviceOrdinal_Get);

// The offsets of c_api.h on LP64 (x86-64, aarch64 Linux), worked out from its field lists.
static_assert(sizeof(ExtensionBase) == 24 && kApiVersionSize == 24, "XLA FFI ABI");
static_assert(kErrorCreateArgsSize == 28 && kStreamGetArgsSize == 32 && kDeviceOrdinalGetArgsSize == 28, "XLA FFI ABI");
static_assert(offsetof(Buffer, dims) == 40 && kBufferSize == 48, "XLA FFI ABI");
static_assert(sizeof(Args) == 40 && sizeof(Attrs) == 48, "XLA FFI ABI");
static_assert(offsetof(CallFrame, stage) == 32 && offsetof(CallFrame, args) == 40 && offsetof(CallFrame, rets) == 80 &&
                  offsetof(CallFrame, attrs) == 120 && kCallFrameSize == 168,
              "XLA FFI ABI");
static_assert(offsetof(Api, Error_Create) == 48 && offsetof(Api, Stream_Get) == 80 &&
                  offsetof(Api, DeviceOrdinal_Get) == 184,
              "XLA FFI ABI");
static_assert(offsetof(Metadata, traits) == 32 && kMetadataSize == 36 && kMetadataExtensionSize == 32, "XLA FFI ABI");

}  // namespace opencute::xla_ffi
