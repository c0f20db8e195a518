// Shared-memory storage rules: C struct and union layout for `cute.struct` / `cute.union`, the
// bump allocation of `cutlass.utils.SmemAllocator`, and the per-architecture shared-memory
// capacity that every allocation is checked against.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opencute::dsl {

struct StorageMember {
  int64_t size = 0;   // bytes
  int64_t align = 1;  // bytes, a power of two
};

struct StorageLayout {
  std::vector<int64_t> offsets;  // one per member, bytes from the start
  int64_t size = 0;              // rounded up to `align`, as C's sizeof
  int64_t align = 1;             // the largest member alignment
};

// C layout: each member at the next offset that is a multiple of its alignment (a union puts all
// at 0); the size is rounded up to the largest alignment. Throws UserError for an empty member
// list, a negative size or an alignment that is not a positive power of two.
StorageLayout layout_struct(const std::vector<StorageMember>& members, bool is_union, const std::string& name);

// `offset` rounded up to `align` (a positive power of two, else UserError).
int64_t align_up(int64_t offset, int64_t align, const std::string& what);

// Shared memory one block may use on `arch` ("sm_80", "sm_90a", "90", ...), in bytes:
// sm_80/87 163 KiB, sm_86/89/120/121 99 KiB, sm_90/100/101/103/110 227 KiB (each minus 1 KiB
// that the driver reserves). Unknown architectures throw UserError.
int64_t smem_capacity_in_bytes(const std::string& arch);

}  // namespace opencute::dsl
