#include "dsl/sm90_ops.h"

#include <cstdlib>
#include <string>

#include "dsl/dtype.h"
#include "dsl/tracer.h"

namespace opencute::dsl {
namespace {

using ir::OpCode;
using ir::Value;

ir::Builder& kernel_builder(const std::string& what) {
  Tracer& t = Tracer::require(what.c_str());
  if (!t.in_kernel()) throw UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  return t.builder();
}

// Raises when the program is compiled for an architecture without the instruction: sm_90 for the
// cluster and elect ops, sm_90a (the arch-specific feature set) for setmaxnreg.
void require_arch(const std::string& what, bool needs_arch_specific) {
  const support::Arch& arch = Tracer::current_target_arch();
  if (arch.empty()) return;  // unknown until compiled: the backend reports it then
  bool ok = needs_arch_specific ? arch.has_setmaxnreg() : arch.has_clusters();
  if (!ok)
    throw UserError("UNSUPPORTED_ARCH", what + " needs " + (needs_arch_specific ? "sm_90a" : "sm_90 or newer") +
                                            ", but the program is compiled for " + arch.name);
}

Value* as_i32(const Num& n) { return materialize(convert(n, ir::i32())); }

}  // namespace

Num cluster_sreg(ir::ClusterSregKind kind, int dim) {
  static const char* const names[] = {"cluster_idx", "cluster_dim", "block_in_cluster_idx", "block_in_cluster_dim",
                                      "block_idx_in_cluster", "cluster_size"};
  const std::string what = names[int(kind)];
  ir::Builder& b = kernel_builder(what);
  require_arch(what, false);
  ir::Op* op = b.create(OpCode::ClusterSreg, {}, {ir::i32()});
  op->int_attr = int64_t(kind);
  op->ints = {kind == ir::ClusterSregKind::CtaRank || kind == ir::ClusterSregKind::ClusterSize ? 0 : dim};
  return Num::of_value(op->result());
}

void cluster_barrier(ir::ClusterBarrierKind kind, bool aligned, const std::string& file, int line) {
  const char* what = kind == ir::ClusterBarrierKind::Wait ? "cluster_wait"
                     : kind == ir::ClusterBarrierKind::Arrive ? "cluster_arrive" : "cluster_arrive_relaxed";
  ir::Builder& b = kernel_builder(what);
  require_arch(what, false);
  ir::Op* op = b.create(OpCode::ClusterBarrier, {}, {});
  op->int_attr = int64_t(kind);
  op->ints = {aligned ? 1 : 0};
  if (!file.empty()) {
    op->file = file;
    op->line = line;
  }
}

Num map_shared_rank(const Num& ptr, const Num& cta_rank) {
  ir::Builder& b = kernel_builder("map_dsmem_ptr");
  require_arch("map_dsmem_ptr", false);
  if (!ptr.type->is_pointer() || (ptr.type->space != ir::AddrSpace::Smem && ptr.type->space != ir::AddrSpace::Generic))
    throw UserError("TYPE_MISMATCH", "map_dsmem_ptr needs a pointer into shared memory, got " + dtype_name(ptr.type));
  ir::Type result = ir::pointer_type(ptr.type->element, ir::AddrSpace::Generic, ptr.type->align);
  return Num::of_value(b.create(OpCode::MapSharedRank, {materialize(ptr), as_i32(cta_rank)}, {result})->result());
}

Num elect_one(const Num& member_mask) {
  ir::Builder& b = kernel_builder("elect_one");
  require_arch("elect_one", false);
  return Num::of_value(b.create(OpCode::ElectOne, {as_i32(member_mask)}, {ir::bool_type()})->result());
}

void sync_warp(const Num& member_mask) {
  ir::Builder& b = kernel_builder("sync_warp");
  b.create(OpCode::SyncWarp, {as_i32(member_mask)}, {});
}

void setmaxnreg(int64_t count, bool increase) {
  const std::string what = increase ? "setmaxregister_increase" : "setmaxregister_decrease";
  ir::Builder& b = kernel_builder(what);
  if (count < 24 || count > 256 || count % 8 != 0)
    throw UserError("INVALID_ARGUMENT", what + ": the register count must be a multiple of 8 in [24, 256], got " +
                                            std::to_string(count));
  require_arch(what, true);
  ir::Op* op = b.create(OpCode::SetMaxNReg, {}, {});
  op->int_attr = count;
  op->ints = {increase ? 1 : 0};
}

Num prmt(const Num& a, const Num& b_, const Num& selector) {
  ir::Builder& b = kernel_builder("prmt");
  auto bits32 = [&](const Num& n, const char* name) -> Value* {
    if (!n.type->is_scalar() || n.type->is_float() || n.type->width > 32)
      throw UserError("TYPE_MISMATCH", std::string("prmt: ") + name + " must be an integer of at most 32 bits, got " +
                                           dtype_name(n.type));
    return as_i32(n);
  };
  Value *x = bits32(a, "src"), *y = bits32(b_, "src_reg_shifted"), *s = bits32(selector, "indices");
  return Num::of_value(b.create(OpCode::Prmt, {x, y, s}, {ir::i32()})->result());
}

Num warp_uniform(const Num& value) {
  ir::Builder& b = kernel_builder("make_warp_uniform");
  if (value.is_static) return value;  // a constant is the same in every lane
  if (!value.type->is_scalar())
    throw UserError("TYPE_MISMATCH", "make_warp_uniform takes an integer, got " + dtype_name(value.type));
  Value* v = materialize(value);
  return Num::of_value(b.create(OpCode::WarpUniform, {v}, {v->type})->result());
}

}  // namespace opencute::dsl
