// The DSL side of cute.arch's mbarrier ops and fences (SM90 asynchronous machinery): checks the
// user's operands (an 8-byte shared-memory barrier, integer counts and parities) and the target
// architecture, and emits the typed IR ops of ir/async_attributes.h.
#pragma once
#include <optional>

#include "dsl/num.h"
#include "ir/async_attributes.h"

namespace opencute::dsl {

void mbarrier_init(const Num& bar, const Num& count);
// `value`: the arrival count (Arrive) or the transaction bytes; `peer_rank`: the CTA of the
// cluster whose barrier at the same shared offset is signalled (remote arrive, sm_90).
void mbarrier_arrive(ir::MbarrierArriveKind kind, const Num& bar, const Num& value, const std::optional<Num>& peer_rank);
// cp.async.mbarrier.arrive[.noinc]: arrive on `bar` once this thread's earlier cp.async completed.
void cp_async_mbarrier_arrive(const Num& bar, bool noinc);
// Wait returns nothing (an empty Num type); TryWait / TestWait / TryWaitTimeLimit return a Boolean.
// TryWaitTimeLimit takes `suspend_hint` (i32 nanoseconds); the other kinds take none.
std::optional<Num> mbarrier_wait(ir::MbarrierWaitKind kind, const Num& bar, const Num& phase,
                                 const std::optional<Num>& suspend_hint = std::nullopt);
// try_wait when `cond` holds, else true (nothing to wait for); the barrier is untouched then.
Num mbarrier_conditional_try_wait(const Num& cond, const Num& bar, const Num& phase);
void fence(ir::FenceKind kind);

}  // namespace opencute::dsl
