#include "dsl/mbarrier.h"

#include <string>

#include "dsl/dtype.h"
#include "dsl/tracer.h"

namespace opencute::dsl {
namespace {

ir::Builder& kernel_builder(const std::string& what) {
  Tracer& t = Tracer::require(what.c_str());
  if (!t.in_kernel()) throw UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  return t.builder();
}

// Ops PTX introduced with sm_90 raise at the user's line when the program targets an older GPU.
void require_arch(const std::string& what, int min_arch) {
  const support::Arch& arch = Tracer::current_target_arch();
  if (arch.older_than(min_arch))
    throw UserError("UNSUPPORTED_ARCH", what + " needs sm_" + std::to_string(min_arch) +
                                            " or newer, but the program is compiled for " + arch.name);
}

ir::Value* barrier_pointer(const std::string& what, const Num& bar) {
  if (!bar.type->is_pointer())
    throw UserError("TYPE_MISMATCH", what + " needs a pointer to the mbarrier (an Int64 in shared memory), got " +
                                         dtype_name(bar.type));
  ir::Type e = bar.type->element;
  if (!e->is_scalar() || e->byte_size() != 8)
    throw UserError("TYPE_MISMATCH", what + ": an mbarrier is an 8-byte object; the pointer's element type is " +
                                         dtype_name(e) + " (use a pointer to Int64 in shared memory)");
  if (bar.type->space != ir::AddrSpace::Smem && bar.type->space != ir::AddrSpace::Generic)
    throw UserError("TYPE_MISMATCH", what + ": an mbarrier lives in shared memory, got a pointer to " +
                                         ir::to_string(bar.type->space) + " memory");
  if (bar.type->align && bar.type->align < 8)
    throw UserError("TYPE_MISMATCH", what + ": an mbarrier must be 8-byte aligned, the pointer promises " +
                                         std::to_string(bar.type->align) + " bytes");
  return materialize(bar);
}

ir::Value* int32_operand(const std::string& what, const char* name, const Num& n) {
  if (!n.type->is_int())
    throw UserError("TYPE_MISMATCH", what + ": " + name + " must be an integer, got " + dtype_name(n.type));
  return materialize(convert(n, ir::i32()));
}

}  // namespace

void mbarrier_init(const Num& bar, const Num& count) {
  const std::string what = "mbarrier_init";
  ir::Builder& b = kernel_builder(what);
  require_arch(what, 80);
  if (count.is_static && count.type->is_int() && (count.s.i < 1 || count.s.i > (1 << 20) - 1))
    throw UserError("INVALID_VALUE", "mbarrier_init: the arrival count must be in [1, 2^20 - 1], got " +
                                         std::to_string(count.s.i));
  ir::Value* p = barrier_pointer(what, bar);
  b.create(ir::OpCode::MbarrierInit, {p, int32_operand(what, "the arrival count", count)}, {});
}

void mbarrier_arrive(ir::MbarrierArriveKind kind, const Num& bar, const Num& value, const std::optional<Num>& peer_rank) {
  const std::string what = std::string("mbarrier_") + ir::mbarrier_arrive_kind_name(kind);
  ir::Builder& b = kernel_builder(what);
  if (kind != ir::MbarrierArriveKind::Arrive) require_arch(what + " (transaction counts)", 90);
  if (peer_rank) require_arch(what + " on a peer CTA of the cluster", 90);
  if (kind == ir::MbarrierArriveKind::Arrive && value.is_static && value.type->is_int() && value.s.i != 1)
    require_arch(what + " with an arrival count other than 1", 90);
  if (value.is_static && value.type->is_int() && value.s.i < 0)
    throw UserError("INVALID_VALUE", what + ": the " +
                                         (kind == ir::MbarrierArriveKind::Arrive ? "arrival count" : "transaction byte count") +
                                         " must not be negative, got " + std::to_string(value.s.i));
  std::vector<ir::Value*> ops = {barrier_pointer(what, bar),
                                 int32_operand(what, kind == ir::MbarrierArriveKind::Arrive ? "the arrival count"
                                                                                              : "the transaction bytes",
                                               value)};
  if (peer_rank) ops.push_back(int32_operand(what, "the peer CTA rank", *peer_rank));
  b.create(ir::OpCode::MbarrierArrive, ops, {})->int_attr = int64_t(kind);
}

void cp_async_mbarrier_arrive(const Num& bar, bool noinc) {
  const std::string what = noinc ? "cp_async_mbarrier_arrive_noinc" : "cp_async_mbarrier_arrive";
  ir::Builder& b = kernel_builder(what);
  b.create(ir::OpCode::CpAsyncMbarrierArrive, {barrier_pointer(what, bar)}, {})->int_attr = noinc ? 1 : 0;
}

std::optional<Num> mbarrier_wait(ir::MbarrierWaitKind kind, const Num& bar, const Num& phase,
                                 const std::optional<Num>& suspend_hint) {
  const std::string what = std::string("mbarrier_") + ir::mbarrier_wait_kind_name(kind);
  const bool timed = kind == ir::MbarrierWaitKind::TryWaitTimeLimit;
  if (timed != suspend_hint.has_value())
    throw UserError("VALUE_INVALID", what + (timed ? " needs a suspend-time hint (i32 nanoseconds)"
                                                        : " takes no suspend-time hint"));
  ir::Builder& b = kernel_builder(what);
  require_arch(what, kind == ir::MbarrierWaitKind::TryWait || timed ? 90 : 80);
  std::vector<ir::Value*> ops = {barrier_pointer(what, bar),
                                 int32_operand(what, "the phase parity", phase.type->is_bool() ? convert(phase, ir::i32()) : phase)};
  if (timed) ops.push_back(int32_operand(what, "the suspend-time hint", *suspend_hint));
  const bool blocking = kind == ir::MbarrierWaitKind::Wait;
  ir::Op* op = b.create(ir::OpCode::MbarrierWait, ops, blocking ? std::vector<ir::Type>{} : std::vector<ir::Type>{ir::bool_type()});
  op->int_attr = int64_t(kind);
  // Before sm_90 there is no try_wait: a blocking wait spins on test_wait instead.
  if (blocking && Tracer::current_target_arch().older_than(90)) op->ints = {1};
  if (blocking) return std::nullopt;
  return Num::of_value(op->result());
}

Num mbarrier_conditional_try_wait(const Num& cond, const Num& bar, const Num& phase) {
  Num c = to_boolean(cond);
  if (c.is_static) {
    if (!c.s.i) return Num::of_int(ir::bool_type(), 1);
    return *mbarrier_wait(ir::MbarrierWaitKind::TryWait, bar, phase);
  }
  ir::Builder& b = kernel_builder("mbarrier_conditional_try_wait");
  ir::Op* op = b.create_if(materialize(c));
  ir::Block* outer = b.block();
  b.set_block(op->region_block(0));
  Num r = *mbarrier_wait(ir::MbarrierWaitKind::TryWait, bar, phase);
  b.yield({materialize(r)});
  b.set_block(op->region_block(1));
  b.yield({b.const_bool(true)});
  b.set_block(outer);
  b.set_results(op, {ir::bool_type()});
  return Num::of_value(op->result());
}

void fence(ir::FenceKind kind) {
  const std::string what = std::string("fence (") + ir::fence_ptx(kind) + ")";
  ir::Builder& b = kernel_builder(what);
  require_arch(what, ir::fence_min_arch(kind));
  b.create(ir::OpCode::Fence, {}, {})->int_attr = int64_t(kind);
}

}  // namespace opencute::dsl
