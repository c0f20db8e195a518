#include "runtime/exported_program.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "ir/parser.h"
#include "ir/scalar_semantics.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_launch.h"
#include "runtime/tensor_spec.h"
#include "runtime/tma_descriptor.h"

namespace opencute::runtime {

namespace {

void collect_launches(const ir::Block& b, std::vector<const ir::Op*>* out) {
  for (auto& op : b.ops) {
    if (op->code == ir::OpCode::Launch) out->push_back(op.get());
    for (auto& r : op->regions) collect_launches(*r.block, out);
  }
}

int64_t read_int(const unsigned char* p, int width) {
  if (width == 32) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::string label(const CParameter& c, size_t source) {
  return "argument #" + std::to_string(source) + " (" + c.name + ")";
}

}  // namespace

ExportedProgram::ExportedProgram(ExportedFunction f) : function_(std::move(f)) {
  module_ = ir::parse_module(function_.module_text);
  host_ = module_->host();
  if (!host_) throw std::runtime_error("exported function '" + function_.name + "' has no host program");
  interpreter_ = std::make_unique<emulator::HostInterpreter>(*host_);
  params_ = c_parameters(function_, *host_);
  for (auto& fn : module_->functions)
    if (fn->kind == ir::FunctionKind::Kernel) kernel_names_empty_ = false;
  std::vector<ir::Type> types;
  for (const auto& a : host_->args()) types.push_back(a->type);
  resolve_argument_plan(function_.plan, types);
  check_of_source_.assign(params_.size(), nullptr);
  for (auto& c : function_.plan.checks)
    if (c.source >= 0 && size_t(c.source) < params_.size()) check_of_source_[size_t(c.source)] = &c;
}

ExportedProgram::~ExportedProgram() {
  if (void* m = cu_module_.load()) {
    try {
      // The thread that drops the program may never have launched: unload from the module's context.
      CudaDriver::get().ensure_context_current_on_this_thread(cu_context_);
      CudaDriver::get().unload_module(m);
    } catch (...) {
      // The context may already be gone at exit; nothing useful to report.
    }
  }
}

namespace {

// Dynamic shape or stride `mode` of a tensor argument's C struct (fields in mode order).
int64_t dynamic_entry(const CParameter& c, const unsigned char* base, bool shape, int mode) {
  const std::vector<int>& modes = shape ? c.dynamic_shape_modes : c.dynamic_stride_modes;
  size_t k = size_t(std::find(modes.begin(), modes.end(), mode) - modes.begin());
  if (k == modes.size()) throw ExportedCallError("export: no C field for a dynamic mode");
  int width = shape ? c.shape_width : c.stride_width;
  return read_int(base + (shape ? c.shapes_offset : c.strides_offset) + k * size_t(width / 8), width);
}

// A tensor argument's C struct as the argument contract's check reads it.
struct CTensorView {
  const TensorContract& contract;
  const CParameter& c;
  const unsigned char* base;
  bool element_matches(ir::Type) const { return true; }  // compiled in
  TensorMemory memory() const { return TensorMemory::Host; }  // not known: not checked
  uint64_t address() const {
    void* data;
    std::memcpy(&data, base, sizeof data);
    return uint64_t(reinterpret_cast<uintptr_t>(data));
  }
  size_t rank() const { return contract.shape.size(); }
  int64_t shape(size_t m) const { return contract.shape[m] >= 0 ? contract.shape[m] : dynamic_entry(c, base, true, int(m)); }
  int64_t stride(size_t m) const {
    return contract.stride[m] >= 0 ? contract.stride[m] : dynamic_entry(c, base, false, int(m));
  }
};

}  // namespace

void ExportedProgram::run(void** args, size_t num_args) {
  if (num_args != num_c_args())
    throw ExportedCallError("'" + function_.name + "' takes " + std::to_string(num_c_args()) +
                            " argument pointers (its arguments, its results, the status), got " +
                            std::to_string(num_args));
  for (size_t i = 0; i < num_args; ++i)
    if (!args[i]) throw ExportedCallError("argument pointer " + std::to_string(i) + " is null");
  int32_t* status = static_cast<int32_t*>(args[num_args - 1]);
  *status = 0;
  std::vector<ir::Scalar> vals(function_.plan.slots.size());
  for (size_t i = 0; i < vals.size(); ++i) {
    const PlanSlot& s = function_.plan.slots[i];
    const CParameter& c = params_[size_t(s.source)];
    ir::Type t = host_->args()[i]->type;
    auto* base = static_cast<const unsigned char*>(args[size_t(s.source)]);
    switch (s.kind) {
      case SlotKind::Scalar: vals[i] = ir::load_scalar(t, base); break;
      case SlotKind::TensorData:
      case SlotKind::Stream:
      case SlotKind::Pointer: {
        void* p;
        std::memcpy(&p, base, sizeof p);
        vals[i] = ir::Scalar::of_int(int64_t(reinterpret_cast<uintptr_t>(p)));
        break;
      }
      case SlotKind::TensorShape:
      case SlotKind::TensorStride: {
        bool shape = s.kind == SlotKind::TensorShape;
        int64_t v = dynamic_entry(c, base, shape, s.mode);
        if (t->width == 32 && (v < INT32_MIN || v > INT32_MAX))
          throw ExportedCallError(
              int32_entry_error(MessageStyle::ExportedC, label(c, size_t(s.source)), shape, s.mode, v).message);
        vals[i] = ir::Scalar::of_int(ir::wrap_int(t, v));
        break;
      }
      case SlotKind::CPointer: break;  // not exported
    }
  }
  // Tensor arguments against the argument contract: the data alignment, the layout entries the
  // code assumed (divisibility) and symbols shared with earlier tensors, as every call path
  // checks them. The static entries are compiled in; the C struct carries the dynamic ones.
  for (size_t src = 0; src < params_.size(); ++src) {
    const CParameter& c = params_[src];
    const TensorContract* check = check_of_source_[src];
    if (c.kind != CParameter::Tensor || !check) continue;
    CTensorView view{*check, c, static_cast<const unsigned char*>(args[src])};
    const ContractFindings found = check_tensor(*check, view, KernelMemory::Any, vals.data());
    if (found.ok()) continue;
    MessageInputs in;
    in.label = label(c, src);
    ArgumentError e = argument_error(MessageStyle::ExportedC, *check, found, in);
    if (e.code) throw ExportedCallError(e.message);
  }
  try {
    std::vector<ir::Scalar> results = run_values(vals);
    for (size_t i = 0; i < results.size() && i < host_->result_types.size(); ++i)
      ir::store_scalar(host_->result_types[i], results[i], args[params_.size() + i]);
  } catch (const CudaError& e) {
    *status = e.code() > 0 ? e.code() : 999 /* CUDA_ERROR_UNKNOWN */;
    throw;
  }
}

std::vector<ir::Scalar> ExportedProgram::run_values(const std::vector<ir::Scalar>& slot_values) {
  if (slot_values.size() != host_->args().size())
    throw ExportedCallError("'" + function_.name + "' takes " + std::to_string(host_->args().size()) +
                            " host parameters, got " + std::to_string(slot_values.size()));
  return interpreter_->run(slot_values, this);
}

void ExportedProgram::load_gpu_code() {
  std::lock_guard<std::mutex> lock(load_mu_);
  if (cu_module_.load(std::memory_order_acquire)) return;
  CudaDriver& drv = CudaDriver::get();
  drv.ensure_context(0);
  std::vector<char> image = function_.cubin;
  if (image.empty()) {  // compiled without a cubin: let the driver JIT the PTX
    if (function_.ptx.empty())
      throw emulator::ExecutionError("exported function '" + function_.name +
                                     "' carries no GPU code (it was compiled for the CPU emulator)");
    image.assign(function_.ptx.begin(), function_.ptx.end());
    image.push_back('\0');
  }
  void* m = drv.load_module(image);
  cu_context_ = drv.current_context();
  std::vector<const ir::Op*> launches;
  collect_launches(*host_->body, &launches);
  for (const ir::Op* op : launches) launch_targets_.emplace_back(op, drv.get_function(m, op->str_attr));
  cu_module_.store(m, std::memory_order_release);
}

void ExportedProgram::encode_tma(emulator::TmaDescriptor& d, ir::Type element) {
  // As CompiledProgram::encode_tma: the driver call may want a current context.
  CudaDriver& drv = CudaDriver::get();
  if (cu_module_.load(std::memory_order_acquire)) drv.ensure_context_current_on_this_thread(cu_context_);
  else drv.ensure_context(0);
  encode_tma_descriptor(d, element);
}

void ExportedProgram::launch(const emulator::LaunchRequest& r) {
  if (!cu_module_.load(std::memory_order_acquire)) {
    if (!CudaDriver::get().available())
      throw emulator::ExecutionError("kernel '" + r.kernel() + "' needs a CUDA GPU and none was found");
    load_gpu_code();
  }
  void* fn = nullptr;
  for (auto& [op, f] : launch_targets_)
    if (op == r.op) fn = f;
  if (!fn) throw emulator::ExecutionError("kernel '" + r.kernel() + "' is not part of this program");
  // The module's context, current on whichever thread calls (a C program's worker threads too).
  CudaDriver::get().ensure_context_current_on_this_thread(cu_context_);
  launch_on_gpu_in_context(fn, r, cu_context_);
}

}  // namespace opencute::runtime
