// The argument plan of a compiled @jit function, shared by its two call paths (the default ABI in
// compiled_function.cpp, TVM-FFI in tvm_ffi_function.cpp): how each host-function parameter is
// read from the call's arguments and what each tensor argument was compiled for.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/types.h"
#include "runtime/executor.h"

namespace opencute::bindings {

// How each host-function parameter is read from the Python call arguments. Built once at
// compile time by the Python front end; executed in C++ on every call.
// kCPointer: a user object's JIT-argument protocol; `mode` indexes its `__c_pointers__()`.
enum ArgKind { kScalar = 0, kTensorData = 1, kTensorShape = 2, kTensorStride = 3, kStream = 4, kPointer = 5,
               kCPointer = 6 };

struct ArgSlot {
  int source;     // index into the call's positional arguments
  int kind;
  int mode;       // shape/stride mode for tensor entries
  ir::Type type;  // the host parameter's type
  int check = -1; // for a tensor's data slot: its TensorCheck
  int read = -1;  // for a tensor's first slot: its TensorRead (Executor::tensor_reads)
};

// One tensor argument's check and host parameters (its slots, which are adjacent) in one compact
// record, for the call paths' common case (dltensor_check.h, read_dltensor): what a call touches
// per tensor is this record and its modes, a cache line or two, rather than the TensorCheck's
// separate vectors. Built only where it applies (install_tensor_reads); the TensorCheck stays the
// full rule and the source of the error messages.
struct TensorRead {
  static constexpr int kMaxSlots = 16;
  struct Mode {  // as TensorCheck: -1 where dynamic, then what a dynamic entry is divisible by
    int64_t shape, stride, shape_div, stride_div;
  };
  struct SameAs {  // TensorCheck::SameAs, resolved: an entry that must equal an earlier value
    bool stride;       // this tensor's stride entry (else its shape entry)
    int16_t mode;
    bool within;       // the earlier value is this tensor's own entry (`first_stride`, `first_mode`)
    bool first_stride;
    int16_t first_mode;
    int32_t slot;      // else: the host parameter holding it
  };
  enum What : uint8_t { kData, kShape, kStride };
  enum Narrow : uint8_t { kAsIs, kSigned32, kUnsigned32 };
  struct Slot {
    What what;
    Narrow narrow;
    int16_t mode;
  };
  int32_t first_slot = 0;
  int32_t check = -1;          // its TensorCheck (-1: none)
  uint32_t modes_at = 0;       // its first Mode in Executor::tensor_read_modes
  uint32_t same_as_at = 0;     // its first SameAs in Executor::tensor_read_same_as
  uint8_t num_same_as = 0;
  uint8_t rank = 0;
  uint8_t num_slots = 0;
  uint8_t dl_code = 255, dl_bits = 0;
  bool int32_strides = false;  // as TensorCheck
  uint64_t align_mask = 0;     // alignment - 1 (alignments are powers of two)
  Slot slots[kMaxSlots];
};

// How the CPU emulator's diagnostics name a tensor argument's memory: by its Python name where
// known, with its position among the call's runtime arguments ("tensor argument `b` (#1)").
inline std::string tensor_region_name(int source, const std::string& name) {
  if (name.empty()) return "tensor argument #" + std::to_string(source);
  return "tensor argument `" + name + "` (#" + std::to_string(source) + ")";
}

struct TensorCheck {  // what a tensor argument was compiled for
  int source;
  std::vector<int64_t> shape, stride;          // -1 where dynamic
  std::vector<int64_t> shape_div, stride_div;  // what dynamic entries were assumed divisible by
  bool int32_strides;                          // dynamic strides are Int32: the layout must fit
  std::string description;
  std::string name;                            // the parameter, for messages
  std::string region_name;                     // its memory, in the CPU emulator's messages
  // From the data slot's pointer type:
  ir::Type element = nullptr;
  int64_t align = 1;                           // bytes the code assumes of the data pointer
  // A DLPack (code, bits) naming `element` (none: 255), compared before any type look-up.
  uint8_t dl_code = 255, dl_bits = 0;
  // Entries that are a symbol (cute.sym_int) first read by an earlier slot: they must equal that
  // slot's value, since the traced code uses one value for both.
  struct SameAs {
    bool stride;  // a stride entry (else a shape entry)
    int mode;
    int slot;     // the slot holding the symbol's value
  };
  std::vector<SameAs> same_as;
};

struct PointerCheck {  // the pointer type a cute.Pointer argument was compiled for
  int source;
  std::string type_key;  // the runtime pointer's `_type_key`: element type, space, alignment
  int64_t align;
  std::string description;
};

struct Executor {
  std::shared_ptr<runtime::CompiledProgram> program;
  std::vector<ArgSlot> slots;
  std::vector<TensorCheck> checks;
  std::vector<TensorRead> tensor_reads;
  std::vector<TensorRead::Mode> tensor_read_modes;
  std::vector<TensorRead::SameAs> tensor_read_same_as;
  std::vector<PointerCheck> pointer_checks;
  int num_sources = 0;
  // Per positional argument: -1 for a single value, n for a list/tuple of n values (each a
  // source of its own). Empty when no argument is a sequence.
  std::vector<int> arg_lengths;
  std::vector<ir::Type> result_types;
  bool flush_python_stdout = false;
  bool release_gil = true;
  bool strict_regions = true;  // every pointer argument is a tensor of known extent
  std::string function_name;
  std::vector<std::string> arg_names;  // per runtime argument: the parameter's name (export, keywords)
  // Parameters compiled with None (compile-time values): their positions among a call's
  // arguments and their names. A call may pass None there (then dropped) or leave them out.
  std::vector<int> none_positions;
  std::vector<std::string> none_names;
  double trace_ms = 0;
};

}  // namespace opencute::bindings
