// What the emulator reports when a kernel goes wrong: where (kernel, source line, block and
// thread), bad memory accesses (null, misaligned, out of bounds, races with copies in flight),
// failed device assertions, deadlocks and bad launches. Every message text of those lives in
// diagnostics.cpp; the op handlers report their own op-specific errors through fail_at.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "emulator/execution_state.h"

namespace opencute::emulator {

std::string hex(uintptr_t a);
std::string dims3(const unsigned d[3]);

// "in kernel 'k' (line L), block (x,y,z) thread (x,y,z)": the lane's place in the launch.
std::string where(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i);

// Raises ExecutionError("<what> <where>").
[[noreturn]] void fail_at(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                          const std::string& what);

// Checks one load or store of `bytes` at `addr` by a lane: not null, naturally aligned, no race
// with TMA / cp.async / wgmma in flight, inside shared memory for a shared pointer, else inside the
// thread's local arrays, a buffer the launch registered or the cluster's shared memory (strict
// launches only), or device memory that the launch's DeviceAddressMap resolves. Raises
// ExecutionError naming the access otherwise. Returns the host address to access: `addr` itself,
// or the host copy standing for a staged device address.
uintptr_t check_access(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i, uintptr_t addr,
                       size_t bytes, bool store);

// Whether every element access inside [addr, addr + bytes) of global memory would pass
// check_access, each at the same offset from *host (set then): the range is in no shared memory
// of the cluster nor in the block's local arrays, and one registered buffer or one staged span
// holds it (or the launch trusts every address). False means "check the elements one by one",
// not an error. The caller checks each element's alignment.
bool plain_global_run(const LaunchCtx& c, const Worker& w, uintptr_t addr, size_t bytes, uintptr_t* host);

// The host address standing for `addr` in the launch's DeviceAddressMap (`addr` itself without
// one, or when it is host memory); raises ExecutionError naming the lane when the map refuses it.
uintptr_t device_host_address(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                              uintptr_t addr, size_t bytes);

// Raises AssertionFailure for a device assertion that failed in `lane`.
[[noreturn]] void report_assertion(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i);

// Every warp of block `w` is at sync_threads or finished, some of each.
[[noreturn]] void report_sync_threads_deadlock(const LaunchCtx& c, const Worker& w);
// No warp of the cluster can make progress: says what each one waits for.
[[noreturn]] void report_deadlock(const LaunchCtx& c, const ClusterState& cl);

// Raises ExecutionError when block `w` exits with tensor-memory columns still allocated.
void report_leaked_tmem(const LaunchCtx& c, const Worker& w);

// Why the tcgen05.mma `m` is not known to be complete: no tcgen05.commit after it, or no wait on
// its commit's mbarrier phase (naming the MMA's and the commit's lines and the barrier).
std::string describe_mma_in_flight(const ClusterState& cl, const MmaCompletion::InFlight& m);
// Raises ExecutionError, at the MMA's line, when block `w` exits while a tcgen05.mma writing its
// tensor memory is not known to be complete.
void report_mma_in_flight_at_exit(const LaunchCtx& c, const Worker& w);

// A grid or block with a dimension of 0 is an invalid launch on the GPU (the driver refuses it):
// running no block at all would be a silent wrong answer.
void check_launch_not_empty(const LaunchRequest& r, const std::string& kernel);
// The launch's grid, block, argument count and cluster shape, checked before any block runs.
void check_launch(const LaunchRequest& r, const std::string& kernel, size_t num_args);

}  // namespace opencute::emulator
