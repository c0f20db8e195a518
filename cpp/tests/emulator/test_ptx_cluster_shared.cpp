// The PTX executor's shared::cluster window on hand-written PTX: as on the GPU, a CTA's shared
// addresses (a variable's address, cvta.to.shared, mapa) carry its rank in the cluster in bits
// 24..31, so a shared::cta address is also the shared::cluster address of the same bytes. Each CTA
// of a 2-CTA cluster stores into its peer's shared memory through mapa and arrives on the peer's
// mbarrier; then both arrive on the pair's even CTA's barrier through their own address with bit
// 24 cleared (what 2-CTA MMA code does to name the pair's leader). Expected values are computed by
// hand from the PTX ISA (mapa.shared::cluster, the shared::cluster window). st.async stores into
// the peer and completes its bytes on the peer's mbarrier.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "emulator/ptx/ptx_executor.h"
#include "emulator/ptx/ptx_program.h"
#include "emulator/ptx_test_launch.h"
#include "ir/ir.h"

using opencute::emulator::EmulatorConfig;
using opencute::emulator::ExecutionError;
using opencute::emulator::LaunchRequest;
using opencute::emulator::ptx::PtxExecutor;
namespace ir = opencute::ir;
using opencute::emulator::ptx_test::PtxLaunch;
using opencute::emulator::ptx_test::pointer;

namespace {

// One thread a CTA; CTA b writes out[8b .. 8b + 5]: buf's address, buf's address through
// cvta.shared / cvta.to.shared, buf's address in the peer (mapa), the word the peer stored in buf,
// its own pair_bar address with bit 24 cleared, 1 in the even CTA once the pair's barrier completed.
const char* kPeerKernel = R"(
.version 8.0
.target sm_90a
.address_size 64
.shared .align 16 .b8 buf[64];
.shared .align 8 .b8 bar[8];
.shared .align 8 .b8 pair_bar[8];
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %ctaid.x;
	mul.wide.u32 	%rd3, %r1, 32;
	add.s64 	%rd4, %rd2, %rd3;
	mov.u32 	%r2, %cluster_ctarank;
	xor.b32 	%r3, %r2, 1;
	mov.u32 	%r4, buf;
	mov.u32 	%r5, bar;
	mov.u32 	%r6, pair_bar;
	mov.u64 	%rd5, buf;
	cvta.shared.u64 	%rd6, %rd5;
	cvta.to.shared.u64 	%rd7, %rd6;
	cvt.u32.u64 	%r7, %rd7;
	mapa.shared::cluster.u32 	%r8, %r4, %r3;
	mapa.shared::cluster.u32 	%r9, %r5, %r3;
	mbarrier.init.shared::cta.b64 	[%r5], 1;
	and.b32 	%r11, %r2, 1;
	setp.eq.u32 	%p1, %r11, 0;
	selp.u32 	%r12, 2, 1, %p1;
	mbarrier.init.shared::cta.b64 	[%r6], %r12;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	add.u32 	%r13, %r2, 100;
	st.shared::cluster.u32 	[%r8], %r13;
	mbarrier.arrive.release.cluster.shared::cluster.b64 	_, [%r9];
$L__wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p2, [%r5], 0;
	@!%p2 bra 	$L__wait;
	ld.shared.u32 	%r14, [%r4];
	and.b32 	%r15, %r6, -16777217;
	mbarrier.arrive.release.cluster.shared::cluster.b64 	_, [%r15];
	mov.u32 	%r16, 0;
	@!%p1 bra 	$L__store;
$L__pair_wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p3, [%r6], 0;
	@!%p3 bra 	$L__pair_wait;
	mov.u32 	%r16, 1;
$L__store:
	st.global.v4.u32 	[%rd4], {%r4, %r7, %r8, %r14};
	st.global.v2.u32 	[%rd4+16], {%r15, %r16};
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
}
)";

// A shared::cluster store to rank 2 (bits 24..31 = 2) of a 2-CTA cluster.
const char* kPastTheClusterKernel = R"(
.version 8.0
.target sm_90a
.address_size 64
.shared .align 16 .b8 buf[64];
.visible .entry k()
{
	.reg .b32 	%r<4>;
	mov.u32 	%r1, 33554432;
	mov.u32 	%r2, 7;
	st.shared::cluster.u32 	[%r1], %r2;
	ret;
}
)";



// One thread a CTA: each CTA expects 8 bytes on its peer's barrier (count 1), stores two words
// into the peer's buf with st.async (which completes those bytes on the peer's barrier), then
// waits for its own barrier's phase 0 and writes out[2b], out[2b + 1] = the words its peer stored.
const char* kStAsyncKernel = R"(
.version 8.1
.target sm_90a
.address_size 64
.shared .align 16 .b8 buf[16];
.shared .align 8 .b8 bar[8];
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<6>;

	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %ctaid.x;
	mul.wide.u32 	%rd3, %r1, 8;
	add.s64 	%rd4, %rd2, %rd3;
	mov.u32 	%r2, %cluster_ctarank;
	xor.b32 	%r3, %r2, 1;
	mov.u32 	%r4, buf;
	mov.u32 	%r5, bar;
	mbarrier.init.shared::cta.b64 	[%r5], 1;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	mapa.shared::cluster.u32 	%r6, %r4, %r3;
	mapa.shared::cluster.u32 	%r7, %r5, %r3;
	mbarrier.arrive.expect_tx.shared::cluster.b64 	_, [%r7], 8;
	add.u32 	%r8, %r2, 100;
	add.u32 	%r9, %r2, 200;
	st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.u32 	[%r6], {%r8, %r9}, [%r7];
	mov.u32 	%r10, 0;
$L__wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p1, [%r5], %r10;
	@!%p1 bra 	$L__wait;
	ld.shared.v2.u32 	{%r11, %r12}, [%r4];
	st.global.v2.u32 	[%rd4], {%r11, %r12};
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
}
)";

}  // namespace

TEST(PtxClusterShared, StAsyncStoresIntoThePeerAndCompletesItsBarriersBytes) {
  PtxExecutor ex(kStAsyncKernel);
  std::vector<uint32_t> out(2 * 4, 0xdeadbeef);
  PtxLaunch l("k", {pointer(out.data())}, 1, 4, 2);
  ex.launch(l.r, EmulatorConfig{});
  for (uint32_t b = 0; b < 4; ++b) {
    const uint32_t peer = (b % 2) ^ 1;
    EXPECT_EQ(out[2 * b], 100 + peer) << b;
    EXPECT_EQ(out[2 * b + 1], 200 + peer) << b;
  }
}

TEST(PtxClusterShared, RedAsyncIsRefusedNotRunAsAPlainReduction) {
  const char* text = R"(
.version 8.1
.target sm_90a
.address_size 64
.shared .align 8 .b8 bar[8];
.visible .entry k()
{
	.reg .b32 	%r<3>;
	mov.u32 	%r1, bar;
	red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 	[%r1], 1, [%r1];
	ret;
}
)";
  try {
    PtxExecutor ex(text);
    FAIL() << "parsed";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("does not support 'red.async"), std::string::npos) << e.what();
  }
}

TEST(PtxClusterShared, AddressesCarryTheCtaRankAndReachThePeer) {
  PtxExecutor ex(kPeerKernel);
  std::vector<uint32_t> out(4 * 8, 0xdeadbeef);
  PtxLaunch l("k", {pointer(out.data())}, 1, 4, 2);
  ex.launch(l.r, EmulatorConfig{});
  // buf at shared offset 0, bar at 64, pair_bar at 72 (declaration order, each aligned).
  for (uint32_t b = 0; b < 4; ++b) {
    const uint32_t rank = b % 2, peer = rank ^ 1;
    const uint32_t* w = &out[b * 8];
    EXPECT_EQ(w[0], rank << 24) << b;         // the CTA's window in the cluster's
    EXPECT_EQ(w[1], rank << 24) << b;         // cvta.shared then cvta.to.shared: the same address
    EXPECT_EQ(w[2], peer << 24) << b;         // mapa to the peer
    EXPECT_EQ(w[3], 100 + peer) << b;         // what the peer stored through mapa
    EXPECT_EQ(w[4], 72u) << b;                // bit 24 cleared: the even CTA's pair_bar
    EXPECT_EQ(w[5], rank == 0 ? 1u : 0u) << b;  // the even CTA's pair_bar completed: two arrivals
  }
}

TEST(PtxClusterShared, AnAddressPastTheClusterIsReported) {
  PtxExecutor ex(kPastTheClusterKernel);
  PtxLaunch l("k", {}, 1, 2, 2);
  try {
    ex.launch(l.r, EmulatorConfig{});
    FAIL() << "ran";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("shared::cluster address 0x2000000 names CTA rank 2 of a cluster of 2"),
              std::string::npos)
        << e.what();
  }
}
