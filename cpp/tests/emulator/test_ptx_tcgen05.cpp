// The PTX executor's tcgen05.cp and tcgen05.commit on hand-written PTX (the DSL emits no tcgen05.cp):
// a 128x128b copy of a no-swizzle K-major shared-memory matrix (rows 16 bytes apart: stride byte
// offset 128 per 8 rows) into tensor memory lands at the commit, whose mbarrier arrival then
// releases the waiting warp; a tcgen05.ld before the commit still sees the old contents. Expected
// values are computed by hand from the PTX ISA (row r of the matrix goes to lane r, its four 32-bit
// words to four consecutive columns). The same copy through an absolute-mode descriptor (sm_103a)
// checks where its rows continue.
#include <gtest/gtest.h>

#include <cstring>
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

// One warp. smem word i (i < 512) holds 1000 + i: row r (16 bytes) holds 1000 + 4r .. 1000 + 4r + 3.
// out[t * 8 + 0..3]: lane t's four columns before the commit, out[t * 8 + 4..7] after it.
const char* kCopyKernel = R"(
.version 8.6
.target sm_100a
.address_size 64
.shared .align 1024 .b8 smem[2048];
.shared .align 8 .b8 bar[8];
.shared .align 4 .b8 holder[4];
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, smem;
	mov.u32 	%r3, 0;
$L__fill:
	shl.b32 	%r4, %r3, 5;
	add.u32 	%r4, %r4, %r1;
	add.u32 	%r5, %r4, 1000;
	shl.b32 	%r6, %r4, 2;
	add.u32 	%r6, %r6, %r2;
	st.shared.u32 	[%r6], %r5;
	add.u32 	%r3, %r3, 1;
	setp.lt.u32 	%p1, %r3, 16;
	@%p1 bra 	$L__fill;
	mov.u32 	%r7, holder;
	tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 	[%r7], 32;
	mov.u32 	%r8, bar;
	setp.eq.u32 	%p2, %r1, 0;
	@%p2 mbarrier.init.shared::cta.b64 	[%r8], 1;
	bar.sync 	0;
	ld.shared.u32 	%r9, [%r7];
	shr.u32 	%r10, %r2, 4;
	cvt.u64.u32 	%rd3, %r10;
	or.b64 	%rd4, %rd3, 70403103916032;
	@%p2 tcgen05.cp.cta_group::1.128x128b 	[%r9], %rd4;
	tcgen05.ld.sync.aligned.32x32b.x4.b32 	{%r20, %r21, %r22, %r23}, [%r9];
	tcgen05.wait::ld.sync.aligned;
	@%p2 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 	[%r8];
$L__wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p3, [%r8], 0;
	@!%p3 bra 	$L__wait;
	tcgen05.ld.sync.aligned.32x32b.x4.b32 	{%r24, %r25, %r26, %r27}, [%r9];
	tcgen05.wait::ld.sync.aligned;
	mul.wide.u32 	%rd5, %r1, 32;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.v4.u32 	[%rd6], {%r20, %r21, %r22, %r23};
	st.global.v4.u32 	[%rd6+16], {%r24, %r25, %r26, %r27};
	tcgen05.dealloc.cta_group::1.sync.aligned.b32 	%r9, 32;
	ret;
}
)";



}  // namespace

TEST(PtxExecutorTcgen05, CopyToTensorMemoryLandsAtTheCommit) {
  // 70403103916032 = (1 << 46) | (8 << 32): the fixed 0b001 and a stride byte offset of 128.
  PtxExecutor ex(kCopyKernel);
  std::vector<uint32_t> out(32 * 8, 0xdeadbeef);
  PtxLaunch l("k", {pointer(out.data())}, 32);
  ex.launch(l.r, EmulatorConfig{});
  for (uint32_t t = 0; t < 32; ++t)
    for (uint32_t w = 0; w < 4; ++w) {
      EXPECT_EQ(out[t * 8 + w], 0u) << "lane " << t << " column " << w << " before the commit";
      EXPECT_EQ(out[t * 8 + 4 + w], 1000u + 4 * t + w) << "lane " << t << " column " << w;
    }
}

// sm_103a's absolute leading-dimension mode (descriptor bit 52) through a 128x256b tcgen05.cp of a
// K-major 128-byte-swizzled matrix: the descriptor starts at chunk 7 of buffer 0 (shared offset
// 112) and names buffer 1 (offset 16384) in its LBO field, so bytes 16-31 of each row come from
// the start of that row in buffer 1. 128 threads; smem word i holds 1000 + i; out[t * 8 + w]:
// lane t, column w after the commit.
std::string absolute_copy_kernel(const char* descriptor_bits) {
  return std::string(R"(
.version 8.6
.target sm_100a
.address_size 64
.shared .align 1024 .b8 smem[32768];
.shared .align 8 .b8 bar[8];
.shared .align 4 .b8 holder[4];
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, smem;
	mov.u32 	%r3, 0;
$L__fill:
	shl.b32 	%r4, %r3, 7;
	add.u32 	%r4, %r4, %r1;
	add.u32 	%r5, %r4, 1000;
	shl.b32 	%r6, %r4, 2;
	add.u32 	%r6, %r6, %r2;
	st.shared.u32 	[%r6], %r5;
	add.u32 	%r3, %r3, 1;
	setp.lt.u32 	%p1, %r3, 64;
	@%p1 bra 	$L__fill;
	mov.u32 	%r7, holder;
	shr.u32 	%r30, %r1, 5;
	setp.eq.u32 	%p2, %r30, 0;
	@%p2 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 	[%r7], 32;
	mov.u32 	%r8, bar;
	setp.eq.u32 	%p2, %r1, 0;
	@%p2 mbarrier.init.shared::cta.b64 	[%r8], 1;
	bar.sync 	0;
	ld.shared.u32 	%r9, [%r7];
	add.u32 	%r10, %r2, 112;
	shr.u32 	%r10, %r10, 4;
	cvt.u64.u32 	%rd3, %r10;
	add.u32 	%r11, %r2, 16384;
	shr.u32 	%r11, %r11, 4;
	cvt.u64.u32 	%rd7, %r11;
	shl.b64 	%rd7, %rd7, 16;
	or.b64 	%rd3, %rd3, %rd7;
	or.b64 	%rd4, %rd3, )") + descriptor_bits + R"(;
	@%p2 tcgen05.cp.cta_group::1.128x256b 	[%r9], %rd4;
	@%p2 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 	[%r8];
$L__wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p3, [%r8], 0;
	@!%p3 bra 	$L__wait;
	shl.b32 	%r31, %r30, 21;
	add.u32 	%r32, %r9, %r31;
	tcgen05.ld.sync.aligned.32x32b.x8.b32 	{%r20, %r21, %r22, %r23, %r24, %r25, %r26, %r27}, [%r32];
	tcgen05.wait::ld.sync.aligned;
	mul.wide.u32 	%rd5, %r1, 32;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.v4.u32 	[%rd6], {%r20, %r21, %r22, %r23};
	st.global.v4.u32 	[%rd6+16], {%r24, %r25, %r26, %r27};
	bar.sync 	0;
	setp.eq.u32 	%p2, %r30, 0;
	@%p2 tcgen05.dealloc.cta_group::1.sync.aligned.b32 	%r9, 32;
	ret;
}
)";
}

TEST(PtxExecutorTcgen05, AbsoluteModeDescriptorContinuesInTheNextBuffer) {
  // (1 << 46) | (64 << 32) | (1 << 52) | (2 << 61): the fixed 0b001, SBO 1024, absolute mode, 128B swizzle.
  PtxExecutor ex(absolute_copy_kernel("4616260261676843008").c_str());
  std::vector<uint32_t> out(128 * 8, 0xdeadbeef);
  PtxLaunch l("k", {pointer(out.data())}, 128);
  ex.launch(l.r, EmulatorConfig{});
  for (uint32_t r = 0; r < 128; ++r)
    for (uint32_t w = 0; w < 8; ++w) {
      // Byte 4w of row r: in buffer 0 from chunk 7 on, past the row's 128 bytes in buffer 1 from chunk 0.
      const uint32_t k = 4 * w, row = (r / 8) * 1024 + (r % 8) * 128;
      uint32_t a = k < 16 ? row + 112 + k : 16384 + row + (k - 16);
      a ^= ((a >> 7) & 7) << 4;  // the 128-byte swizzle of the shared address
      EXPECT_EQ(out[r * 8 + w], 1000u + a / 4) << "lane " << r << " column " << w;
    }
}

TEST(PtxExecutorTcgen05, AbsoluteModeWithoutASwizzleIsRefused) {
  PtxExecutor ex(absolute_copy_kernel("4574243249455104").c_str());  // as above, no swizzle
  std::vector<uint32_t> out(128 * 8, 0);
  PtxLaunch l("k", {pointer(out.data())}, 128);
  try {
    ex.launch(l.r, EmulatorConfig{});
    FAIL() << "ran";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("absolute leading-dimension address mode (bit 52) without a swizzle"),
              std::string::npos) << e.what();
  }
}

TEST(PtxExecutorTcgen05, BlockScaledMmaIsNamedWithItsLine) {
  const char* text = R"(
.version 8.6
.target sm_100a
.address_size 64
.visible .entry k()
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;
	tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale [%r1], %rd1, %rd2, %r2, [%r3], [%r4], %p1;
	ret;
}
)";
  try {
    PtxExecutor ex(text);
    FAIL() << "parsed";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("PTX line 10"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale"), std::string::npos)
        << e.what();
  }
}

// The lowering marks tcgen05 inline asm with the kernel's source line (`// opencute-loc <line>
// <file>`, unusual bytes as %XX); the executor's reports carry it until libNVVM's `// end inline
// asm`. Here a tcgen05.ld of a column never allocated, inside and after such an asm.
TEST(PtxExecutorTcgen05, ReportsNameTheSourceLineTheLoweringMarked) {
  auto kernel = [](bool inside) {
    return std::string(R"(
.version 8.6
.target sm_100a
.address_size 64
.visible .entry k()
{
	.reg .b32 	%r<4>;
	mov.u32 	%r1, 0;
	// begin inline asm
	// opencute-loc 42 /tmp/my%20kernel%25.py
)") + (inside ? "" : "\t// end inline asm\n") +
           "\ttcgen05.ld.sync.aligned.32x32b.x1.b32 \t{%r2}, [%r1];\n" + (inside ? "\t// end inline asm\n" : "") +
           "\tret;\n}\n";
  };
  for (bool inside : {true, false}) {
    PtxExecutor ex(kernel(inside).c_str());
    PtxLaunch l("k", {}, 32);
    try {
      ex.launch(l.r, EmulatorConfig{});
      FAIL() << "ran";
    } catch (const ExecutionError& e) {
      EXPECT_NE(std::string(e.what()).find("is not allocated"), std::string::npos) << e.what();
      EXPECT_EQ(e.line, inside ? 42 : 0);
      EXPECT_EQ(e.file, inside ? "/tmp/my kernel%.py" : "");
    }
  }
}
