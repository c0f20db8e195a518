// Attributes of the SM90 asynchronous ops (ir.h OpCode::MbarrierInit ... Fence): the mbarrier
// arrive and wait kinds and the fence kinds, each with its one spelling (printer, parser) and,
// for fences, its PTX instruction and the first architecture that has it.
#pragma once
#include <cstdint>
#include <string>

namespace opencute::ir {

// Arrive: count `value` arrivals. ArriveExpectTx: raise the transaction count by `value` bytes,
// then arrive once. ExpectTx: raise the transaction count only.
enum class MbarrierArriveKind : uint8_t { Arrive = 0, ArriveExpectTx = 1, ExpectTx = 2 };
// Wait: block until the phase with the given parity completed. TryWait: the same test, may
// suspend for a while, returns whether it completed. TestWait: the test alone, never suspends.
// TryWaitTimeLimit: TryWait with a third operand, the i32 suspend-time hint in nanoseconds (PTX's
// suspendTimeHint; fmha.py's nvvm.mbarrier_try_wait_parity_timelimit).
enum class MbarrierWaitKind : uint8_t { Wait = 0, TryWait = 1, TestWait = 2, TryWaitTimeLimit = 3 };

enum class FenceKind : uint8_t {
  MbarrierInit,             // fence.mbarrier_init.release.cluster
  ProxyAsync,               // fence.proxy.async
  ProxyAsyncGlobal,         // fence.proxy.async.global
  ProxyAsyncSharedCta,      // fence.proxy.async.shared::cta  (fence_view_async_shared)
  ProxyAsyncSharedCluster,  // fence.proxy.async.shared::cluster
  ProxyAlias,               // fence.proxy.alias
  AcqRelCta,                // fence.acq_rel.cta
  AcqRelCluster,            // fence.acq_rel.cluster
  AcqRelGpu,                // fence.acq_rel.gpu
  AcqRelSys,                // fence.acq_rel.sys
  TensormapRelease,         // fence.proxy.tensormap::generic.release.gpu  (fence_tma_desc_release)
  NumKinds
};

// TmaStore's ints[0], when present: a reduce-store (PTX cp.reduce.async.bulk.tensor) combining
// each element into global memory with this operation, atomically per element.
enum class TmaReduceKind : uint8_t { None = 0, Add, Min, Max, And, Or, Xor, NumKinds };

const char* tma_reduce_kind_name(TmaReduceKind k);            // "", "add", "min", "max", "and", "or", "xor"
const char* mbarrier_arrive_kind_name(MbarrierArriveKind k);  // "arrive", "arrive_expect_tx", "expect_tx"
const char* mbarrier_wait_kind_name(MbarrierWaitKind k);      // "wait", "try_wait", "test_wait", "try_wait_timelimit"
const char* fence_kind_name(FenceKind k);                     // "mbarrier_init", "proxy_async", ...
const char* fence_ptx(FenceKind k);                           // "fence.proxy.async;"
int fence_min_arch(FenceKind k);                              // 70, 90 ...
// Inverses of the names above; throw std::invalid_argument naming the accepted spellings.
MbarrierArriveKind mbarrier_arrive_kind_from_name(const std::string& name);
MbarrierWaitKind mbarrier_wait_kind_from_name(const std::string& name);
FenceKind fence_kind_from_name(const std::string& name);

}  // namespace opencute::ir
