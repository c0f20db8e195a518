// Reads the data pointer, shape and strides (in elements) of a tensor passed to a compiled
// function: OpenCuTe's runtime tensors; any type offering DLPack's C exchange table
// (`__dlpack_c_exchange_api__`, torch >= 2.10), read with one C call and no Python objects;
// torch tensors through their methods otherwise; anything with the buffer protocol or
// __array_interface__ (numpy). How to read a type is decided once per Python type, and only
// the fields a call needs are fetched, because this runs on every call of a compiled function.
#pragma once
#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/types.h"
#include "runtime/argument_contract.h"

namespace opencute::bindings {

namespace nb = nanobind;

// torch's float4_e2m1fn_x2 reaches DLPack as (code 17 kDLFloat4_e2m1fn, bits 4, lanes 2) with
// shapes and strides counted in packed pairs (bytes). A compiled function sees 4-bit elements:
// the stride-1 mode holds twice as many and every other stride doubles.
inline bool is_packed_fp4_pairs(uint8_t code, uint8_t bits, uint16_t lanes) {
  return code == 17 && bits == 4 && lanes == 2;
}
// Rewrites `ndim` extents and strides from pairs to elements in place (`stride` may be null:
// compact row-major, then `stride_out` receives them). Throws dsl::UserError when no mode has
// stride 1 (the pairs of a row would not be adjacent, which one stride cannot describe).
void unpack_fp4_pairs(int ndim, int64_t* shape, const int64_t* stride, int64_t* stride_out);

class TensorArgument {
 public:
  explicit TensorArgument(nb::handle obj);
  ~TensorArgument();
  TensorArgument(const TensorArgument&) = delete;
  TensorArgument& operator=(const TensorArgument&) = delete;

  // DLPack-exchange tensors (torch on the GPU) are read inline: the call path reads each entry.
  int64_t data() {
    if (kind_ == Kind::DLPackExchange) return int64_t(reinterpret_cast<intptr_t>(dl_.data)) + int64_t(dl_.byte_offset);
    return data_slow();
  }
  size_t rank() { return kind_ == Kind::DLPackExchange ? size_t(dl_.ndim) : rank_slow(); }
  int64_t shape(size_t mode) {
    if (kind_ == Kind::DLPackExchange) return mode < size_t(dl_.ndim) ? dl_.shape[mode] : 1;
    return shape_slow(mode);
  }
  int64_t stride(size_t mode) {
    if (kind_ == Kind::DLPackExchange && dl_.strides) return mode < size_t(dl_.ndim) ? dl_.strides[mode] : 0;
    return stride_slow(mode);
  }
  std::string layout_string();  // "(4,8):(8,1)", for error messages
  // The element type, or null when the framework's type has no OpenCuTe equivalent.
  ir::Type element_type();
  enum class Memory { Host, Device, Managed };
  Memory memory();

  enum class Kind { Runtime, DLPackExchange, Torch, Buffer, ArrayInterface };

  using DLTensorView = runtime::DLTensorView;  // DLPack's DLTensor
  using DLTensorReader = int (*)(void* py_object, DLTensorView* out);
  // The DLPack exchange function (dltensor_from_py_object_no_sync) that reads `obj` when its type
  // is read through one, as the constructor decides (once per type); null otherwise. A call path
  // may fill a DLTensorView of its own with it instead of constructing a TensorArgument.
  static DLTensorReader exchange_reader(nb::handle obj);


 private:
  void need_layout();
  int64_t data_slow();
  size_t rank_slow();
  int64_t shape_slow(size_t mode);
  int64_t stride_slow(size_t mode);

  nb::handle obj_;
  Kind kind_;
  DLTensorView dl_{};
  std::vector<int64_t> unpacked_;  // a packed fp4-pair tensor's extents then strides, in elements
  nb::object shape_, stride_;  // tuples of Python ints
  Py_buffer buffer_{};
  bool has_buffer_ = false;
};

// DLPack's C exchange table (dlpack.h DLPackExchangeAPI, DLPack >= 1.3) as a Python type
// offers it through `__dlpack_c_exchange_api__` (torch >= 2.10): the two functions a call path
// needs. Looked up once per type; null when the type has no table of a known major version.
struct DLPackExchangeFunctions {
  // dltensor_from_py_object_no_sync: fills a non-owning DLTensor, valid while the object lives.
  int (*to_dltensor)(void* py_object, TensorArgument::DLTensorView* out);
  // current_work_stream (may be null): the framework's current stream of a device.
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
};
const DLPackExchangeFunctions* dlpack_exchange_functions(PyTypeObject* type);

// `_core._DLPackView` and `_core._testing_dlpack_exchange_api()`: a DLPack exchange provider
// over any memory, so that tests without torch drive the exchange path.
void bind_dlpack_exchange_testing(nb::module_& m);

}  // namespace opencute::bindings
