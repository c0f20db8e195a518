// The DSL side of cute.arch's warp, atomic and shared-memory ops and of runtime assertions:
// turns the user's values into what the typed IR ops take (32-bit registers for shuffles, the
// pointee type for atomics) and the results back into the user's types.
#pragma once
#include <string>

#include "dsl/num.h"
#include "ir/arch_attributes.h"

namespace opencute::dsl {

// Any scalar of at most 64 bits: narrower values travel widened to 32 bits, floats as their
// bits, 64-bit values as two 32-bit shuffles. The result has the type of `value`.
Num shuffle(ir::ShuffleKind kind, const Num& value, const Num& offset, const Num& member_mask, const Num& clamp);
Num vote(ir::VoteKind kind, const Num& pred, const Num& member_mask);  // ballot -> Int32, others -> Boolean
// cute.arch.warp_redux_sync: the reduction over the lanes of `member_mask` (redux.sync): Int32 /
// Uint32 values with any kind (sm_80), Float32 with min / max, of |x| (abs) and NaN-propagating
// (nan) as PTX's .abs / .NaN (sm_100a).
Num warp_redux(ir::ReduxKind kind, const Num& value, const Num& member_mask, bool abs, bool nan);
// cute.arch.atomic_fmax(ptr, value, sign_bit=False): the Float32 at `ptr` becomes the larger of it
// and `value`; returns the previous value. Without a sign bit (both non-negative, as an amax of
// |x| is) float order is the order of the bit patterns as Int32: atom.max.s32 on them.
Num atomic_fmax(const Num& ptr, const Num& value, bool sign_bit, const std::string& sem, const std::string& scope);
// `ptr` is a pointer value; the old value comes back in the pointee type. `sem`/`scope` empty:
// relaxed / gpu, as PTX `atom` without qualifiers. `compare` only for cas.
Num atomic(ir::AtomicKind kind, const Num& ptr, const Num& value, const Num* compare, const std::string& sem,
           const std::string& scope);
// align 0: the element's size.
Num smem_alloc(ir::Type element, int64_t count, int align);
Num dyn_smem(ir::Type element, int align);
Num dyn_smem_size();
// Emits an Assert op when the trace has assertions enabled, nothing otherwise.
void assertion(const Num& cond, const std::string& message, const std::string& file, int line);

}  // namespace opencute::dsl
