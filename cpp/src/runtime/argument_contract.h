// The argument contract of a compiled function: how each host-function parameter is read from a
// call's arguments (the plan), what each tensor argument was compiled for, and the one check of
// a tensor against it. Every call path uses it: the default ABI and the direct @jit call
// (bindings/compiled_function.cpp), TVM-FFI (bindings/tvm_ffi_function.cpp), XLA FFI
// (bindings/xla_ffi_call.cpp), and exported programs called through C (exported_program.cpp) or
// TVM-FFI (export_tvm_ffi.cpp). A call path only reads its own argument format into a view of a
// tensor (element, memory, address, extents, strides) and raises the error this file words.
//
// Two forms of one rule: check_tensor (the full check: every rule, what broke, then the message
// in the caller's wording) and read_dltensor (the compact record of a DLTensor's check and its
// host parameters, decided inline with nothing allocated: the hot path). A tensor the compact
// form does not pass goes to the full check, so the compact form may be stricter (a slower
// call) but never laxer (a wrong answer).
//
// The plan is built once from what tracing saw (python/cutlass/_dsl/jit.py) and travels with an
// exported object as data (export.cpp serializes the traced fields; resolve_argument_plan
// derives the rest from the host program when it is loaded).
#pragma once
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/scalar_semantics.h"
#include "ir/types.h"

namespace opencute::runtime {

// How a host parameter is read from its runtime argument (the values are jit.py's and the
// serialized format's). CPointer: a user object's JIT-argument protocol, `mode` indexes its
// `__c_pointers__()` (an exported program has none).
enum class SlotKind : int { Scalar = 0, TensorData = 1, TensorShape = 2, TensorStride = 3, Stream = 4, Pointer = 5,
                            CPointer = 6 };

struct PlanSlot {  // host parameter i is read from runtime argument `source`
  int source = 0;
  SlotKind kind = SlotKind::Scalar;
  int mode = 0;  // shape/stride mode of tensor entries
};

// An entry that is a symbol (cute.sym_int) first read by an earlier slot: it must equal that
// slot's value, since the traced code uses one value for both.
struct PlanSameAs {
  bool stride = false;  // a stride entry (else a shape entry)
  int mode = 0;
  int slot = 0;         // the slot holding the symbol's value
  // Derived (resolve_argument_plan): the first slot's tensor and entry, so that a symbol used
  // twice in one tensor is compared within it (its slot is read after the check runs).
  int first_source = -1;
  bool first_stride = false;
  int first_mode = 0;
};

struct TensorContract {  // what a tensor argument was compiled for (-1: dynamic entry)
  int source = 0;
  std::vector<int64_t> shape, stride;          // -1 where dynamic
  std::vector<int64_t> shape_div, stride_div;  // what dynamic entries were assumed divisible by
  bool int32_strides = false;                  // dynamic strides are Int32: the layout must fit
  std::string description;                     // the layout the code sees, "(?,4):(4,1)"
  std::string name;                            // the parameter, for messages
  std::vector<PlanSameAs> same_as;
  // Derived from the data slot's pointer type (resolve_argument_plan):
  ir::Type element = nullptr;
  int64_t align = 1;                           // bytes the code assumes of the data pointer
  uint8_t dl_code = 255, dl_bits = 0;          // a DLPack (code, bits) naming `element` (none: 255)
  using SameAs = PlanSameAs;
};

struct PointerContract {  // the pointer type a cute.Pointer argument was compiled for
  int source = 0;
  std::string type_key;  // the runtime pointer's `_type_key`: element type, space, alignment
  int64_t align = 1;
  std::string description;
};

struct ArgumentPlan {
  std::vector<PlanSlot> slots;  // one per host-function parameter, in order
  std::vector<TensorContract> checks;
  std::vector<PointerContract> pointer_checks;
  int num_sources = 0;
  std::vector<int> arg_lengths;        // per runtime argument: -1, or n for a list of n (each a source)
  std::vector<std::string> arg_names;  // one per runtime argument (a list argument is one); may be empty
};

// How the CPU emulator's diagnostics name a tensor argument's memory: by its Python name where
// known, with its position among the call's runtime arguments ("tensor argument `b` (#1)").
inline std::string tensor_region_name(int source, const std::string& name) {
  if (name.empty()) return "tensor argument #" + std::to_string(source);
  return "tensor argument `" + name + "` (#" + std::to_string(source) + ")";
}

// Fills the derived fields from the host program's parameter types (`slot_types`, one per slot).
// Throws std::logic_error when the plan does not fit them.
void resolve_argument_plan(ArgumentPlan& plan, const std::vector<ir::Type>& slot_types);
// The contract of each slot's tensor data slot (-1 elsewhere).
std::vector<int> check_of_slots(const ArgumentPlan& plan);

// ---- the tensor a call passes, as every call path can see it --------------------------------

// Where the program's kernels read tensor memory (Any: the tensors are only passed around).
// HostStaged: the CPU emulator on a machine with a GPU, where device memory is copied to host
// memory around each launch (host_staging.h) rather than refused.
enum class KernelMemory : uint8_t { Any, Host, Device, HostStaged };
// Where a tensor's memory is, by DLPack's device type. Managed memory serves both kinds of
// kernels; pinned host memory is host memory.
enum class TensorMemory : int32_t { Other = 0, Host = 1 /* kDLCPU */, Device = 2 /* kDLCUDA */,
                                    PinnedHost = 3 /* kDLCUDAHost */, Managed = 13 /* kDLCUDAManaged */ };

inline TensorMemory memory_of_dl_device(int32_t device_type) {
  switch (device_type) {
    case 1: case 2: case 3: case 13: return TensorMemory(device_type);
  }
  return TensorMemory::Other;
}

// The memory rule, as one bit per DLPack device type for each KernelMemory: two instructions on
// the hot path, which reads a DLTensor's device type directly (dl_memory_serves).
constexpr uint32_t kMemoryServing[] = {
    ~0u,                                                 // Any
    (1u << 1) | (1u << 3) | (1u << 13),                  // Host: CPU, pinned, managed
    (1u << 2) | (1u << 13),                              // Device: CUDA, managed
    (1u << 1) | (1u << 2) | (1u << 3) | (1u << 13),      // HostStaged: host-readable, or CUDA (staged)
};
inline bool dl_memory_serves(int32_t device_type, KernelMemory where) {
  return where == KernelMemory::Any ||
         (uint32_t(device_type) < 32 && (kMemoryServing[int(where)] >> uint32_t(device_type)) & 1u);
}
inline bool memory_serves(TensorMemory m, KernelMemory where) { return dl_memory_serves(int32_t(m), where); }

// The one decision of where a call's tensors must be. `runs_kernels`: the program launches
// kernels that run (not discarded for measurement); `emulated`: they run on the CPU emulator;
// `device_present`: a CUDA device is there to stage GPU memory from.
inline KernelMemory kernel_memory(bool runs_kernels, bool emulated, bool device_present) {
  if (!runs_kernels) return KernelMemory::Any;
  if (!emulated) return KernelMemory::Device;
  return device_present ? KernelMemory::HostStaged : KernelMemory::Host;
}
// True when a tensor in `m` is copied to host memory around the launch (host_staging.h).
inline bool stages_through_host(TensorMemory m, KernelMemory where) {
  return where == KernelMemory::HostStaged && m == TensorMemory::Device;
}

// DLPack's DLTensor (dlpack.h), declared here so that no DLPack header is needed.
struct DLTensorView {
  void* data;
  int32_t device_type, device_id;
  int32_t ndim;
  uint8_t dtype_code, dtype_bits;
  uint16_t dtype_lanes;
  int64_t* shape;
  int64_t* strides;  // null: compact row-major
  uint64_t byte_offset;
};

inline int64_t dltensor_stride(const DLTensorView& t, int mode) {
  if (t.strides) return t.strides[mode];
  int64_t compact = 1;  // no strides: compact row-major
  for (int i = mode + 1; i < t.ndim; ++i) compact *= t.shape[i];
  return compact;
}

// ---- the full check ------------------------------------------------------------------------

// What a tensor breaks of its contract: each rule, with the first mode (or same_as entry) that
// breaks it and the tensor's value there. A call path reports the first of them in its own order
// (argument_error), as it always has.
struct ContractFindings {
  enum Rule : uint8_t {
    kDtype, kMemory, kAlignment, kRank, kNegativeShape, kShape, kStride, kShapeDivisibility, kStrideDivisibility,
    kInt32Layout, kSharedSymbol, kNumRules
  };
  uint32_t broken = 0;
  int at[kNumRules] = {};       // the mode, or the same_as entry (kSharedSymbol)
  int64_t got[kNumRules] = {};  // the tensor's value (address, rank, extent, stride, entry)
  int64_t want_same = 0;        // kSharedSymbol: the value the entry must equal
  TensorMemory memory = TensorMemory::Other;  // kMemory: where the tensor is
  KernelMemory where = KernelMemory::Any;     // where the kernels read it

  bool ok() const { return broken == 0; }
  bool has(Rule r) const { return broken & (1u << r); }
  void add(Rule r, int where, int64_t value) {
    if (has(r)) return;  // the first one is reported
    broken |= 1u << r;
    at[r] = where;
    got[r] = value;
  }
};

// `t` (a view: element_matches(ir::Type), memory(), address(), rank(), shape(i), stride(i)) against
// `c`. `vals`: the host parameters read so far (symbols shared with earlier tensors are there;
// null: shared symbols are not compared). Inline and allocation-free: for call paths whose
// every call takes it (the CPU emulator, numpy arguments).
template <class View>
ContractFindings check_tensor(const TensorContract& c, View& t, KernelMemory where, const ir::Scalar* vals) {
  using F = ContractFindings;
  F f;
  if (!t.element_matches(c.element)) f.add(F::kDtype, 0, 0);
  f.where = where;
  if (where != KernelMemory::Any) {
    const TensorMemory m = t.memory();
    if (!memory_serves(m, where)) {
      f.add(F::kMemory, 0, 0);
      f.memory = m;
    }
  }
  if (c.align > 1) {
    const int64_t address = int64_t(t.address());
    if (uint64_t(address) % uint64_t(c.align) != 0) f.add(F::kAlignment, 0, address);
  }
  const int rank = int(t.rank());
  if (size_t(rank) != c.shape.size()) {
    f.add(F::kRank, 0, rank);
    return f;  // no entry can be compared
  }
  // For Int32 strides, the layout's cosize as runtime::cosize decides it: the first empty mode
  // makes it 0, an overflow before that makes it too large.
  int64_t span = 0;
  bool decided = false, too_large = false;
  for (int i = 0; i < rank; ++i) {
    const size_t m = size_t(i);
    const int64_t n = t.shape(m), st = t.stride(m);
    if (n < 0) f.add(F::kNegativeShape, i, n);
    if (c.shape[m] >= 0 ? c.shape[m] != n : (c.shape_div[m] > 1 && n % c.shape_div[m] != 0))
      f.add(c.shape[m] >= 0 ? F::kShape : F::kShapeDivisibility, i, n);
    // A size-1 mode is never stepped along, so its stride does not matter.
    if (n != 1 && (c.stride[m] >= 0 ? c.stride[m] != st : (c.stride_div[m] > 1 && st % c.stride_div[m] != 0)))
      f.add(c.stride[m] >= 0 ? F::kStride : F::kStrideDivisibility, i, st);
    if (c.int32_strides && !decided) {
      int64_t step = 0;
      if (n <= 0) decided = true;
      else if (__builtin_mul_overflow(n - 1, st < 0 ? -st : st, &step) || __builtin_add_overflow(span, step, &span))
        decided = too_large = true;
    }
  }
  if (c.int32_strides && (decided ? too_large : span + 1 > INT32_MAX)) f.add(F::kInt32Layout, 0, 0);
  if (vals)
    for (size_t k = 0; k < c.same_as.size() && !f.has(F::kSharedSymbol); ++k) {
      const PlanSameAs& e = c.same_as[k];
      const int64_t got = e.stride ? t.stride(size_t(e.mode)) : t.shape(size_t(e.mode));
      const int64_t want = e.first_source != c.source ? vals[size_t(e.slot)].i
                           : e.first_stride          ? t.stride(size_t(e.first_mode))
                                                     : t.shape(size_t(e.first_mode));
      if (got != want) {
        f.add(F::kSharedSymbol, int(k), got);
        f.want_same = want;
      }
    }
  return f;
}

// A DLTensor as check_tensor sees it (DLPack's element codes, as dsl/dtype.h names them).
struct DLTensorContractView {
  const DLTensorView& t;
  bool element_matches(ir::Type element) const;
  TensorMemory memory() const { return memory_of_dl_device(t.device_type); }
  uint64_t address() const { return uint64_t(reinterpret_cast<uintptr_t>(t.data)) + t.byte_offset; }
  size_t rank() const { return size_t(t.ndim); }
  int64_t shape(size_t m) const { return t.shape[m]; }
  int64_t stride(size_t m) const { return dltensor_stride(t, int(m)); }
};

// ---- the messages --------------------------------------------------------------------------

// A broken contract as a call path raises it: the DSL error code (default ABI), the Python
// exception a TVM-FFI caller sees, the message.
struct ArgumentError {
  const char* code;  // "ARG_LAYOUT_MISMATCH" ...
  const char* kind;  // "TypeError", "ValueError"
  std::string message;
};

// Each call path's wording, as its users and tests know it. What the path knows of the argument
// that the contract does not (its label, the tensor's element name, ...) comes in `MessageInputs`;
// it is built only for a message.
enum class MessageStyle { CompiledFunction, TvmFfi, ExportedC, ExportedTvmFfi, Xla };

struct MessageInputs {
  std::string label;        // how the argument is named ("argument #0 (a)", "a", "argument #0 (a) when calling ...")
  std::string at;           // TVM-FFI: " on argument #p when calling: `sig`, "
  std::string got_element;  // the tensor's element type, as the style names it
  std::string want_element; // the compiled element type, as the style names it (Xla, ExportedTvmFfi)
  std::string layout;       // CompiledFunction: the tensor's layout, "(4,8):(8,1)"
  std::string function;     // Xla: the kernel's name
  std::vector<std::string> first_labels;  // TvmFfi: per same_as entry, the label of its first tensor
};

// The error a failed check raises in `style` (false `findings.ok()` assumed), or none (code
// null) when the style does not check what broke (see argument_contract.cpp).
ArgumentError argument_error(MessageStyle style, const TensorContract& c, const ContractFindings& findings,
                             const MessageInputs& in);
// Whether a runtime pointer with type key `given_key` (its element type, address space and
// alignment, "Float32,1,16") at `address` fits a parameter compiled for `compiled_key`, whose code
// assumes `align` bytes: the same key, or the same element type in the same or the generic
// address space at an address with the compiled alignment. What the code assumes of the address
// then holds (NVIDIA's rmsnorm compiles for gmem pointers aligned to 16 bytes and calls with
// make_ptr(dtype, t.data_ptr()), generic and aligned to the element).
bool pointer_type_fits(const std::string& compiled_key, const std::string& given_key, int64_t address, int64_t align);
// A cute.Pointer argument against its contract: `type_key` is the runtime pointer's (empty: it
// has none), `shown` how the argument prints. Code null when it passes.
ArgumentError check_pointer(const PointerContract& c, const std::string& type_key, int64_t address,
                            const std::string& shown);

// A tensor entry read into an Int32 parameter that does not fit it (`at`: TvmFfi's, as in MessageInputs).
ArgumentError int32_entry_error(MessageStyle style, const std::string& label, bool shape, int mode, int64_t value,
                                const std::string& at = "");

// ---- the compact check (the hot path) ------------------------------------------------------

// One tensor argument's check and host parameters (its slots, which are adjacent) in one compact
// record: what a call touches per tensor is this record and its modes, a cache line or two, rather
// than the TensorContract's separate vectors. Built only where it applies (build_tensor_reads).
struct TensorRead {
  static constexpr int kMaxSlots = 16;
  struct Mode {  // as TensorContract: -1 where dynamic, then what a dynamic entry is divisible by
    int64_t shape, stride, shape_div, stride_div;
  };
  struct SameAs {  // PlanSameAs, resolved: an entry that must equal an earlier value
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
  int32_t check = -1;          // its TensorContract (-1: none)
  uint32_t modes_at = 0;       // its first Mode in TensorReads::modes
  uint32_t same_as_at = 0;     // its first SameAs in TensorReads::same_as
  uint8_t num_same_as = 0;
  uint8_t rank = 0;
  uint8_t num_slots = 0;
  uint8_t dl_code = 255, dl_bits = 0;
  bool int32_strides = false;  // as TensorContract
  uint64_t align_mask = 0;     // alignment - 1 (alignments are powers of two)
  Slot slots[kMaxSlots];
};

struct TensorReads {
  std::vector<TensorRead> reads;
  std::vector<TensorRead::Mode> modes;
  std::vector<TensorRead::SameAs> same_as;
  std::vector<int> read_of_slot;  // per slot: the TensorRead starting there, or -1
};

// One TensorRead per run of adjacent slots of one tensor argument, where the compact record can
// say all the run needs (`slot_types`: the host parameters' types); the other runs take the full path.
TensorReads build_tensor_reads(const ArgumentPlan& plan, const std::vector<ir::Type>& slot_types);

// Checks `t` against its TensorRead and writes the host parameters of its slots into `vals`
// (indexed as the slots; earlier slots hold what shared symbols must equal); false, with those
// `vals` unspecified, when the check fails or a value does not fit the Int32 it was compiled as:
// the caller's full check then decides and raises.
inline bool read_dltensor(const TensorReads& reads, const TensorRead& r, const DLTensorView& t, KernelMemory memory,
                          ir::Scalar* vals) {
  if (r.check >= 0) {
    if (t.dtype_lanes != 1 || t.dtype_code != r.dl_code || t.dtype_bits != r.dl_bits) return false;
    if (!dl_memory_serves(t.device_type, memory)) return false;
    const uint64_t address = uint64_t(reinterpret_cast<uintptr_t>(t.data)) + t.byte_offset;
    if (address & r.align_mask) return false;
    if (t.ndim != int32_t(r.rank)) return false;
    const TensorRead::Mode* m = reads.modes.data() + r.modes_at;
    int64_t span = 0;  // for Int32 strides: the layout's cosize - 1
    bool empty = false;
    for (int i = 0; i < int(r.rank); ++i) {
      const int64_t n = t.shape[i], st = dltensor_stride(t, i);
      if (m[i].shape >= 0 ? m[i].shape != n : (m[i].shape_div > 1 && n % m[i].shape_div != 0)) return false;
      // A size-1 mode is never stepped along, so its stride does not matter.
      if (n != 1 && (m[i].stride >= 0 ? m[i].stride != st : (m[i].stride_div > 1 && st % m[i].stride_div != 0)))
        return false;
      if (r.int32_strides) {
        if (n <= 0) empty = true;
        int64_t step = 0;  // overflow: let the full check say so
        if (__builtin_mul_overflow(n - 1, st < 0 ? -st : st, &step) || __builtin_add_overflow(span, step, &span))
          return false;
      }
    }
    if (r.int32_strides && !empty && span + 1 > INT32_MAX) return false;
    // Entries compiled as one symbol with an earlier one: the traced code uses one value for both.
    const TensorRead::SameAs* e = reads.same_as.data() + r.same_as_at;
    for (int k = 0; k < int(r.num_same_as); ++k, ++e) {
      const int64_t got = e->stride ? dltensor_stride(t, e->mode) : t.shape[e->mode];
      const int64_t want = !e->within ? vals[e->slot].i
                           : e->first_stride ? dltensor_stride(t, e->first_mode) : t.shape[e->first_mode];
      if (got != want) return false;
    }
  }
  ir::Scalar* out = vals + r.first_slot;
  for (int j = 0; j < int(r.num_slots); ++j) {
    const TensorRead::Slot s = r.slots[j];
    int64_t v;
    if (s.what == TensorRead::kData) {
      v = int64_t(reinterpret_cast<intptr_t>(t.data)) + int64_t(t.byte_offset);
    } else if (s.mode >= t.ndim) {  // only without a check: a mode past the rank has extent 1
      v = s.what == TensorRead::kShape ? 1 : 0;
    } else {
      v = s.what == TensorRead::kShape ? t.shape[s.mode] : dltensor_stride(t, s.mode);
      if (s.narrow != TensorRead::kAsIs) {
        if (v < INT32_MIN || v > INT32_MAX) return false;
        if (s.narrow == TensorRead::kUnsigned32) v = int64_t(uint32_t(v));
      }
    }
    out[j] = ir::Scalar::of_int(v);
  }
  return true;
}

}  // namespace opencute::runtime
