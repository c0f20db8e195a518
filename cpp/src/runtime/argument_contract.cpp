#include "runtime/argument_contract.h"

#include <stdexcept>

#include "dsl/dtype.h"
#include "runtime/tensor_spec.h"

namespace opencute::runtime {

void resolve_argument_plan(ArgumentPlan& plan, const std::vector<ir::Type>& slot_types) {
  if (plan.slots.size() != slot_types.size()) throw std::logic_error("argument plan does not match the host program");
  for (TensorContract& c : plan.checks) {
    c.element = nullptr;
    // Every tensor has one data slot; its pointer type says what the code assumes.
    for (size_t i = 0; i < plan.slots.size(); ++i) {
      const PlanSlot& s = plan.slots[i];
      if (s.kind != SlotKind::TensorData || s.source != c.source) continue;
      c.element = slot_types[i]->element;
      c.align = slot_types[i]->align > 1 ? slot_types[i]->align : 1;
    }
    if (!c.element) throw std::logic_error("a tensor check without a data slot");
    c.dl_code = 255;
    c.dl_bits = 0;
    for (int code = 0; code < 32 && c.dl_code == 255; ++code)
      for (int bits = 1; bits <= 64; ++bits)
        if (dsl::dtype_from_dlpack(uint8_t(code), uint8_t(bits)) == c.element) {
          c.dl_code = uint8_t(code);
          c.dl_bits = uint8_t(bits);
          break;
        }
    for (PlanSameAs& e : c.same_as) {
      if (e.slot < 0 || size_t(e.slot) >= plan.slots.size()) throw std::logic_error("a shared symbol without a slot");
      const PlanSlot& first = plan.slots[size_t(e.slot)];
      e.first_source = first.source;
      e.first_stride = first.kind == SlotKind::TensorStride;
      e.first_mode = first.mode;
    }
  }
}

std::vector<int> check_of_slots(const ArgumentPlan& plan) {
  std::vector<int> out(plan.slots.size(), -1);
  for (size_t k = 0; k < plan.checks.size(); ++k)
    for (size_t i = 0; i < plan.slots.size(); ++i)
      if (plan.slots[i].kind == SlotKind::TensorData && plan.slots[i].source == plan.checks[k].source) out[i] = int(k);
  return out;
}

bool DLTensorContractView::element_matches(ir::Type element) const {
  return (t.dtype_lanes == 1 ? dsl::dtype_from_dlpack(t.dtype_code, t.dtype_bits) : nullptr) == element;
}

namespace {

using F = ContractFindings;
using std::to_string;

// The first broken rule of `rules` by mode, a rule listed earlier first at one mode; kNumRules if none.
F::Rule first_by_mode(const F& f, std::initializer_list<F::Rule> rules) {
  F::Rule best = F::kNumRules;
  for (F::Rule r : rules)
    if (f.has(r) && (best == F::kNumRules || f.at[r] < f.at[best])) best = r;
  return best;
}

ArgumentError none() { return {nullptr, nullptr, {}}; }

// ---- the default ABI and the direct call (dsl::UserError codes) ----
ArgumentError compiled_function_error(const TensorContract& c, const F& f, const MessageInputs& in) {
  const std::string label = "argument #" + to_string(c.source) + (c.name.empty() ? "" : " (" + c.name + ")");
  auto layout = [&](const std::string& why) {
    return ArgumentError{"ARG_LAYOUT_MISMATCH", "ValueError",
                         "argument #" + to_string(c.source) + " has layout " + in.layout +
                             " but the function was compiled for " + c.description + why};
  };
  if (f.has(F::kDtype))
    return {"TYPE_ARG_DTYPE_MISMATCH", "TypeError",
            label + " has element type " + in.got_element + " but the function was compiled for " +
                dsl::framework_dtype_name(c.element) + " (" + dsl::dtype_name(c.element) + ")"};
  if (f.has(F::kMemory)) {
    if (f.where == KernelMemory::Host || f.where == KernelMemory::HostStaged)
      return {"ARG_DEVICE_MISMATCH", "ValueError",
              label + " is in GPU memory, but this function's kernels run on the CPU emulator, which reads host memory"};
    return {"ARG_DEVICE_MISMATCH", "ValueError",
            label + " is in host memory, but this function's kernels run on the GPU; pass a CUDA tensor, or run the "
                    "kernels on the CPU emulator (cute.compile(..., options=\"--target cpu\") or CUTE_DSL_TARGET=cpu)"};
  }
  if (f.has(F::kAlignment))
    return {"ARG_ALIGNMENT_MISMATCH", "ValueError",
            label + ": data address " + to_string(f.got[F::kAlignment]) + " is not aligned to the " +
                to_string(c.align) + " bytes the function was compiled for"};
  if (f.has(F::kRank) || f.has(F::kShape) || f.has(F::kStride)) return layout("");
  switch (first_by_mode(f, {F::kShapeDivisibility, F::kStrideDivisibility})) {
    case F::kShapeDivisibility: {
      const int m = f.at[F::kShapeDivisibility];
      return layout(": shape mode " + to_string(m) + " (" + to_string(f.got[F::kShapeDivisibility]) +
                    ") is not divisible by " + to_string(c.shape_div[size_t(m)]));
    }
    case F::kStrideDivisibility: {
      const int m = f.at[F::kStrideDivisibility];
      return layout(": stride mode " + to_string(m) + " (" + to_string(f.got[F::kStrideDivisibility]) +
                    ") is not divisible by " + to_string(c.stride_div[size_t(m)]));
    }
    default: break;
  }
  if (f.has(F::kInt32Layout))
    return {"ARG_LAYOUT_MISMATCH", "ValueError",
            "argument #" + to_string(c.source) + " (" + in.layout + "): " + kInt32OverflowMessage};
  if (f.has(F::kSharedSymbol)) {
    const PlanSameAs& e = c.same_as[size_t(f.at[F::kSharedSymbol])];
    return {"ARG_LAYOUT_MISMATCH", "ValueError",
            label + ": " + (e.stride ? "stride" : "shape") + " mode " + to_string(e.mode) + " is " +
                to_string(f.got[F::kSharedSymbol]) + " but must equal " + (e.first_stride ? "stride" : "shape") +
                " mode " + to_string(e.first_mode) + " of argument #" + to_string(e.first_source) + " (" +
                to_string(f.want_same) + "): the function was compiled with one symbol for both"};
  }
  return none();  // a negative extent the layout allows
}

// ---- TVM-FFI functions (tvm-ffi's own wording) ----
ArgumentError tvm_ffi_error(const TensorContract& c, const F& f, const MessageInputs& in) {
  auto value_error = [](std::string m) { return ArgumentError{"ARG_LAYOUT_MISMATCH", "ValueError", std::move(m)}; };
  const std::string& label = in.label;
  if (f.has(F::kDtype))
    return {"TYPE_ARG_DTYPE_MISMATCH", "TypeError",
            "Mismatched " + label + ".dtype" + in.at + "expected " + dsl::framework_dtype_name(c.element)};
  if (f.has(F::kRank)) return value_error("Mismatched " + label + ".ndim" + in.at + "expected " + to_string(c.shape.size()));
  if (f.has(F::kMemory))
    return value_error("Mismatched " + label + ".device_type" + in.at +
                       (f.where == KernelMemory::Device ? "expected cuda"
                                                        : "expected cpu (this function's kernels run on the CPU emulator)"));
  if (f.has(F::kSharedSymbol)) {
    const PlanSameAs& e = c.same_as[size_t(f.at[F::kSharedSymbol])];
    return value_error("Mismatched " + label + (e.stride ? ".stride[" : ".shape[") + to_string(e.mode) + "]" + in.at +
                       "expected to match " + in.first_labels.at(size_t(f.at[F::kSharedSymbol])) +
                       (e.first_stride ? ".stride[" : ".shape[") + to_string(e.first_mode) + "]");
  }
  const F::Rule r = first_by_mode(f, {F::kShape, F::kShapeDivisibility, F::kStride, F::kStrideDivisibility});
  if (r != F::kNumRules) {
    const size_t m = size_t(f.at[r]);
    const bool shape = r == F::kShape || r == F::kShapeDivisibility;
    // A static entry that differs is "Mismatched" (what quack's tests expect of the CuTe DSL); an
    // entry that breaks its divisibility is "Invalid" (the CuTe DSL's TVM-FFI documentation).
    const std::string entry = label + (shape ? ".shape" : ".stride") + "[" + to_string(m) + "]" + in.at;
    switch (r) {
      case F::kShape: return value_error("Mismatched " + entry + "expected " + to_string(c.shape[m]));
      case F::kShapeDivisibility:
        return value_error("Invalid " + entry + "expected to be divisible by " + to_string(c.shape_div[m]));
      case F::kStride: return value_error("Mismatched " + entry + "expected " + to_string(c.stride[m]));
      default: return value_error("Invalid " + entry + "expected to be divisible by " + to_string(c.stride_div[m]));
    }
  }
  if (f.has(F::kAlignment))
    return value_error("Misaligned Tensor data" + in.at + "expected data alignment=" + to_string(c.align) + " bytes");
  return none();  // TVM-FFI has not checked negative extents or the Int32 layout
}

// ---- exported programs called through C (the static entries are compiled in) ----
ArgumentError exported_c_error(const TensorContract& c, const F& f, const MessageInputs& in) {
  auto value_error = [](std::string m) { return ArgumentError{"ARG_LAYOUT_MISMATCH", "ValueError", std::move(m)}; };
  const std::string& label = in.label;
  if (f.has(F::kAlignment))
    return value_error(label + ": data address " + to_string(f.got[F::kAlignment]) + " is not aligned to the " +
                       to_string(c.align) + " bytes the function was compiled for");
  const F::Rule r = first_by_mode(f, {F::kNegativeShape, F::kShapeDivisibility});
  if (r == F::kNegativeShape)
    return value_error(label + ": shape mode " + to_string(f.at[r]) + " is negative");
  if (r == F::kShapeDivisibility)
    return value_error(label + ": shape mode " + to_string(f.at[r]) + " (" + to_string(f.got[r]) +
                       ") is not divisible by " + to_string(c.shape_div[size_t(f.at[r])]) + " as " + c.description +
                       " requires");
  if (f.has(F::kStrideDivisibility)) {
    const int m = f.at[F::kStrideDivisibility];
    return value_error(label + ": stride mode " + to_string(m) + " (" + to_string(f.got[F::kStrideDivisibility]) +
                       ") is not divisible by " + to_string(c.stride_div[size_t(m)]) + " as " + c.description +
                       " requires");
  }
  if (f.has(F::kSharedSymbol)) {
    const PlanSameAs& e = c.same_as[size_t(f.at[F::kSharedSymbol])];
    return value_error(label + ": " + (e.stride ? "stride" : "shape") + " mode " + to_string(e.mode) + " is " +
                       to_string(f.got[F::kSharedSymbol]) + " but must equal " + to_string(f.want_same) +
                       ": the function was compiled with one symbol for both");
  }
  return none();
}

// ---- exported programs called through TVM-FFI ----
ArgumentError exported_tvm_ffi_error(const TensorContract& c, const F& f, const MessageInputs& in) {
  auto value_error = [](std::string m) { return ArgumentError{"ARG_LAYOUT_MISMATCH", "ValueError", std::move(m)}; };
  const std::string& label = in.label;
  if (f.has(F::kDtype))
    return {"TYPE_ARG_DTYPE_MISMATCH", "TypeError",
            "Mismatched Tensor dtype on " + label + ", expected " + in.want_element + ", got " + in.got_element};
  if (f.has(F::kMemory))
    return value_error("Mismatched Tensor device on " + label + ": its kernels run on the GPU, got a " +
                       (f.memory == TensorMemory::Host ? "CPU" : "non-CUDA") + " tensor");
  if (f.has(F::kRank))
    return value_error("Mismatched Tensor rank on " + label + ", expected " + to_string(c.shape.size()) + ", got " +
                       to_string(f.got[F::kRank]));
  if (f.has(F::kAlignment))
    return value_error("Misaligned Tensor data on " + label + ", expected data alignment=" + to_string(c.align) +
                       " bytes");
  const F::Rule r = first_by_mode(f, {F::kShape, F::kStride, F::kShapeDivisibility, F::kStrideDivisibility});
  if (r == F::kNumRules) return none();  // not checked here: negative extents, the Int32 layout, shared symbols
  const size_t m = size_t(f.at[r]);
  const std::string at = label + ": mode " + to_string(m);
  switch (r) {
    case F::kShape: return value_error("Mismatched shape on " + at + " is " + to_string(f.got[r]) + ", expected " + to_string(c.shape[m]));
    case F::kStride: return value_error("Mismatched stride on " + at + " is " + to_string(f.got[r]) + ", expected " + to_string(c.stride[m]));
    case F::kShapeDivisibility:
      return value_error("Invalid shape on " + at + " (" + to_string(f.got[r]) + ") is not divisible by " + to_string(c.shape_div[m]));
    default:
      return value_error("Invalid stride on " + at + " (" + to_string(f.got[r]) + ") is not divisible by " + to_string(c.stride_div[m]));
  }
}

// ---- XLA FFI custom calls (buffers: row-major, kernel modes permuted) ----
ArgumentError xla_error(const TensorContract& c, const F& f, const MessageInputs& in) {
  auto invalid = [](std::string m) { return ArgumentError{"ARG_LAYOUT_MISMATCH", "ValueError", std::move(m)}; };
  const std::string who = in.function + ": " + in.label;
  if (f.has(F::kDtype))
    return invalid(who + " has element type " + in.got_element + " but the kernel was compiled for " + in.want_element);
  if (f.has(F::kRank))
    return invalid(who + " has rank " + to_string(f.got[F::kRank]) + " but the kernel was compiled for rank " +
                   to_string(c.shape.size()));
  // Strides follow from the extents (row-major): checked after them, so a wrong extent is named.
  for (auto group : {std::initializer_list<F::Rule>{F::kShape, F::kShapeDivisibility},
                     std::initializer_list<F::Rule>{F::kStride, F::kStrideDivisibility}}) {
    const F::Rule r = first_by_mode(f, group);
    if (r == F::kNumRules) continue;
    const size_t m = size_t(f.at[r]);
    const bool shape = r == F::kShape || r == F::kShapeDivisibility;
    const std::string what = who + (shape ? " has extent " : " has stride ") + to_string(f.got[r]) +
                             " in kernel mode " + to_string(m);
    if (r == F::kShape) return invalid(what + " but the kernel was compiled for " + to_string(c.shape[m]));
    if (r == F::kStride) return invalid(what + " but the kernel was compiled for " + to_string(c.stride[m]));
    return invalid(what + ", which the kernel assumes divisible by " +
                   to_string(shape ? c.shape_div[m] : c.stride_div[m]));
  }
  if (f.has(F::kAlignment))
    return invalid(who + " is not aligned to the " + to_string(c.align) + " bytes the kernel assumes");
  return none();
}

}  // namespace

ArgumentError argument_error(MessageStyle style, const TensorContract& c, const ContractFindings& findings,
                             const MessageInputs& in) {
  switch (style) {
    case MessageStyle::CompiledFunction: return compiled_function_error(c, findings, in);
    case MessageStyle::TvmFfi: return tvm_ffi_error(c, findings, in);
    case MessageStyle::ExportedC: return exported_c_error(c, findings, in);
    case MessageStyle::ExportedTvmFfi: return exported_tvm_ffi_error(c, findings, in);
    case MessageStyle::Xla: return xla_error(c, findings, in);
  }
  return none();
}

namespace {
// A runtime pointer's type key, "Float32,1,16": element type, address space, alignment.
struct PointerKey {
  std::string element;
  int space = -1;
  int64_t align = 0;
};
bool parse_pointer_key(const std::string& key, PointerKey* out) {
  const size_t b = key.rfind(',');
  if (b == std::string::npos || b == 0) return false;
  const size_t a = key.rfind(',', b - 1);
  if (a == std::string::npos) return false;
  try {
    out->element = key.substr(0, a);
    out->space = std::stoi(key.substr(a + 1, b - a - 1));
    out->align = std::stoll(key.substr(b + 1));
  } catch (const std::exception&) {
    return false;
  }
  return true;
}
}  // namespace

bool pointer_type_fits(const std::string& compiled_key, const std::string& given_key, int64_t address, int64_t align) {
  if (given_key == compiled_key) return true;
  PointerKey want, got;
  if (!parse_pointer_key(compiled_key, &want) || !parse_pointer_key(given_key, &got)) return false;
  constexpr int kGeneric = 0;  // AddressSpace.generic
  return got.element == want.element && (got.space == want.space || got.space == kGeneric || want.space == kGeneric) &&
         (align <= 1 || address % align == 0);
}

ArgumentError check_pointer(const PointerContract& c, const std::string& type_key, int64_t address,
                            const std::string& shown) {
  if (type_key.empty() || !pointer_type_fits(c.type_key, type_key, address, c.align))
    return {"ARG_POINTER_MISMATCH", "TypeError",
            "argument #" + to_string(c.source) + " is " + shown + " but the function was compiled for " + c.description};
  if (c.align > 1 && address % c.align != 0)
    return {"ARG_POINTER_MISMATCH", "ValueError",
            "argument #" + to_string(c.source) + ": address " + to_string(address) + " is not aligned to " +
                to_string(c.align) + " bytes as " + c.description + " requires"};
  return none();
}

ArgumentError int32_entry_error(MessageStyle style, const std::string& label, bool shape, int mode, int64_t value,
                                const std::string& at) {
  if (style == MessageStyle::TvmFfi)
    return {"ARG_LAYOUT_MISMATCH", "ValueError",
            "Invalid " + label + (shape ? ".shape[" : ".stride[") + to_string(mode) + "]" + at +
                "expected to fit in int32, got " + to_string(value)};
  if (style == MessageStyle::Xla)
    return {"ARG_LAYOUT_MISMATCH", "ValueError",
            label + (shape ? " extent " : " stride ") + to_string(value) + " does not fit the kernel's 32-bit integer"};
  return {"ARG_LAYOUT_MISMATCH", "ValueError",
          label + ": " + (shape ? "shape" : "stride") + " mode " + to_string(mode) + " is " + to_string(value) +
              ", which does not fit the Int32 it was compiled as"};
}

namespace {
bool is_tensor_slot(const PlanSlot& s) {
  return s.kind == SlotKind::TensorData || s.kind == SlotKind::TensorShape || s.kind == SlotKind::TensorStride;
}
}  // namespace

TensorReads build_tensor_reads(const ArgumentPlan& plan, const std::vector<ir::Type>& slot_types) {
  TensorReads out;
  out.read_of_slot.assign(plan.slots.size(), -1);
  const std::vector<int> check_of_slot = check_of_slots(plan);
  const std::vector<PlanSlot>& slots = plan.slots;
  for (size_t i = 0; i < slots.size();) {
    if (!is_tensor_slot(slots[i])) {
      ++i;
      continue;
    }
    const size_t first = i;
    const int source = slots[i].source;
    while (i < slots.size() && is_tensor_slot(slots[i]) && slots[i].source == source) ++i;
    TensorRead r;
    r.first_slot = int32_t(first);
    bool fits = i - first <= size_t(TensorRead::kMaxSlots);
    for (size_t k = first; fits && k < i; ++k) {
      const PlanSlot& s = slots[k];
      const ir::Type type = slot_types[k];
      if (check_of_slot[k] >= 0) r.check = check_of_slot[k];
      TensorRead::Slot slot{TensorRead::kData, TensorRead::kAsIs, int16_t(s.mode)};
      if (s.kind != SlotKind::TensorData) {
        slot.what = s.kind == SlotKind::TensorShape ? TensorRead::kShape : TensorRead::kStride;
        // Extents and strides as 64-bit values or Int32 (range-checked); other widths per slot.
        if (type->width == 32) slot.narrow = type->is_signed ? TensorRead::kSigned32 : TensorRead::kUnsigned32;
        else if (type->width < 64) fits = false;
      }
      r.slots[r.num_slots++] = slot;
    }
    if (fits && r.check >= 0) {
      const TensorContract& c = plan.checks[size_t(r.check)];
      const bool power_of_two = (c.align & (c.align - 1)) == 0;
      fits = c.dl_code != 255 && c.shape.size() <= 255 && power_of_two;
      r.rank = uint8_t(c.shape.size());
      r.dl_code = c.dl_code;
      r.dl_bits = c.dl_bits;
      r.int32_strides = c.int32_strides;
      r.align_mask = uint64_t(c.align > 1 ? c.align - 1 : 0);
      fits = fits && c.same_as.size() <= 255;
      if (fits) {
        r.modes_at = uint32_t(out.modes.size());
        for (size_t m = 0; m < c.shape.size(); ++m)
          out.modes.push_back({c.shape[m], c.stride[m], c.shape_div[m], c.stride_div[m]});
        r.same_as_at = uint32_t(out.same_as.size());
        r.num_same_as = uint8_t(c.same_as.size());
        for (const PlanSameAs& e : c.same_as)
          out.same_as.push_back({e.stride, int16_t(e.mode), e.first_source == c.source, e.first_stride,
                                 int16_t(e.first_mode), int32_t(e.slot)});
      }
    }
    if (!fits) continue;
    out.read_of_slot[first] = int(out.reads.size());
    out.reads.push_back(r);
  }
  return out;
}

}  // namespace opencute::runtime
