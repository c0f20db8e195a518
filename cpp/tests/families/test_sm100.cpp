// The SM100 tensor-memory and tcgen05 ops (ir.h "SM100 tensor memory and tcgen05"): every op's IR
// printer / parser round trip, its NVVM lowering compiled by libNVVM and linked by nvJitLink for
// sm_100a (tcgen05.cp and the 16x32bx2 shape included, which no Python test reaches yet), and the
// verifier's register-count rule of tcgen05.ld / st.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "target/nvvm/lower_to_nvvm.h"

namespace {

using namespace opencute;
using ir::AddrSpace;
using ir::OpCode;
using ir::Type;
using ir::Value;
using nvvm_test::compile_for;
using nvvm_test::contains;
using nvvm_test::have_libnvvm;

struct Kernel : nvvm_test::KernelUnderTest {
  using KernelUnderTest::KernelUnderTest;
  ir::Op* op(OpCode code, std::vector<Value*> operands, std::vector<Type> results, int64_t attr,
             std::vector<int64_t> ints = {}) {
    ir::Op* o = b.create(code, operands, results);
    o->int_attr = attr;
    o->ints = ints;
    return o;
  }
};

void build_all_ops(Kernel& k) {
  Value* holder = k.arg(ir::pointer_type(ir::i32(), AddrSpace::Smem, 4));
  Value* bar = k.arg(ir::pointer_type(ir::i64(), AddrSpace::Smem, 8));
  Value* desc = k.arg(ir::i64());
  Value* out = k.arg(ir::pointer_type(ir::i32(), AddrSpace::Gmem, 4));
  k.op(OpCode::TmemAlloc, {holder, k.c32(128)}, {}, 1);
  Value* addr = k.b.load(holder, ir::i32());
  k.op(OpCode::Tcgen05Mma, {addr, desc, desc, k.c32(0x08100490), k.b.const_int(ir::bool_type(), 1)}, {}, 1, {0, 0});
  k.op(OpCode::Tcgen05Mma, {addr, addr, desc, k.c32(0x08100490), k.b.const_int(ir::bool_type(), 0)}, {}, 1, {0, 1});
  k.op(OpCode::Tcgen05Commit, {bar}, {}, 1);
  // One kernel uses one CTA group (ptxas refuses a mix).
  k.op(OpCode::Tcgen05Commit, {bar, k.b.const_int(ir::int_type(16, false), 3)}, {}, 1);
  k.op(OpCode::Tcgen05Cp, {addr, desc}, {}, 1, {int64_t(ir::Tcgen05CpShape::S128x256b)});
  k.op(OpCode::Tcgen05Cp, {addr, desc}, {}, 1, {int64_t(ir::Tcgen05CpShape::S32x128bWarpx4)});
  k.op(OpCode::Tcgen05Fence, {}, {}, 0);
  k.op(OpCode::Tcgen05Fence, {}, {}, 1);
  ir::Op* ld = k.op(OpCode::Tcgen05Ld, {addr}, std::vector<Type>(4, ir::i32()), int64_t(ir::Tcgen05Shape::S16x256b), {1, 0, 1});
  ir::Op* ld2 = k.op(OpCode::Tcgen05Ld, {addr}, std::vector<Type>(2, ir::i32()), int64_t(ir::Tcgen05Shape::S16x32bx2), {2, 1, 2});
  k.op(OpCode::Tcgen05Wait, {}, {}, 0);
  k.op(OpCode::Tcgen05St, {addr, ld->result(0), ld2->result(1)}, {}, int64_t(ir::Tcgen05Shape::S16x64b), {2, 1, 2});
  k.op(OpCode::Tcgen05Wait, {}, {}, 1);
  k.b.store(ld->result(3), out);
  k.op(OpCode::TmemRelinquish, {}, {}, 1);
  k.op(OpCode::TmemDealloc, {addr, k.c32(128)}, {}, 1);
  k.b.ret({});
  ir::verify_or_throw(k.m);
}

TEST(Sm100Ops, PrintAndParseRoundTrip) {
  Kernel k("sm100_round_trip");
  build_all_ops(k);
  std::string text = ir::print_module(k.m);
  EXPECT_TRUE(contains(text, "tcgen05.mma")) << text;
  EXPECT_EQ(ir::print_module(*ir::parse_module(text)), text);
}

TEST(Sm100Ops, LowerToPtxThatNvJitLinkAcceptsForSm100a) {
  Kernel k("sm100_all_ops");
  build_all_ops(k);
  target::NvvmModuleText t = target::lower_kernels_to_nvvm(k.m);
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  auto ptx = compile_for(t, {"sm_100a"});
  ASSERT_EQ(ptx.count("sm_100a"), 1u);
  const std::string& p = ptx["sm_100a"];
  for (const char* insn : {"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
                           "tcgen05.mma.cta_group::1.kind::f16", "elect.sync",
                           "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
                           "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64",
                           "tcgen05.cp.cta_group::1.128x256b", "tcgen05.cp.cta_group::1.32x128b.warpx4",
                           "tcgen05.fence::before_thread_sync", "tcgen05.fence::after_thread_sync",
                           "tcgen05.ld.sync.aligned.16x256b.x1.b32", "tcgen05.ld.sync.aligned.16x32bx2.x2.pack::16b.b32",
                           "tcgen05.st.sync.aligned.16x64b.x2.unpack::16b.b32", "tcgen05.wait::ld.sync.aligned",
                           "tcgen05.wait::st.sync.aligned", "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned",
                           "tcgen05.dealloc.cta_group::1.sync.aligned.b32"})
    EXPECT_TRUE(contains(p, insn)) << insn << "\n" << p;
}

TEST(Sm100Ops, VerifierChecksTheRegisterCountOfTheShape) {
  Kernel k("sm100_bad_ld");
  Value* a = k.arg(ir::i32());
  // 16x128b moves two registers per repetition: x2 is four, not three.
  k.op(OpCode::Tcgen05Ld, {a}, std::vector<Type>(3, ir::i32()), int64_t(ir::Tcgen05Shape::S16x128b), {2, 0, 2});
  k.b.ret({});
  EXPECT_THROW(ir::verify_or_throw(k.m), std::exception);
}

}  // namespace
