#include "dsl/named_barrier.h"

#include <string>

#include "dsl/tracer.h"

namespace opencute::dsl {

void named_barrier(const Num& id, const Num& count, ir::NamedBarrierKind kind) {
  const char* what = kind == ir::NamedBarrierKind::Sync ? "NamedBarrier.arrive_and_wait" : "NamedBarrier.arrive";
  Tracer& t = Tracer::require(what);
  if (!t.in_kernel()) throw UserError("ARCH_OUTSIDE_KERNEL", std::string(what) + " is only available inside a @cute.kernel");
  if (!id.type->is_int() || id.type->is_bool() || !count.type->is_int() || count.type->is_bool())
    throw UserError("TYPE_MISMATCH", std::string(what) + ": the barrier id and thread count must be integers");
  if (id.is_static && (id.s.i < 0 || id.s.i > 15))
    throw UserError("ARCH_BARRIER_ID", "named barrier id must be in [0, 15], got " + std::to_string(id.s.i));
  if (count.is_static && (count.s.i <= 0 || count.s.i % 32 != 0))
    throw UserError("ARCH_BARRIER_COUNT", "named barrier thread count must be a positive multiple of 32 (the warp "
                                          "size), got " + std::to_string(count.s.i));
  ir::Value* i = materialize(convert(id, ir::i32()));
  ir::Value* c = materialize(convert(count, ir::i32()));
  t.builder().named_barrier(i, c, kind);
}

}  // namespace opencute::dsl
