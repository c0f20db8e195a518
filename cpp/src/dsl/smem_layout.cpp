#include "dsl/smem_layout.h"

#include <algorithm>

#include "dsl/tracer.h"
#include "support/arch.h"

namespace opencute::dsl {

namespace {
bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
}  // namespace

int64_t align_up(int64_t offset, int64_t align, const std::string& what) {
  if (!is_pow2(align))
    throw UserError("VALUE_INVALID", what + ": alignment must be a positive power of two, got " + std::to_string(align));
  return (offset + align - 1) / align * align;
}

StorageLayout layout_struct(const std::vector<StorageMember>& members, bool is_union, const std::string& name) {
  if (members.empty())
    throw UserError("TYPE_MISMATCH", std::string(is_union ? "union " : "struct ") + name + " has no members");
  StorageLayout out;
  int64_t end = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    const StorageMember& m = members[i];
    if (m.size < 0) throw UserError("VALUE_INVALID", name + ": member " + std::to_string(i) + " has a negative size");
    int64_t at = is_union ? 0 : align_up(end, m.align, name);
    out.offsets.push_back(at);
    end = is_union ? std::max(end, m.size) : at + m.size;
    out.align = std::max(out.align, m.align);
  }
  out.size = align_up(end, out.align, name);
  return out;
}

int64_t smem_capacity_in_bytes(const std::string& arch) {
  const int64_t bytes = support::parse_arch(arch).smem_capacity_bytes();
  if (bytes < 0) throw UserError("VALUE_INVALID", "get_smem_capacity_in_bytes: unknown architecture '" + arch + "'");
  return bytes;
}

}  // namespace opencute::dsl
