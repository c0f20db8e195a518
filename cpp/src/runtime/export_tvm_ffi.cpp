// The TVM-FFI calling convention of exported functions: `__tvm_ffi_<name>(handle, args,
// num_args, result)` with TVMFFIAny arguments, as TVM-FFI's InvokeExternC and its module loader
// call it. TVM-FFI's C ABI is runtime/tvm_ffi_abi.h; DLPack's (dlpack.h) is declared below, so
// that neither is needed to build the runtime.
#include <climits>
#include <cstring>

#include "ir/scalar_semantics.h"
#include "runtime/cuda_driver.h"
#include "runtime/exported_program.h"
#include "runtime/tvm_ffi_abi.h"

namespace opencute::runtime {

namespace {

using TVMFFIAny = tvm_ffi_abi::FfiAny;
using tvm_ffi_abi::kBool, tvm_ffi_abi::kDLTensorPtr, tvm_ffi_abi::kFloat, tvm_ffi_abi::kInt, tvm_ffi_abi::kNone,
    tvm_ffi_abi::kOpaquePtr, tvm_ffi_abi::kTensor;  // the TVMFFITypeIndex values this convention accepts
constexpr size_t kObjectHeaderBytes = sizeof(tvm_ffi_abi::FfiObject);  // a tensor object's DLTensor follows it

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
constexpr int32_t kDLCUDA = 2, kDLCUDAManaged = 13;
constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6;

bool dtype_matches(ir::Type element, DLDataType d) {
  if (d.lanes != 1) return false;
  if (element->is_bool()) return (d.code == kDLBool || d.code == kDLUInt) && d.bits == 8;
  if (element->is_int()) return d.code == (element->is_signed ? kDLInt : kDLUInt) && d.bits == element->width;
  if (element->is_float()) {
    if (element->float_kind == ir::FloatKind::BF16) return d.code == kDLBfloat && d.bits == 16;
    return d.code == kDLFloat && d.bits == element->width;
  }
  return false;
}

std::string dtype_name(DLDataType d) {
  const char* code = d.code == kDLInt ? "int" : d.code == kDLUInt ? "uint" : d.code == kDLFloat ? "float"
                     : d.code == kDLBfloat ? "bfloat" : d.code == kDLBool ? "bool" : "dtype-code-";
  return code + std::to_string(d.bits) + (d.lanes != 1 ? "x" + std::to_string(d.lanes) : "");
}

std::string element_name(ir::Type e) {
  if (e->is_bool()) return "bool";
  if (e->is_int()) return std::string(e->is_signed ? "int" : "uint") + std::to_string(e->width);
  if (e->is_float() && e->float_kind == ir::FloatKind::BF16) return "bfloat16";
  if (e->is_float()) return "float" + std::to_string(e->width);
  return ir::to_string(e);
}

// A DLTensor as the argument contract's check reads it (element types as this convention names them).
struct TVMFFITensorView {
  const DLTensor& t;
  bool element_matches(ir::Type element) const { return dtype_matches(element, t.dtype); }
  TensorMemory memory() const { return memory_of_dl_device(t.device.device_type); }
  uint64_t address() const { return uint64_t(reinterpret_cast<uintptr_t>(t.data)) + t.byte_offset; }
  size_t rank() const { return size_t(t.ndim); }
  int64_t shape(size_t m) const { return t.shape[m]; }
  int64_t stride(size_t m) const {
    if (t.strides) return t.strides[m];
    int64_t compact = 1;  // no strides: compact row-major
    for (int i = int(m) + 1; i < t.ndim; ++i) compact *= t.shape[i];
    return compact;
  }
};

const char* type_name(int32_t index) {
  switch (index) {
    case kNone: return "None";
    case kInt: return "int";
    case kBool: return "bool";
    case kFloat: return "float";
    case kOpaquePtr: return "opaque pointer";
    case kDLTensorPtr: case kTensor: return "Tensor";
    default: return "an unsupported TVM-FFI value";
  }
}

}  // namespace

void ExportedProgram::run_tvm_ffi(const void* raw_args, int32_t num_args, void* raw_result) {
  const auto* args = static_cast<const TVMFFIAny*>(raw_args);
  const std::string call = "`" + function_.name + "`";
  if (num_args != int32_t(params_.size()))
    throw ExportedCallError("Expected " + std::to_string(params_.size()) + " arguments when calling " + call +
                                ", got " + std::to_string(num_args),
                            "TypeError");
  // The DLTensor of each tensor argument, checked against what was compiled.
  if (host_->result_types.size() > 1)
    throw ExportedCallError(call + " returns several values, which its TVM-FFI entry point cannot return",
                            "RuntimeError");
  std::vector<const DLTensor*> tensors(params_.size(), nullptr);
  int device = -1;  // the first GPU tensor's device decides where kernels run
  for (size_t src = 0; src < params_.size(); ++src) {
    const CParameter& c = params_[src];
    const TVMFFIAny& a = args[src];
    auto mismatch = [&](const char* expected) {
      throw ExportedCallError("Mismatched type on argument #" + std::to_string(src) + " when calling " + call +
                                  ", expected " + expected + ", got " + type_name(a.type_index),
                              "TypeError");
    };
    switch (c.kind) {
      case CParameter::Tensor: {
        const DLTensor* t = nullptr;
        if (a.type_index == kDLTensorPtr) t = static_cast<const DLTensor*>(a.v_ptr);
        else if (a.type_index == kTensor) t = reinterpret_cast<const DLTensor*>(static_cast<const char*>(a.v_ptr) +
                                                                                 kObjectHeaderBytes);
        else mismatch("Tensor");
        tensors[src] = t;
        bool on_gpu = t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged;
        if (on_gpu && device < 0) device = t->device.device_id;
        const TensorContract* check = check_of_source_[src];
        if (!check) break;
        TVMFFITensorView view{*t};
        const ContractFindings found =
            check_tensor(*check, view, kernel_names_empty_ ? KernelMemory::Any : KernelMemory::Device, nullptr);
        if (found.ok()) break;
        MessageInputs in;
        in.label = "argument #" + std::to_string(src) + " (" + c.name + ") when calling " + call;
        in.want_element = element_name(check->element);
        in.got_element = dtype_name(t->dtype);
        ArgumentError e = argument_error(MessageStyle::ExportedTvmFfi, *check, found, in);
        if (e.code) throw ExportedCallError(e.message, e.kind);
        break;
      }
      case CParameter::Scalar:
        if (a.type_index != kInt && a.type_index != kBool && a.type_index != kFloat) mismatch("a number");
        break;
      case CParameter::Stream:
      case CParameter::Pointer:
        if (a.type_index != kOpaquePtr && a.type_index != kInt && a.type_index != kNone) mismatch("a pointer");
        break;
    }
  }
  std::vector<ir::Scalar> vals(function_.plan.slots.size());
  for (size_t i = 0; i < vals.size(); ++i) {
    const PlanSlot& s = function_.plan.slots[i];
    const TVMFFIAny& a = args[size_t(s.source)];
    ir::Type t = host_->args()[i]->type;
    const DLTensor* tensor = tensors[size_t(s.source)];
    switch (s.kind) {
      case SlotKind::Scalar:
        vals[i] = a.type_index == kFloat ? ir::eval_cast(ir::f64(), t, ir::Scalar::of_float(a.v_float64))
                                         : ir::eval_cast(ir::i64(), t, ir::Scalar::of_int(a.v_int64));
        break;
      case SlotKind::Stream:
      case SlotKind::Pointer:
        vals[i] = ir::Scalar::of_int(a.type_index == kNone ? 0 : a.v_int64);
        break;
      case SlotKind::TensorData:
        vals[i] = ir::Scalar::of_int(int64_t(reinterpret_cast<uintptr_t>(tensor->data) + tensor->byte_offset));
        break;
      case SlotKind::CPointer: break;  // not exported
      case SlotKind::TensorShape:
      case SlotKind::TensorStride: {
        int64_t v;
        if (s.kind == SlotKind::TensorShape) {
          v = tensor->shape[s.mode];
        } else if (tensor->strides) {
          v = tensor->strides[s.mode];
        } else {
          v = 1;
          for (int d = s.mode + 1; d < tensor->ndim; ++d) v *= tensor->shape[d];
        }
        if (t->width == 32 && (v < INT32_MIN || v > INT32_MAX)) {
          ArgumentError e = int32_entry_error(MessageStyle::ExportedTvmFfi,
                                              "argument #" + std::to_string(s.source) + " when calling " + call,
                                              s.kind == SlotKind::TensorShape, s.mode, v);
          throw ExportedCallError(e.message, e.kind);
        }
        vals[i] = ir::Scalar::of_int(ir::wrap_int(t, v));
        break;
      }
    }
  }
  if (device >= 0 && !kernel_names_empty_) CudaDriver::get().initialize_context(device);
  std::vector<ir::Scalar> results;
  try {
    results = run_values(vals);
  } catch (const CudaError& e) {
    throw ExportedCallError(std::string("CUDA Error: ") + e.what(), "RuntimeError");
  }
  auto* result = static_cast<TVMFFIAny*>(raw_result);
  if (!result) return;
  result->type_index = kNone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  if (results.empty()) return;
  ir::Type rt = host_->result_types[0];
  if (rt->is_float()) {
    result->type_index = kFloat;
    result->v_float64 = results[0].f;
  } else {
    result->type_index = rt->is_bool() ? kBool : kInt;
    result->v_int64 = results[0].i;
  }
}

}  // namespace opencute::runtime
