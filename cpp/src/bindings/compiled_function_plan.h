// A compiled @jit function as its call paths here hold it (the default ABI in compiled_function.cpp,
// TVM-FFI in tvm_ffi_function.cpp, XLA FFI in xla_ffi_call.cpp): the program and its argument
// contract, with each host parameter's type at hand.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "ir/types.h"
#include "runtime/argument_contract.h"
#include "runtime/executor.h"

namespace opencute::bindings {

// The argument contract (plan, checks, compact records) is runtime/argument_contract.h; these
// are its names as the call paths here spell them. Slot kinds are ints in ArgSlot so that the
// call paths switch on them directly.
constexpr int kScalar = int(runtime::SlotKind::Scalar), kTensorData = int(runtime::SlotKind::TensorData),
              kTensorShape = int(runtime::SlotKind::TensorShape), kTensorStride = int(runtime::SlotKind::TensorStride),
              kStream = int(runtime::SlotKind::Stream), kPointer = int(runtime::SlotKind::Pointer),
              kCPointer = int(runtime::SlotKind::CPointer);
using TensorCheck = runtime::TensorContract;
using PointerCheck = runtime::PointerContract;
using runtime::TensorRead;

struct ArgSlot {
  int source;     // index into the call's positional arguments
  int kind;       // runtime::SlotKind
  int mode;       // shape/stride mode for tensor entries
  ir::Type type;  // the host parameter's type
  int check = -1; // for a tensor's data slot: its TensorCheck
  int read = -1;  // for a tensor's first slot: its TensorRead (Executor::tensor_reads)
};

struct Executor {
  std::shared_ptr<runtime::CompiledProgram> program;
  // The argument contract, resolved (arg_lengths is empty when no argument is a list).
  runtime::ArgumentPlan plan;
  std::vector<ArgSlot> slots;         // plan.slots with what the call paths read per slot
  runtime::TensorReads tensor_reads;  // the compact form of plan.checks, for DLTensors
  std::vector<ir::Type> result_types;
  bool flush_python_stdout = false;
  bool release_gil = true;
  bool strict_regions = true;  // every pointer argument is a tensor of known extent
  std::string function_name;
  // Parameters compiled with None (compile-time values): their positions among a call's
  // arguments and their names. A call may pass None there (then dropped) or leave them out.
  // Parameters compiled with a tuple of Python ints (a `tuple` problem size, a compile-time
  // shape) join them with that tuple in none_values (None for the None ones): a call passing
  // every argument passes the same tuple there.
  std::vector<int> none_positions;
  std::vector<std::string> none_names;
  std::vector<nanobind::object> none_values;
  double trace_ms = 0;
};

}  // namespace opencute::bindings
