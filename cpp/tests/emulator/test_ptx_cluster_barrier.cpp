// The PTX executor's cluster barrier on hand-written PTX: barrier.cluster.wait completes the phase
// the thread arrived in, and a thread with no arrival pending (none yet in the kernel, or its last
// phase already waited for) goes on at once. CUTLASS's pipeline_init_wait is a bare cluster_wait
// (include/cutlass/pipeline/sm90_pipeline.hpp), and quack's 2-CTA cp.async pipeline
// (PipelineTmaCpAsyncUmma) calls it before the kernel's first barrier.cluster.arrive. Each CTA of a
// 2-CTA cluster stores a word in its shared memory between the bare waits and an arrive / wait
// pair, then reads the peer's word through mapa: the pair still orders the peer's store first.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "emulator/ptx/ptx_executor.h"
#include "emulator/ptx_test_launch.h"

using opencute::emulator::EmulatorConfig;
using opencute::emulator::ptx::PtxExecutor;
using opencute::emulator::ptx_test::PtxLaunch;
using opencute::emulator::ptx_test::pointer;

namespace {

// One warp a CTA; lane 0 of CTA b writes out[b] = the word its peer stored (100 + peer's rank).
const char* kBareWaitKernel = R"(
.version 8.0
.target sm_90a
.address_size 64
.shared .align 16 .b8 buf[16];
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<6>;

	barrier.cluster.wait.aligned;
	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %ctaid.x;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	mov.u32 	%r2, %cluster_ctarank;
	xor.b32 	%r3, %r2, 1;
	mov.u32 	%r4, buf;
	mov.u32 	%r5, %tid.x;
	setp.ne.u32 	%p1, %r5, 0;
	add.u32 	%r6, %r2, 100;
	@!%p1 st.shared.u32 	[%r4], %r6;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	barrier.cluster.wait.aligned;
	mapa.shared::cluster.u32 	%r7, %r4, %r3;
	ld.shared::cluster.u32 	%r8, [%r7];
	@!%p1 st.global.u32 	[%rd4], %r8;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
}
)";

}  // namespace

TEST(PtxClusterBarrier, AWaitWithNoArrivalPendingGoesOnAndAnArriveWaitPairStillOrders) {
  PtxExecutor ex(kBareWaitKernel);
  std::vector<uint32_t> out(4, 0xdeadbeef);
  PtxLaunch l("k", {pointer(out.data())}, 32, 4, 2);
  ex.launch(l.r, EmulatorConfig{});
  for (uint32_t b = 0; b < 4; ++b) EXPECT_EQ(out[b], 100 + ((b % 2) ^ 1)) << b;
}
