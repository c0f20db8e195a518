#include "runtime/executor.h"

#include "runtime/tma_descriptor.h"

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "support/log.h"
#include "transforms/dead_code.h"
#include "runtime/compile_cache.h"
#include "runtime/cuda_driver.h"
#include "runtime/debug_dumps.h"
#include "runtime/cooperative_grid.h"
#include "runtime/gpu_launch.h"
#include "support/arch.h"
#include "support/env.h"
#include "target/nvvm/lower_to_nvvm.h"
#include "target/nvvm/nvvm_compiler.h"

namespace opencute::runtime {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool block_has_printf(const ir::Block& b) {
  for (auto& op : b.ops) {
    if (op->code == ir::OpCode::Printf) return true;
    for (auto& r : op->regions)
      if (block_has_printf(*r.block)) return true;
  }
  return false;
}
}  // namespace

bool module_has_device_printf(const ir::Module& m) {
  for (auto& f : m.functions)
    if (f->kind == ir::FunctionKind::Kernel && block_has_printf(*f->body)) return true;
  return false;
}

CompiledProgram::CompiledProgram(std::unique_ptr<ir::Module> module, const CompileOptions& options,
                                 const PrebuiltCode* prebuilt)
    : module_(std::move(module)) {
  auto t0 = std::chrono::steady_clock::now();
  transforms::remove_dead_code(*module_);
  ir::verify_or_throw(*module_);
  ir_text_ = ir::print_module(*module_);
  hash_ = ir::printed_module_hash(ir_text_);  // printing FA4's forward again would cost ~15 ms
  host_ = module_->host();
  if (!host_) throw std::runtime_error("module has no host function");
  interpreter_ = std::make_unique<emulator::HostInterpreter>(*host_);
  timings_.verify_ms = ms_since(t0);
  for (auto& f : module_->functions)
    if (f->kind == ir::FunctionKind::Kernel) kernel_names_.push_back(f->name);
  has_device_printf_ = module_has_device_printf(*module_);
  arch_ = options.arch.empty() ? "sm_90a" : options.arch;
  target_ = options.target;
  if (prebuilt) {
    ptx_ = prebuilt->ptx;
    cubin_ = prebuilt->cubin;
  } else if (!kernel_names_.empty()) {
    // Only whole results are cached: a CPU-target compile (PTX only, best effort) is not.
    // The switch is read at each compile (not once per process), as a test or an application
    // may turn it off after the first compile.
    bool cacheable = options.use_disk_cache && options.need_cubin && target_ != CompileOptions::Target::Cpu &&
                     target_ != CompileOptions::Target::Ptx &&
                     DiskCache::instance().enabled() && !support::env_flag("CUTE_DSL_DISABLE_FILE_CACHING");
    std::string key;
    if (cacheable) {
      t0 = std::chrono::steady_clock::now();
      key = disk_cache_key(options);
      std::optional<CachedCode> hit = DiskCache::instance().load(key);
      timings_.cache_ms = ms_since(t0);
      if (hit) {
        nvvm_line_info_ = options.generate_line_info;
        ptx_ = std::move(hit->ptx);
        cubin_ = std::move(hit->cubin);
        timings_.cache_hit = true;  // (nvvm_text() lowers again if the NVVM IR is asked for)
      }
    }
    if (!timings_.cache_hit) {
      generate_code(options);
      if (cacheable && !cubin_.empty()) DiskCache::instance().store(key, CachedCode{ptx_, cubin_});
    }
  }
  write_debug_dumps(options, *this);
}

namespace {
// The source locations of every op (only part of the key with line info: the IR text omits them).
void append_locations(const ir::Block& b, std::string* out) {
  for (auto& op : b.ops) {
    *out += op->file + ":" + std::to_string(op->line) + ";";
    for (auto& r : op->regions) append_locations(*r.block, out);
  }
}
}  // namespace

std::string CompiledProgram::disk_cache_key(const CompileOptions& o) const {
  // Everything that decides the PTX and cubin, and nothing else (the function's Python name
  // does not: two functions tracing to the same IR share an entry).
  std::string key = "opencute " + o.version + "\nbuild " + library_build_identity() + "\narch " + arch_ + "\nopt-level " + std::to_string(o.opt_level) +
                    "\nline-info " + (o.generate_line_info ? "1" : "0") + "\nptxas-options " + o.ptxas_options +
                    "\n";
  if (o.generate_line_info) {
    std::string locations;
    for (auto& f : module_->functions)
      if (f->kind == ir::FunctionKind::Kernel) append_locations(*f->body, &locations);
    key += "locations " + locations + "\n";
  }
  return key + ir_text_;
}

const std::string& CompiledProgram::nvvm_text() const {
  if (nvvm_text_.empty() && timings_.cache_hit && module_)
    nvvm_text_ = target::lower_kernels_to_nvvm(*module_, nvvm_line_info_, arch_).text;
  return nvvm_text_;
}

void CompiledProgram::generate_code(const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  target::NvvmModuleText nvvm = target::lower_kernels_to_nvvm(*module_, options.generate_line_info, arch_);
  nvvm_text_ = nvvm.text;
  timings_.lower_ms = ms_since(t0);

  // Kernels that will run on the CPU emulator need neither PTX nor a cubin: both are then
  // best effort (for inspection), so a machine without libNVVM / nvJitLink can still compile.
  const bool emulated = target_ == CompileOptions::Target::Cpu ||
                        (target_ == CompileOptions::Target::Auto && !CudaDriver::get().available());
  // OPENCUTE_EMULATOR_LINK_CUBIN: kernels for the emulator are also linked to a cubin, and a
  // toolchain that rejects them (or is missing) is an error: the check that what the emulator runs
  // is code the GPU's toolchain accepts for the arch (sm_100a on a machine without a Blackwell).
  const bool link_for_emulator = emulated && support::env_flag("OPENCUTE_EMULATOR_LINK_CUBIN");
  const bool best_effort = emulated && !link_for_emulator;
  try {
    // What the libraries' own timers leave out is loading them: the first compile's extra.
    auto t_nvvm = std::chrono::steady_clock::now();
    target::PtxResult ptx = target::compile_nvvm_ir_to_ptx(nvvm.text, arch_, options.opt_level,
                                                           options.generate_line_info, nvvm.needs_libdevice);
    timings_.load_ms += std::max(0.0, ms_since(t_nvvm) - ptx.ms);
    ptx_ = std::move(ptx.ptx);
    timings_.nvvm_ms = ptx.ms;
    if (!options.need_cubin || (target_ == CompileOptions::Target::Cpu && !link_for_emulator) ||
        target_ == CompileOptions::Target::Ptx)
      return;
    auto t_link = std::chrono::steady_clock::now();
    target::CubinResult cubin = target::link_ptx_to_cubin(ptx_, arch_, options.opt_level, options.ptxas_options);
    timings_.load_ms += std::max(0.0, ms_since(t_link) - cubin.ms);
    cubin_ = std::move(cubin.cubin);
    timings_.link_ms = cubin.ms;
    // ptxas's report (registers, spills with --ptxas-options -v) for CUTE_DSL_LOG_* users.
    if (!cubin.log.empty()) support::log(support::LogLevel::Info, cubin.linker + ": " + cubin.log);
  } catch (const std::exception& e) {
    if (!best_effort) throw;
    ptx_error_ = e.what();
  }
}

CompiledProgram::~CompiledProgram() {
  if (void* m = cu_module_.load()) {
    try {
      // The thread that drops the program may never have launched: unload from the module's context.
      CudaDriver::get().ensure_context_current_on_this_thread(cu_context_);
      CudaDriver::get().unload_module(m);
    } catch (...) {
      // The context may already be gone at interpreter exit; nothing useful to report.
    }
  }
}

namespace {

void collect_launches(const ir::Block& b, std::vector<const ir::Op*>* out) {
  for (auto& op : b.ops) {
    if (op->code == ir::OpCode::Launch) out->push_back(op.get());
    for (auto& r : op->regions) collect_launches(*r.block, out);
  }
}

// Records the streams a run launched on, for the printf synchronisation after the run.
class StreamRecorder : public emulator::LaunchHandler {
 public:
  explicit StreamRecorder(CompiledProgram* program) : program_(program) {}
  void launch(const emulator::LaunchRequest& r) override {
    program_->launch(r);
    streams.push_back(r.stream);
  }
  void encode_tma(emulator::TmaDescriptor& d, ir::Type element) override { program_->encode_tma(d, element); }
  std::vector<void*> streams;

 private:
  CompiledProgram* program_;
};

}  // namespace

void CompiledProgram::load_module() {
  std::lock_guard<std::mutex> lock(load_mu_);
  if (cu_module_.load(std::memory_order_acquire)) return;
  if (cubin_.empty()) throw emulator::ExecutionError("this executor was compiled without a cubin");
  CudaDriver& drv = CudaDriver::get();
  void* m = drv.load_module(cubin_);
  cu_context_ = drv.current_context();
  std::vector<const ir::Op*> launches;
  collect_launches(*host_->body, &launches);
  for (const ir::Op* op : launches) launch_targets_.emplace_back(op, drv.get_function(m, op->str_attr));
  cu_module_.store(m, std::memory_order_release);
}

// Passes a run's argument buffers to the emulator with each launch.
class EmulatorLauncher : public emulator::LaunchHandler {
 public:
  EmulatorLauncher(CompiledProgram* program, const std::vector<emulator::MemoryRegion>* regions, bool strict,
                   const emulator::DeviceAddressMap* device_memory = nullptr)
      : program_(program) {
    config_.regions = regions;
    config_.strict = strict;
    config_.device_memory = device_memory;
  }
  void launch(const emulator::LaunchRequest& r) override { program_->emulate(r, config_); }

 private:
  CompiledProgram* program_;
  emulator::EmulatorConfig config_;
};

bool CompiledProgram::runs_on_emulator() const {
  if (target_ == CompileOptions::Target::Cpu || target_ == CompileOptions::Target::Ptx) return true;
  if (target_ == CompileOptions::Target::Gpu) return false;
  return has_kernels() && !CudaDriver::get().available();
}

void CompiledProgram::emulate(const emulator::LaunchRequest& r, const emulator::EmulatorConfig& config) {
  if (target_ == CompileOptions::Target::Auto) {
    static std::once_flag announced;
    std::call_once(announced, [] {
      std::fprintf(stderr, "OpenCuTe: no CUDA GPU found; kernels run on the CPU emulator "
                           "(CUTE_DSL_TARGET=cpu selects it explicitly)\n");
    });
  }
  // A cooperative grid must fit on the device at once (the GPU driver's rule, applied to a model of
  // the part the emulator stands for: a B200 for sm_100a, else an H100); the emulator then runs all
  // its blocks concurrently so that they may wait on each other.
  if (r.cooperative) {
    OccupancyModel model;
    if (const support::EmulatedPart* part = support::emulated_part(support::parse_arch(arch_))) {
      model.sms = part->sm_count;
      model.smem_per_sm = part->smem_per_sm_bytes;
    }
    check_cooperative_grid(model, r.grid, r.block, r.smem);
  }
  if (target_ == CompileOptions::Target::Ptx) {
    const emulator::ptx::PtxExecutor* ptx = nullptr;
    {
      std::lock_guard<std::mutex> lock(emu_mu_);
      if (!ptx_executor_) {
        if (ptx_.empty())
          throw emulator::ExecutionError("the ptx target has no PTX to run" +
                                         (ptx_error_.empty() ? std::string() : ": " + ptx_error_));
        ptx_executor_ = std::make_unique<emulator::ptx::PtxExecutor>(ptx_);
      }
      ptx = ptx_executor_.get();
    }
    ptx->launch(r, config);
    return;
  }
  emulator::DeviceEmulator* emu = nullptr;
  {
    std::lock_guard<std::mutex> lock(emu_mu_);
    for (auto& [name, e] : emulators_)
      if (name == r.kernel()) emu = e.get();
    if (!emu) {
      const ir::Function* f = module_->find(r.kernel());
      if (!f || f->kind != ir::FunctionKind::Kernel)
        throw emulator::ExecutionError("kernel '" + r.kernel() + "' is not part of this program");
      emulators_.emplace_back(r.kernel(), std::make_unique<emulator::DeviceEmulator>(*f));
      emu = emulators_.back().second.get();
    }
  }
  emu->launch(r, config);
}

std::vector<ir::Scalar> CompiledProgram::run(const ir::Scalar* args, size_t num_args,
                                             const std::vector<emulator::MemoryRegion>& regions, bool strict,
                                             const emulator::DeviceAddressMap* device_memory) {
  if (!runs_on_emulator()) return run(args, num_args);
  EmulatorLauncher launcher(this, &regions, strict, device_memory);
  return interpreter_->run(args, num_args, &launcher);
}

std::vector<ir::Scalar> CompiledProgram::run(const ir::Scalar* args, size_t num_args) {
  if (runs_on_emulator()) {
    EmulatorLauncher launcher(this, nullptr, false);
    return interpreter_->run(args, num_args, &launcher);
  }
  if (!has_device_printf_ || discard_launches_) return interpreter_->run(args, num_args, this);
  // Device printf output only appears at a synchronisation point; synchronise so that it
  // shows in program order with the host's output, unless a graph is being captured.
  StreamRecorder recorder(this);
  auto results = interpreter_->run(args, num_args, &recorder);
  CudaDriver& drv = CudaDriver::get();
  for (void* s : recorder.streams)
    if (!drv.stream_is_capturing(s)) drv.stream_synchronize(s);
  return results;
}

void CompiledProgram::encode_tma(emulator::TmaDescriptor& d, ir::Type element) {
  if (runs_on_emulator() || discard_launches_) return;
  // The driver call may want a current context: the module's (or, before the first launch loads
  // it, the one that launch will load it into), on whichever thread calls.
  CudaDriver& drv = CudaDriver::get();
  if (cu_module_.load(std::memory_order_acquire)) drv.ensure_context_current_on_this_thread(cu_context_);
  else drv.ensure_context(0);
  encode_tma_descriptor(d, element);
}

void CompiledProgram::launch(const emulator::LaunchRequest& r) {
  CudaDriver& drv = CudaDriver::get();
  if (!cu_module_.load(std::memory_order_acquire) && !discard_launches_) {
    if (target_ == CompileOptions::Target::Cpu || target_ == CompileOptions::Target::Ptx ||
        (target_ == CompileOptions::Target::Auto && !drv.available())) {
      emulate(r, emulator::EmulatorConfig{});
      return;
    }
    if (!drv.available())
      throw emulator::ExecutionError("kernel '" + r.kernel() + "' needs a CUDA GPU and none was found (compile "
                                     "with --target cpu, or leave the target unset, to run it on the CPU emulator)");
    load_module();
  }
  void* fn = nullptr;
  for (auto& [op, f] : launch_targets_)
    if (op == r.op) fn = f;
  if (!fn && discard_launches_) fn = reinterpret_cast<void*>(1);
  if (!fn) throw emulator::ExecutionError("kernel '" + r.kernel() + "' is not part of this program");
  if (discard_launches_) {
    discarded_launches_.fetch_add(1, std::memory_order_relaxed);
    launch_on_gpu(fn, r, true);
    return;
  }
  // The module's context, current on whichever thread calls (Python worker threads included).
  drv.ensure_context_current_on_this_thread(cu_context_);
  launch_on_gpu_in_context(fn, r, cu_context_);
}

}  // namespace opencute::runtime
