#include "cute/atom/bulk_copy_sm90.h"

#include "cute/atom/tma_shared_sm90.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;

namespace {

[[noreturn]] void bulk_error(const std::string& code, const std::string& msg) { throw dsl::UserError(code, msg); }

// The tensor's size when its layout is one static run of consecutive elements (stride-0 and
// size-1 modes aside), else -1.
int64_t contiguous_size(const Tensor& t) {
  const L::Layout c = L::coalesce(t.layout);
  if (!c.is_static()) return -1;
  const int64_t n = L::size(c).value();
  if (n == 1) return 1;
  if (c.rank() > 1 || !c.stride.is_int() || c.stride.as_int().value() != 1) return -1;
  return n;
}

}  // namespace

CopyAtom make_bulk_copy_g2s_atom(ir::Type value_type) {
  tma_detail::require_sm90("cpasync.CopyBulkG2SOp");
  CopyAtom a;
  a.op = CopyOp::BulkG2S;
  a.op_name = "CopyBulkG2SOp";
  a.value_type = value_type;
  a.num_bits = value_type->bit_size();
  a.thr_id_layout = L::Layout(1, 0);
  const L::Layout one(L::IntTuple{L::IntTuple(1), L::IntTuple(a.num_bits)},
                      L::IntTuple{L::IntTuple(0), L::IntTuple(1)});
  a.src_bits = a.dst_bits = a.ref_bits = one;
  return a;
}

void copy_bulk_g2s(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const CopyOperands& operands) {
  const std::string what = "copy with " + atom.op_name;
  if (operands.pred) bulk_error("INVALID_COPY", what + " cannot be predicated");
  if (!src.is_memory() || (src.space() != ir::AddrSpace::Gmem && src.space() != ir::AddrSpace::Generic) || src.swizzle)
    bulk_error("COPY_MEMSPACE", what + ": the source must be a global-memory tensor, got " + to_string(src));
  if (!dst.is_memory() || dst.space() != ir::AddrSpace::Smem || dst.swizzle)
    bulk_error("COPY_MEMSPACE", what + ": the destination must be an unswizzled shared-memory tensor, got " +
                                    to_string(dst));
  const int bits = src.element()->bit_size();
  if (dst.element()->bit_size() != bits)
    bulk_error("TYPE_MISMATCH", what + ": source and destination elements differ in width: " + to_string(src) + " vs " +
                                    to_string(dst));
  const int64_t n = contiguous_size(src);
  if (n < 0 || contiguous_size(dst) != n)
    bulk_error("INVALID_COPY", what + " copies one contiguous run: source and destination must be static layouts "
                                      "of consecutive elements of the same size, got " + to_string(src) + " and " +
                                      to_string(dst));
  const int64_t bytes = n * bits / 8;
  if ((n * bits) % 128 != 0)
    bulk_error("INVALID_COPY", what + ": a bulk copy moves a multiple of 16 bytes, got " + std::to_string(n) + " " +
                                    ir::to_string(src.element()) + " elements");
  if (!operands.mbar || !operands.mbar->type->is_pointer())
    bulk_error("INVALID_COPY", what + " needs mbar_ptr= (the mbarrier the copied bytes complete on)");
  dsl::Tracer& t = dsl::Tracer::require(what.c_str());
  if (!t.in_kernel()) bulk_error("INVALID_COPY", what + " is only valid in a kernel");
  ir::Builder& b = t.builder();
  b.create(ir::OpCode::BulkLoad,
           {element_address(dst, L::IntTuple(0)), element_address(src, L::IntTuple(0)), dsl::materialize(*operands.mbar),
            b.const_int(ir::i32(), bytes)},
           {});
}

}  // namespace opencute::cute
