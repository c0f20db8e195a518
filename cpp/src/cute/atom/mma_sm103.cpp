#include "cute/atom/mma_sm103.h"

#include "cute/atom/mma_sm90.h"
#include "dsl/sm100_ops.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using L::IntTuple;
using L::Layout;

namespace {

[[noreturn]] void invalid(const std::string& msg) { throw dsl::UserError("INVALID_MMA_OP", msg); }

void require_k96(const std::string& what) {
  const support::Arch& arch = dsl::Tracer::current_target_arch();
  if (arch.empty() || arch.has_tcgen05_k96()) return;
  throw dsl::UserError("UNSUPPORTED_ARCH", what + " (tcgen05.mma with K = 96) needs sm_103a or sm_103f, but the "
                                                  "program is compiled for " + arch.name);
}

// The fields of a K-major swizzled tile whose K extent lies within one swizzle row (the 16-byte
// K slices of sm_103's circular buffers): rows of the swizzle's width, 8-row groups SBO apart.
GmmaDescriptorFields k_major_row_fields(const Layout& tile, int element_bits, int swizzle_bits, const std::string& what) {
  const int64_t MN = L::size(tile, {0}).value(), K = L::size(tile, {1}).value();
  const int64_t t = 128 / element_bits, row = (int64_t(1) << swizzle_bits) * t;  // elements per 16 B, per row
  auto fail = [&](const std::string& why) -> void {
    throw dsl::UserError("INVALID_SMEM_LAYOUT", what + ": the shared-memory tile " + L::to_string(tile) +
                                                    " is not a K-major tcgen05 layout with swizzle S<" +
                                                    std::to_string(swizzle_bits) + ",4,3>: " + why);
  };
  if (MN % 8) fail("the M/N extent must be a multiple of 8");
  if (K % t || K > row) fail("K must be whole 16-byte chunks within one swizzle row");
  auto at = [&](int64_t mn, int64_t k) { return tile(IntTuple{mn, k}).as_int().value(); };
  GmmaDescriptorFields f;
  const int64_t sbo = MN > 8 ? at(8, 0) : 0;
  if (sbo % t || sbo / t >= (1 << 14)) fail("the stride between 8-row groups is not a multiple of 16 bytes below 256 KiB");
  f.sbo = uint32_t(sbo / t);
  f.lbo = 1;  // unused by swizzled K-major tiles
  for (int64_t k = 0; k < K; ++k)
    for (int64_t mn = 0; mn < MN; ++mn) {
      const int64_t want = (mn % 8) * row + (mn / 8) * sbo + k;
      if (at(mn, k) != want)
        fail("element (" + std::to_string(mn) + "," + std::to_string(k) + ") is at offset " + std::to_string(at(mn, k)) +
             ", the descriptor would read offset " + std::to_string(want));
    }
  return f;
}


}  // namespace

MmaAtom make_sm103_block_scaled_mma(ir::Type sf, int sf_vec_size, const std::vector<int64_t>& shape, int cta_group,
                                    OperandSource a_src) {
  const std::string op = sf_vec_size == 32 ? "tcgen05.SM103MmaMXF4Op" : "tcgen05.SM103MmaMXF4NVF4Op";
  dsl::require_tcgen05(op);
  require_k96(op);
  const std::string sf_name = mma_type_name(sf);
  if (sf_vec_size == 32) {
    if (!sf->is_e8m0()) invalid(op + ": sf_dtype must be Float8E8M0FNU, got " + sf_name);
  } else if (sf_vec_size == 16) {
    if (!sf->is_e8m0() && !sf->is_float_kind(ir::FloatKind::E4M3))
      invalid(op + ": sf_dtype must be Float8E8M0FNU or Float8E4M3FN, got " + sf_name);
  } else {
    invalid(op + ": sf_vec_size must be 16 or 32, got " + std::to_string(sf_vec_size));
  }
  if (cta_group != 1 && cta_group != 2) invalid(op + ": cta_group must be CtaGroup.ONE or CtaGroup.TWO");
  bool ok = shape.size() == 2 || (shape.size() == 3 && shape[2] == 96);
  const int64_t M = ok ? shape[0] : 0, N = ok ? shape[1] : 0;
  ok = ok && M == 128 * cta_group && N % 16 == 0 && N >= 16 && N <= 256;
  if (!ok)
    invalid(op + ": instruction_shape must be (M, N) or (M, N, 96) with M = " + std::to_string(128 * cta_group) +
            " and N a multiple of 16 in [16, 256], got " + mma_shape_text(shape));
  if (a_src != OperandSource::Smem) invalid(op + ": operand A comes from shared memory (OperandSource.SMEM)");
  const ir::Type fp4 = ir::f4e2m1();
  return tcgen05_block_scaled_atom(ir::Tcgen05Kind::MXF4NVF4, fp4, fp4, sf, sf_vec_size, M, N, 96, cta_group, a_src,
                                   OperandMajor::K, OperandMajor::K);
}

Tensor make_umma_smem_desc(const Tensor& src, OperandMajor major, const Tensor* next) {
  const std::string what = "make_umma_smem_desc";
  dsl::Tracer& tracer = dsl::Tracer::require(what.c_str());
  if (!tracer.in_kernel()) throw dsl::UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  ir::Builder& b = trace_builder(what.c_str());
  dsl::require_tcgen05(what);
  for (const Tensor* t : {&src, next})
    if (t && (!t->is_memory() || t->space() != ir::AddrSpace::Smem))
      throw dsl::UserError("TYPE_MISMATCH", what + ": expected a shared-memory pointer, got " + to_string(*t));
  Layout tile = src.layout;
  if (tile.rank() == 1 && L::get(tile, {0}).rank() == 2) tile = L::get(tile, {0});
  if (tile.rank() != 2 || !tile.is_static())
    throw dsl::UserError("SHAPE_MISMATCH", what + ": expected a static (MN, K) layout, got " + L::to_string(tile));
  const int bits = src.element()->bit_size();
  const int swz = descriptor_swizzle_bits(src, what, "tcgen05.mma");
  const int64_t k_bits = L::size(tile, {1}).value() * bits;
  GmmaDescriptorFields f = k_bits == 256 || major != OperandMajor::K || swz == 0
                               ? gmma_descriptor_fields(tile, bits, swz, major, "descriptor")
                               : k_major_row_fields(tile, bits, swz, what);
  uint64_t fixed = encode_umma_descriptor(f, swz, 0);
  ir::Value* desc = descriptor_start_address(b, src.ptr);
  if (next) {
    // Absolute LBO mode: the next buffer's address in the LBO field.
    fixed = (fixed & ~(uint64_t(0x3FFF) << 16)) | (uint64_t(1) << 52);
    ir::Value* lbo = b.binary(ir::OpCode::Shl, descriptor_start_address(b, next->ptr), b.const_int(ir::i64(), 16));
    desc = b.binary(ir::OpCode::Or, desc, lbo);
  }
  desc = b.binary(ir::OpCode::Or, desc, b.const_int(ir::i64(), int64_t(fixed)));
  Tensor r = src;
  r.layout = Layout(1, 0);
  r.desc_tile = tile;
  r.desc_value = desc;
  return r;
}

}  // namespace opencute::cute
