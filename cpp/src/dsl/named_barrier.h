// cutlass.pipeline.NamedBarrier: PTX `bar.sync id, count` / `bar.arrive id, count` on one of
// the 16 hardware barriers of a CTA, counting `count` threads (whole warps).
#pragma once
#include "dsl/num.h"
#include "ir/ir.h"

namespace opencute::dsl {

// Static ids must be in [0, 16) and static counts positive multiples of 32 (PTX counts whole
// warps); dynamic ones are taken as they are.
void named_barrier(const Num& id, const Num& count, ir::NamedBarrierKind kind);

}  // namespace opencute::dsl
