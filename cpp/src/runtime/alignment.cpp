#include "runtime/alignment.h"

#include <cstdio>

#include "runtime/tensor_spec.h"

namespace opencute::runtime {

int64_t resolve_alignment(std::optional<int64_t> assumed_align, int64_t element_bytes) {
  const int64_t natural = element_bytes < 1 ? 1 : element_bytes;
  if (!assumed_align) return natural;
  const int64_t a = *assumed_align;
  if (a < 1 || (a & (a - 1)) != 0)
    throw TensorSpecError("assumed_align must be a positive power of two, got " + std::to_string(a));
  if (a % natural != 0 && natural % a != 0)
    throw TensorSpecError("assumed_align (" + std::to_string(a) + ") must divide or be a multiple of the element size (" +
                          std::to_string(natural) + " bytes)");
  return a;
}

void check_address_alignment(uint64_t address, int64_t align, const std::string& what) {
  if (align > 1 && address % uint64_t(align) != 0) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(address));
    throw TensorSpecError(what + " " + hex + " is not aligned to assumed_align=" + std::to_string(align) + " bytes");
  }
}

int64_t alignment_after_offset(int64_t align, int64_t byte_offset) {
  if (byte_offset == 0) return align;
  const uint64_t off = uint64_t(byte_offset < 0 ? -byte_offset : byte_offset);
  const int64_t lowest_bit = int64_t(off & (~off + 1));
  return lowest_bit < align ? lowest_bit : align;
}

}  // namespace opencute::runtime
