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
  check_of_source_.assign(params_.size(), nullptr);
  align_of_source_.assign(params_.size(), 1);
  for (auto& c : function_.plan.checks)
    if (c.source >= 0 && size_t(c.source) < params_.size()) check_of_source_[size_t(c.source)] = &c;
  for (size_t i = 0; i < function_.plan.slots.size(); ++i) {
    const PlanSlot& s = function_.plan.slots[i];
    ir::Type t = host_->args()[i]->type;
    if (s.kind == SlotKind::TensorData && t->align > 1) align_of_source_[size_t(s.source)] = t->align;
  }
}

ExportedProgram::~ExportedProgram() {
  if (void* m = cu_module_.load()) {
    try {
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
  // Tensor arguments: the layout entries the code assumed (divisibility, Int32 range) and the
  // data alignment, as the Python call path checks them.
  for (size_t src = 0; src < params_.size(); ++src) {
    const CParameter& c = params_[src];
    if (c.kind != CParameter::Tensor) continue;
    auto* base = static_cast<const unsigned char*>(args[src]);
    void* data;
    std::memcpy(&data, base, sizeof data);
    if (align_of_source_[src] > 1 && reinterpret_cast<uintptr_t>(data) % uint64_t(align_of_source_[src]) != 0)
      throw ExportedCallError(label(c, src) + ": data address " + std::to_string(reinterpret_cast<uintptr_t>(data)) +
                              " is not aligned to the " + std::to_string(align_of_source_[src]) +
                              " bytes the function was compiled for");
    const TensorContract* check = check_of_source_[src];
    if (!check) continue;
    for (size_t k = 0; k < c.dynamic_shape_modes.size(); ++k) {
      int mode = c.dynamic_shape_modes[k];
      int64_t v = read_int(base + c.shapes_offset + k * size_t(c.shape_width / 8), c.shape_width);
      int64_t div = size_t(mode) < check->shape_div.size() ? check->shape_div[size_t(mode)] : 1;
      if (v < 0) throw ExportedCallError(label(c, src) + ": shape mode " + std::to_string(mode) + " is negative");
      if (div > 1 && v % div != 0)
        throw ExportedCallError(label(c, src) + ": shape mode " + std::to_string(mode) + " (" + std::to_string(v) +
                                ") is not divisible by " + std::to_string(div) + " as " + check->description +
                                " requires");
    }
    for (size_t k = 0; k < c.dynamic_stride_modes.size(); ++k) {
      int mode = c.dynamic_stride_modes[k];
      int64_t v = read_int(base + c.strides_offset + k * size_t(c.stride_width / 8), c.stride_width);
      int64_t div = size_t(mode) < check->stride_div.size() ? check->stride_div[size_t(mode)] : 1;
      // A size-1 mode is never stepped along, so its stride does not matter.
      const bool size_one = size_t(mode) < check->shape.size() &&
                            (check->shape[size_t(mode)] >= 0 ? check->shape[size_t(mode)] == 1
                             : std::count(c.dynamic_shape_modes.begin(), c.dynamic_shape_modes.end(), mode) &&
                                   dynamic_entry(c, base, true, mode) == 1);
      if (div > 1 && !size_one && v % div != 0)
        throw ExportedCallError(label(c, src) + ": stride mode " + std::to_string(mode) + " (" + std::to_string(v) +
                                ") is not divisible by " + std::to_string(div) + " as " + check->description +
                                " requires");
    }
  }
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
          throw ExportedCallError(label(c, size_t(s.source)) + ": " + (shape ? "shape" : "stride") + " mode " +
                                  std::to_string(s.mode) + " is " + std::to_string(v) +
                                  ", which does not fit the Int32 it was compiled as");
        vals[i] = ir::Scalar::of_int(ir::wrap_int(t, v));
        break;
      }
    }
  }
  // Entries that share a symbol with an earlier tensor must hold the value the code uses.
  for (const TensorContract& check : function_.plan.checks)
    for (const PlanSameAs& e : check.same_as) {
      const CParameter& c = params_[size_t(check.source)];
      int64_t got = dynamic_entry(c, static_cast<const unsigned char*>(args[size_t(check.source)]), !e.stride, e.mode);
      int64_t want = vals.at(size_t(e.slot)).i;
      if (got != want)
        throw ExportedCallError(label(c, size_t(check.source)) + ": " + (e.stride ? "stride" : "shape") + " mode " +
                                std::to_string(e.mode) + " is " + std::to_string(got) + " but must equal " +
                                std::to_string(want) + ": the function was compiled with one symbol for both");
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
  std::vector<const ir::Op*> launches;
  collect_launches(*host_->body, &launches);
  for (const ir::Op* op : launches) launch_targets_.emplace_back(op, drv.get_function(m, op->str_attr));
  cu_module_.store(m, std::memory_order_release);
}

void ExportedProgram::encode_tma(emulator::TmaDescriptor& d, ir::Type element) { encode_tma_descriptor(d, element); }

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
  launch_on_gpu(fn, r);
}

}  // namespace opencute::runtime
