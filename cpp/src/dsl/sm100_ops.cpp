#include "dsl/sm100_ops.h"

#include "dsl/dtype.h"
#include "dsl/tracer.h"

namespace opencute::dsl {
namespace {

using ir::OpCode;

ir::Builder& kernel_builder(const std::string& what) {
  Tracer& t = Tracer::require(what.c_str());
  if (!t.in_kernel()) throw UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  return t.builder();
}

void check_group(const std::string& what, int cta_group) {
  if (cta_group != 1 && cta_group != 2)
    throw UserError("INVALID_VALUE", what + ": the CTA group must be CtaGroup.ONE or CtaGroup.TWO");
}

ir::Value* i32_operand(const std::string& what, const char* name, const Num& n) {
  if (!n.type->is_int()) throw UserError("TYPE_MISMATCH", what + ": " + name + " must be an integer, got " + dtype_name(n.type));
  return materialize(convert(n, ir::i32()));
}

ir::Value* smem_pointer(const std::string& what, const char* name, const Num& p) {
  if (!p.type->is_pointer() || (p.type->space != ir::AddrSpace::Smem && p.type->space != ir::AddrSpace::Generic))
    throw UserError("TYPE_MISMATCH", what + ": " + name + " must be a pointer to shared memory, got " + dtype_name(p.type));
  return materialize(p);
}

}  // namespace

void require_tcgen05(const std::string& what) {
  const support::Arch& arch = Tracer::current_target_arch();
  if (arch.empty() || arch.has_tcgen05()) return;
  throw UserError("UNSUPPORTED_ARCH", what + " (tcgen05 / tensor memory) needs sm_100a, sm_100f or sm_103a, but the "
                                              "program is compiled for " + arch.name);
}

void tmem_alloc(const Num& columns, const Num& dst, int cta_group, const std::string& file, int line) {
  const std::string what = "alloc_tmem";
  ir::Builder& b = kernel_builder(what);
  require_tcgen05(what);
  check_group(what, cta_group);
  if (columns.is_static && columns.type->is_int()) {
    int64_t n = columns.s.i;
    if (n < kTmemMinAllocColumns || n > kTmemColumns || (n & (n - 1)))
      throw UserError("INVALID_VALUE", "alloc_tmem: the number of columns must be a power of two in [32, 512], got " +
                                           std::to_string(n));
  }
  if (dst.type->is_pointer() && dst.type->element->is_scalar() && dst.type->element->bit_size() != 32)
    throw UserError("TYPE_MISMATCH", "alloc_tmem: the address is written to a 32-bit cell; the destination holds " +
                                         dtype_name(dst.type->element));
  ir::Value* p = smem_pointer(what, "the destination", dst);
  ir::Op* op = b.create(OpCode::TmemAlloc, {p, i32_operand(what, "the number of columns", columns)}, {});
  op->int_attr = cta_group;
  if (!file.empty()) op->file = file, op->line = line;
}

ir::Value* tmem_address(const std::string& what, const Num& ptr) {
  ir::Builder& b = kernel_builder(what);
  if (ptr.type->is_pointer()) {
    if (ptr.type->space != ir::AddrSpace::Tmem)
      throw UserError("TYPE_MISMATCH", what + ": expected a tensor-memory pointer, got a pointer to " +
                                           ir::to_string(ptr.type->space) + " memory");
    return b.create(OpCode::PtrToInt, {materialize(ptr)}, {ir::i32()})->result();
  }
  return i32_operand(what, "the tensor-memory address", ptr);
}

void tmem_dealloc(const Num& address, const Num& columns, int cta_group) {
  const std::string what = "dealloc_tmem";
  ir::Builder& b = kernel_builder(what);
  require_tcgen05(what);
  check_group(what, cta_group);
  if (columns.is_static && columns.type->is_int()) {
    int64_t n = columns.s.i;
    if (n < kTmemMinAllocColumns || n > kTmemColumns || (n & (n - 1)))
      throw UserError("INVALID_VALUE", "dealloc_tmem: the number of columns must be a power of two in [32, 512], got " +
                                           std::to_string(n));
  }
  ir::Value* a = tmem_address(what, address);
  b.create(OpCode::TmemDealloc, {a, i32_operand(what, "the number of columns", columns)}, {})->int_attr = cta_group;
}

void tmem_relinquish_alloc_permit(int cta_group) {
  const std::string what = "relinquish_tmem_alloc_permit";
  ir::Builder& b = kernel_builder(what);
  require_tcgen05(what);
  check_group(what, cta_group);
  b.create(OpCode::TmemRelinquish, {}, {})->int_attr = cta_group;
}

Num retrieve_tmem_ptr(ir::Type element, int align, const Num& src) {
  const std::string what = "retrieve_tmem_ptr";
  ir::Builder& b = kernel_builder(what);
  require_tcgen05(what);
  ir::Value* p = smem_pointer(what, "ptr_to_buffer_holding_addr", src);
  if (p->type->element != ir::i32() && p->type->element != ir::int_type(32, false))
    p = b.bitcast(p, ir::pointer_type(ir::i32(), p->type->space, p->type->align));
  ir::Value* addr = b.load(p, ir::i32());
  ir::Type pt = ir::pointer_type(element, ir::AddrSpace::Tmem, align > 0 ? align : 4);
  return Num::of_value(b.create(OpCode::IntToPtr, {addr}, {pt})->result());
}

void tcgen05_commit(const Num& bar, const std::optional<Num>& cta_mask, int cta_group) {
  const std::string what = "tcgen05.commit";
  ir::Builder& b = kernel_builder(what);
  require_tcgen05(what);
  check_group(what, cta_group);
  if (!bar.type->is_pointer() || !bar.type->element->is_scalar() || bar.type->element->bit_size() != 64)
    throw UserError("TYPE_MISMATCH", what + ": needs a pointer to the mbarrier (an Int64 in shared memory), got " +
                                         dtype_name(bar.type));
  std::vector<ir::Value*> ops{smem_pointer(what, "the mbarrier", bar)};
  if (cta_mask) ops.push_back(materialize(convert(*cta_mask, ir::int_type(16, false))));
  b.create(OpCode::Tcgen05Commit, ops, {})->int_attr = cta_group;
}

void tcgen05_wait(bool store) {
  const std::string what = store ? "fence_view_async_tmem_store" : "fence_view_async_tmem_load";
  ir::Builder& b = kernel_builder(what);
  require_tcgen05(what);
  b.create(OpCode::Tcgen05Wait, {}, {})->int_attr = store ? 1 : 0;
}

void tcgen05_fence(bool after) {
  const std::string what = after ? "fence_after_thread_sync" : "fence_before_thread_sync";
  ir::Builder& b = kernel_builder(what);
  require_tcgen05(what);
  b.create(OpCode::Tcgen05Fence, {}, {})->int_attr = after ? 1 : 0;
}

}  // namespace opencute::dsl
