// The DSL side of Blackwell's (sm_100) tensor memory and the tcgen05 ops without an atom:
// cute.arch.alloc_tmem / dealloc_tmem / relinquish_tmem_alloc_permit / retrieve_tmem_ptr, the
// tcgen05 fences and waits (fence_view_async_tmem_load / store) and tcgen05.commit. Each checks
// its arguments and the target (sm_100a / sm_100f / sm_103a), then emits the typed IR op (ir.h,
// "SM100 tensor memory and tcgen05").
//
// Tensor memory (PTX ISA "Tensor Memory"): per CTA, 128 lanes x 512 columns of 32-bit cells.
// An address is (lane << 16) | column; tcgen05.alloc hands out a power-of-two number of
// columns, at least 32, by writing the address of the first one to shared memory.
#pragma once
#include <optional>
#include <string>

#include "dsl/num.h"
#include "ir/ir.h"

namespace opencute::dsl {

constexpr int kTmemLanes = 128;
constexpr int kTmemColumns = 512;
constexpr int kTmemMinAllocColumns = 32;

// Raises UNSUPPORTED_ARCH unless the program is compiled for an architecture with tcgen05.
void require_tcgen05(const std::string& what);

// tcgen05.alloc: `columns` (a power of two in [32, 512]) written as an address to `dst` (a
// pointer to an Int32 in shared memory). Warp-wide. `cta_group` 1 or 2.
// `file` / `line`: where the user wrote it (the emulator names it when the columns leak).
void tmem_alloc(const Num& columns, const Num& dst, int cta_group, const std::string& file = "", int line = 0);
// tcgen05.dealloc of `columns` at `address` (an Int32 address or a tensor-memory pointer).
void tmem_dealloc(const Num& address, const Num& columns, int cta_group);
void tmem_relinquish_alloc_permit(int cta_group);
// The tensor-memory pointer to `element` whose address was written to shared memory at `src`.
Num retrieve_tmem_ptr(ir::Type element, int align, const Num& src);
// The Int32 address of a tensor-memory pointer (or an Int32 given as one).
ir::Value* tmem_address(const std::string& what, const Num& ptr);

// tcgen05.commit: the mbarrier at `bar` gets one arrival once every tcgen05.mma (and cp) the
// thread issued before completes; with `cta_mask`, the mbarrier at the same offset in each CTA of
// the mask (multicast).
void tcgen05_commit(const Num& bar, const std::optional<Num>& cta_mask, int cta_group);
// tcgen05.wait::ld (store = false) / ::st.
void tcgen05_wait(bool store);
// tcgen05.fence::before_thread_sync (after = false) / ::after_thread_sync.
void tcgen05_fence(bool after);

}  // namespace opencute::dsl
