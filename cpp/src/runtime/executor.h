// A compiled @jit function: the host program (run by the host interpreter) plus the cubin of
// its kernels (loaded on first launch). Built by compile_program from a traced module.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emulator/device_emulator.h"
#include "emulator/host_interpreter.h"
#include "emulator/ptx/ptx_executor.h"
#include "ir/ir.h"

namespace opencute::runtime {

struct CompileOptions {
  std::string arch;  // "sm_90a"; empty -> the current device's, or sm_90a without a GPU
  int opt_level = 3;
  bool generate_line_info = false;
  std::string ptxas_options;
  bool need_cubin = true;  // false: stop at PTX (a machine without a GPU can still inspect it)
  bool use_disk_cache = true;   // consult and fill DiskCache::instance() (it may be disabled)
  std::string version;          // package version, part of the disk-cache key
  // Debug dumps (runtime/debug_dumps.h); the environment's CUTE_DSL_KEEP_* also turn them on.
  std::string function_name;
  bool keep_ir = false, keep_ptx = false, keep_cubin = false;
  std::string dump_dir;
  // Where kernels run. Auto: the GPU, or the CPU emulator when no CUDA device is present.
  // Cpu: always the emulator; PTX is then best effort (skipped when libNVVM is unavailable).
  // Ptx: the PTX libNVVM made, run on the CPU by the PTX executor (emulator/ptx); needs libNVVM.
  enum class Target { Auto, Gpu, Cpu, Ptx } target = Target::Auto;
};

struct CompileTimings {
  double verify_ms = 0, lower_ms = 0, nvvm_ms = 0, link_ms = 0;
  double cache_ms = 0;     // disk-cache lookup (and load, on a hit)
  double load_ms = 0;      // waiting for libNVVM / nvJitLink / libdevice to load (first compile)
  bool cache_hit = false;  // PTX and cubin came from the disk cache
};

// GPU code that already exists (an exported function's): the program is not compiled again.
struct PrebuiltCode {
  std::string ptx;
  std::vector<char> cubin;
};

class CompiledProgram : public emulator::LaunchHandler {
 public:
  CompiledProgram(std::unique_ptr<ir::Module> module, const CompileOptions& options,
                  const PrebuiltCode* prebuilt = nullptr);
  ~CompiledProgram() override;

  // Runs the host program; safe to call from several threads at once.
  std::vector<ir::Scalar> run(const std::vector<ir::Scalar>& args) { return run(args.data(), args.size()); }
  std::vector<ir::Scalar> run(const ir::Scalar* args, size_t num_args);
  // As run(), with the buffers the arguments own: emulated kernels check every access
  // against them (strict: an access outside all of them is an error). `device_memory`, when
  // given, resolves the device addresses of GPU memory staged through host memory (host_staging.h).
  std::vector<ir::Scalar> run(const std::vector<ir::Scalar>& args, const std::vector<emulator::MemoryRegion>& regions,
                              bool strict) {
    return run(args.data(), args.size(), regions, strict);
  }
  std::vector<ir::Scalar> run(const ir::Scalar* args, size_t num_args,
                              const std::vector<emulator::MemoryRegion>& regions, bool strict,
                              const emulator::DeviceAddressMap* device_memory = nullptr);
  void launch(const emulator::LaunchRequest& request) override;
  // Kernels that run on a GPU get the driver's encoding of a TMA descriptor (runtime/tma_descriptor).
  void encode_tma(emulator::TmaDescriptor& d, ir::Type element) override;
  // True when kernels of this program run (or will run) on the CPU: the emulator or, for the Ptx
  // target, the PTX executor.
  bool runs_on_emulator() const;
  CompileOptions::Target target() const { return target_; }

  const std::string& ir_text() const { return ir_text_; }
  // After a disk-cache hit the NVVM IR is lowered again on the first request (it is not stored).
  const std::string& nvvm_text() const;
  // A program rebuilt from stored code (traced_program_cache.h) gets the NVVM IR stored with it.
  void set_nvvm_text(std::string text) { nvvm_text_ = std::move(text); }
  const std::string& ptx() const { return ptx_; }
  const std::vector<char>& cubin() const { return cubin_; }
  const std::string& arch() const { return arch_; }
  const std::string& hash() const { return hash_; }
  const CompileTimings& timings() const { return timings_; }
  bool has_kernels() const { return !kernel_names_.empty(); }
  bool has_device_printf() const { return has_device_printf_; }
  bool host_has_printf() const { return interpreter_->has_printf(); }
  // False when a run is a handful of register operations and launches: such a run is cheaper
  // than releasing and re-taking Python's GIL around it.
  bool run_may_take_long() const {
    return interpreter_->has_loops() || interpreter_->has_printf() || has_device_printf_;
  }
  const ir::Function& host_function() const { return *host_; }
  // The program's IR, for what the IR text leaves out (source locations; traced_program_cache.h).
  const ir::Module& module() const { return *module_; }
  ir::Module& module() { return *module_; }

  // For measuring the host's cost of a call without a GPU: a GPU-target program whose
  // launches pack their parameters and stop short of the driver (benchmarks and tests only).
  void set_discard_launches(bool on) { discard_launches_ = on; }
  bool discards_launches() const { return discard_launches_; }
  uint64_t discarded_launches() const { return discarded_launches_.load(std::memory_order_relaxed); }

 private:
  void load_module();
  void generate_code(const CompileOptions& options);
  std::string disk_cache_key(const CompileOptions& options) const;
  void emulate(const emulator::LaunchRequest& request, const emulator::EmulatorConfig& config);
  friend class EmulatorLauncher;

  std::unique_ptr<ir::Module> module_;
  ir::Function* host_ = nullptr;
  std::unique_ptr<emulator::HostInterpreter> interpreter_;
  std::string ir_text_, ptx_, arch_, hash_;
  mutable std::string nvvm_text_;
  bool nvvm_line_info_ = false;  // how nvvm_text_ is lowered when it is asked for after a cache hit
  std::vector<char> cubin_;
  std::vector<std::string> kernel_names_;
  CompileTimings timings_;
  bool has_device_printf_ = false;

  std::mutex load_mu_;
  std::atomic<void*> cu_module_{nullptr};
  void* cu_context_ = nullptr;  // the CUcontext the module was loaded into; set before cu_module_
  // The CUfunction of each Launch op of the host program, filled when the module loads; a
  // launch finds its kernel by comparing op pointers instead of hashing the kernel name.
  std::vector<std::pair<const ir::Op*, void*>> launch_targets_;

  bool discard_launches_ = false;
  std::atomic<uint64_t> discarded_launches_{0};
  CompileOptions::Target target_ = CompileOptions::Target::Auto;
  std::string ptx_error_;  // why PTX is missing when a CPU target skipped it
  std::mutex emu_mu_;
  std::unique_ptr<emulator::ptx::PtxExecutor> ptx_executor_;  // the Ptx target's, built on first launch
  // Emulators by kernel name, built on first launch.
  std::vector<std::pair<std::string, std::unique_ptr<emulator::DeviceEmulator>>> emulators_;
};

// True when the module's kernels call printf (so a call synchronises to show their output).
bool module_has_device_printf(const ir::Module& m);

}  // namespace opencute::runtime
