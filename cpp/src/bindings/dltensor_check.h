// A DLTensor argument checked against what it was compiled for (its TensorRead, the compact form
// of its TensorCheck) and its host parameters read in the same step: the call paths' common case,
// decided inline with no message built and nothing allocated. A tensor that fails (or that this
// test cannot decide) goes to the call path's full check, which runs the same rules and raises
// that path's documented error; so this test may be stricter than that check (a slower call) but
// never laxer (a wrong answer).
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

// Checks `t` against the tensor's TensorRead and writes the host parameters of its slots into
// `vals` (indexed as the slots; earlier slots hold what shared symbols must equal); false, with
// those `vals` unspecified, when the check fails or a value does not fit the Int32 it was compiled
// as: the caller's full check then decides and raises.
inline bool read_dltensor(const Executor& ex, const TensorRead& r, const TensorArgument::DLTensorView& t,
                          DLTensorMemory memory, ir::Scalar* vals) {
  if (r.check >= 0) {
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
    // Entries compiled as one symbol with an earlier one: the traced code uses one value for both.
    const TensorRead::SameAs* e = ex.tensor_read_same_as.data() + r.same_as_at;
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

}  // namespace opencute::bindings
