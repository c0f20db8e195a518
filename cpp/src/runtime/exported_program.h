// An exported function loaded by the C runtime library (no Python in the process): its host
// program runs in the host interpreter, reading its parameters from the C argument structs
// that the generated header declares, and its kernels launch through the CUDA driver.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emulator/host_interpreter.h"
#include "runtime/export.h"

namespace opencute::runtime {

// A call the runtime refuses (wrong argument count, an argument that does not match what the
// function was compiled for).
struct ExportedCallError : std::runtime_error {
  // kind: the Python exception a TVM-FFI caller sees (TypeError, ValueError, RuntimeError).
  explicit ExportedCallError(const std::string& what, std::string kind_ = "ValueError")
      : std::runtime_error(what), kind(std::move(kind_)) {}
  std::string kind;
};

class ExportedProgram : public emulator::LaunchHandler {
 public:
  explicit ExportedProgram(ExportedFunction f);  // parses the module; throws on a bad blob
  ~ExportedProgram() override;

  const std::string& name() const { return function_.name; }
  // The C call: one pointer per runtime argument (tensor structs, scalars, streams, pointers),
  // one per host result (written), and last an int32_t status (written: 0 or a CUresult).
  // Throws ExportedCallError, CudaError, emulator::ExecutionError.
  void run(void** args, size_t num_args);
  size_t num_c_args() const { return params_.size() + host_->result_types.size() + 1; }
  // The seam for other calling conventions (TVM-FFI): one value per host parameter, read by
  // the caller with plan() as its guide; returns the host program's results.
  std::vector<ir::Scalar> run_values(const std::vector<ir::Scalar>& slot_values);
  // The TVM-FFI calling convention (`__tvm_ffi_<name>`, export_tvm_ffi.cpp): `args` are
  // TVMFFIAny values; the result, if any, is written to `result` (a TVMFFIAny).
  void run_tvm_ffi(const void* args, int32_t num_args, void* result);
  const ExportedFunction& exported() const { return function_; }
  const ir::Function& host() const { return *host_; }

  void launch(const emulator::LaunchRequest& request) override;
  // Exported programs launch on the GPU: TMA descriptors get the driver's encoding.
  void encode_tma(emulator::TmaDescriptor& d, ir::Type element) override;

 private:
  void load_gpu_code();

  ExportedFunction function_;
  std::unique_ptr<ir::Module> module_;
  const ir::Function* host_ = nullptr;
  std::unique_ptr<emulator::HostInterpreter> interpreter_;
  std::vector<CParameter> params_;
  std::vector<const TensorContract*> check_of_source_;
  bool kernel_names_empty_ = true;        // a host-only program: tensors may live anywhere

  std::mutex load_mu_;
  std::atomic<void*> cu_module_{nullptr};
  void* cu_context_ = nullptr;  // the CUcontext the module was loaded into; set before cu_module_
  std::vector<std::pair<const ir::Op*, void*>> launch_targets_;
};

}  // namespace opencute::runtime
