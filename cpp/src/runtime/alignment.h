// Byte alignment of the data pointers handed to compiled functions (`from_dlpack`'s and
// `make_ptr`'s `assumed_align`). The alignment is part of the pointer type in the IR, so a
// pointer that does not honour it would make vectorised accesses fault or read wrong data.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace opencute::runtime {

// `assumed_align` (bytes), or the element's natural alignment when absent. It must be a
// positive power of two that divides, or is a multiple of, the element size.
int64_t resolve_alignment(std::optional<int64_t> assumed_align, int64_t element_bytes);
// Throws TensorSpecError naming `what` when `address` is not a multiple of `align`.
void check_address_alignment(uint64_t address, int64_t align, const std::string& what);
// The alignment still guaranteed after moving an `align`-aligned pointer by `byte_offset`.
int64_t alignment_after_offset(int64_t align, int64_t byte_offset);

}  // namespace opencute::runtime
