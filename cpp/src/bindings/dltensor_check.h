// Whether a DLTensor passes every check a tensor argument was compiled with (TensorCheck), and its
// host parameters read in the same step (read_dltensor): the call paths' common case, decided
// inline with no message built and nothing allocated. A tensor that fails (or that this test
// cannot decide) goes to the call path's own per-slot code, which runs the same rules in full and
// raises that path's documented error; so this test may be stricter than those checks (a slower
// call) but never laxer (a wrong answer).
#pragma once
#include <climits>
#include <cstdint>
#include <vector>

#include "bindings/compiled_function_plan.h"
#include "bindings/tensor_argument.h"
#include "dsl/dtype.h"
#include "ir/scalar_semantics.h"

namespace opencute::bindings {

// Where the program's kernels read tensor memory (none: the tensors are only passed around).
enum class DLTensorMemory { Any, Host, Device };

inline int64_t dltensor_stride(const TensorArgument::DLTensorView& t, int mode) {
  if (t.strides) return t.strides[mode];
  int64_t compact = 1;  // no strides: compact row-major
  for (int i = mode + 1; i < t.ndim; ++i) compact *= t.shape[i];
  return compact;
}

// `vals`/`slots`: the host parameters read so far, for entries compiled as one symbol shared with
// an earlier tensor (TensorCheck::same_as).
inline bool dltensor_passes(const TensorCheck& c, const TensorArgument::DLTensorView& t, DLTensorMemory memory,
                            const ir::Scalar* vals, const std::vector<ArgSlot>& slots) {
  // The DLPack code and bits install_plan found for the element type first; another pair that
  // names the same type (none today) is looked up.
  if (t.dtype_lanes != 1) return false;
  if ((t.dtype_code != c.dl_code || t.dtype_bits != c.dl_bits) &&
      dsl::dtype_from_dlpack(t.dtype_code, t.dtype_bits) != c.element)
    return false;
  // kDLCUDA 2, kDLCUDAManaged 13; kDLCPU 1, kDLCUDAHost 3 (the stricter of the two paths' rules).
  if (memory == DLTensorMemory::Device && t.device_type != 2 && t.device_type != 13) return false;
  if (memory == DLTensorMemory::Host && t.device_type != 1 && t.device_type != 3) return false;
  const uint64_t address = uint64_t(reinterpret_cast<uintptr_t>(t.data)) + t.byte_offset;
  // Alignments are powers of two: a mask, not a division (tens of cycles per tensor).
  const uint64_t align = uint64_t(c.align);
  if (align > 1 && ((align & (align - 1)) == 0 ? address & (align - 1) : address % align) != 0) return false;
  const size_t rank = c.shape.size();
  if (t.ndim < 0 || size_t(t.ndim) != rank) return false;
  int64_t span = 0;  // for Int32 strides: the layout's cosize - 1, saturated
  bool empty = false;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t n = t.shape[i], st = dltensor_stride(t, int(i));
    const int64_t want_n = c.shape[i], want_st = c.stride[i];
    if (want_n >= 0 ? want_n != n : (c.shape_div[i] > 1 && n % c.shape_div[i] != 0)) return false;
    // A size-1 mode is never stepped along, so its stride does not matter.
    if (n != 1 && (want_st >= 0 ? want_st != st : (c.stride_div[i] > 1 && st % c.stride_div[i] != 0))) return false;
    if (c.int32_strides) {
      if (n <= 0) empty = true;
      int64_t step = 0;  // overflow: let the full check say so
      if (__builtin_mul_overflow(n - 1, st < 0 ? -st : st, &step) || __builtin_add_overflow(span, step, &span))
        return false;
    }
  }
  if (c.int32_strides && !empty && span + 1 > INT32_MAX) return false;
  for (const TensorCheck::SameAs& e : c.same_as) {
    const int64_t got = e.stride ? dltensor_stride(t, e.mode) : t.shape[e.mode];
    const ArgSlot& first = slots[size_t(e.slot)];
    const int64_t want = first.source != c.source ? vals[size_t(e.slot)].i
                         : first.kind == kTensorStride ? dltensor_stride(t, first.mode)
                                                       : t.shape[first.mode];
    if (got != want) return false;
  }
  return true;
}

// Checks `t` against the tensor's TensorRead (the same rules as dltensor_passes) and writes the
// host parameters of its slots into `vals` (indexed as the slots); false, with those `vals`
// unspecified, when the check fails or a value does not fit the Int32 it was compiled as: the
// caller's per-slot path then decides and raises.
inline bool read_dltensor(const Executor& ex, const TensorRead& r, const TensorArgument::DLTensorView& t,
                          DLTensorMemory memory, ir::Scalar* vals) {
  if (r.check >= 0) {
    if (r.same_as) {
      if (!dltensor_passes(ex.checks[size_t(r.check)], t, memory, vals, ex.slots)) return false;
    } else {
      if (t.dtype_lanes != 1 || t.dtype_code != r.dl_code || t.dtype_bits != r.dl_bits) return false;
      if (memory == DLTensorMemory::Device && t.device_type != 2 && t.device_type != 13) return false;
      if (memory == DLTensorMemory::Host && t.device_type != 1 && t.device_type != 3) return false;
      const uint64_t address = uint64_t(reinterpret_cast<uintptr_t>(t.data)) + t.byte_offset;
      if (address & r.align_mask) return false;
      if (t.ndim != int32_t(r.rank)) return false;
      const TensorRead::Mode* m = ex.tensor_read_modes.data() + r.modes_at;
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

}  // namespace opencute::bindings
