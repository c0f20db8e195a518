// TMA descriptors in device memory (TmaDescCopy, TmaDescReplace, TmaDescCpFenceRelease) and the
// predicated TmaLoad: NVVM lowering compiled by libNVVM and linked by nvJitLink for sm_90a,
// printed IR that parses back, the verifier's operand rules.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <string>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "target/nvvm/lower_to_nvvm.h"

namespace {

using namespace opencute;
using nvvm_test::compile_for;
using nvvm_test::contains;
using nvvm_test::have_libnvvm;
using ir::AddrSpace;
using ir::OpCode;
using ir::Value;

struct Kernel : nvvm_test::KernelUnderTest {
  using KernelUnderTest::KernelUnderTest;
  void replace(Value* slot, ir::TmaDescField f, int64_t ord, Value* v) {
    ir::Op* op = b.create(OpCode::TmaDescReplace, {slot, v}, {});
    op->int_attr = int64_t(f);
    op->ints = {ord};
  }
  void finish() {
    b.set_block(f->body.get());
    b.ret({});
  }
};

// Copies the kernel's descriptor to a global and a shared slot, re-points both, publishes the
// shared one, and loads through the global one with a per-lane predicate.
void build(Kernel& k) {
  Value* desc = k.arg(ir::pointer_type(ir::f32(), AddrSpace::Param, 64));
  Value* gslot = k.arg(ir::pointer_type(ir::i64(), AddrSpace::Gmem, 128));
  Value* addr = k.arg(ir::i64());
  Value* extent = k.arg(ir::i32());
  Value* sslot = k.b.smem_alloc(ir::i64(), 16, 128);
  Value* tile = k.b.smem_alloc(ir::f32(), 256, 1024);
  Value* bar = k.b.smem_alloc(ir::i64(), 1, 8);
  k.b.create(OpCode::TmaDescCopy, {desc, gslot}, {});
  k.b.create(OpCode::TmaDescCopy, {desc, sslot}, {});
  for (Value* slot : {gslot, sslot}) {
    k.replace(slot, ir::TmaDescField::GlobalAddress, 0, addr);
    k.replace(slot, ir::TmaDescField::GlobalDim, 1, extent);
    k.replace(slot, ir::TmaDescField::GlobalStride, 0, k.b.const_int(ir::i64(), 288));
  }
  k.b.create(OpCode::TmaDescCpFenceRelease, {gslot, sslot}, {});
  Value* lane = k.b.special(OpCode::LaneIdx, 0);
  Value* pred = k.b.cmp(ir::CmpPredicate::Lt, lane, k.c32(2));
  ir::Op* load = k.b.create(OpCode::TmaLoad, {gslot, tile, bar, k.c32(0), lane, pred}, {});
  load->int_attr = 2;
  load->ints = {0, 1};
}

TEST(TmaDescriptorInMemory, EveryOpCompilesForSm90a) {
  Kernel k("tensormaps");
  build(k);
  k.finish();
  ir::verify_or_throw(k.m);
  auto text = target::lower_kernels_to_nvvm(k.m);
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  auto ptx = compile_for(text, {"sm_90a"});
  const std::string& p = ptx["sm_90a"];
  for (const char* want : {"tensormap.replace.tile.global_address.global.b1024.b64",
                           "tensormap.replace.tile.global_dim.global.b1024.b32 [%rd", "], 1, %r",
                           "tensormap.replace.tile.global_stride.global.b1024.b64",
                           "tensormap.replace.tile.global_address.shared::cta.b1024.b64",
                           "tensormap.replace.tile.global_stride.shared::cta.b1024.b64",
                           "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned",
                           "ld.v2.b64", "st.v2.b64", "setp.ne.b32 tp",
                           "@tp cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"})
    EXPECT_TRUE(contains(p, want)) << want << "\n" << p;
  EXPECT_FALSE(contains(p, "elect.sync")) << "a predicated load elects no lane of its own";
}

TEST(TmaDescriptorInMemory, PrintedIrParsesBack) {
  Kernel k("tensormaps_text");
  build(k);
  k.finish();
  std::string text = ir::print_module(k.m);
  auto parsed = ir::parse_module(text);
  EXPECT_EQ(ir::print_module(*parsed), text);
  EXPECT_TRUE(contains(text, "tma_desc_replace [2, 0]")) << text;
  EXPECT_TRUE(contains(text, "tma_load [2, 0, 1]")) << text;
}

TEST(TmaDescriptorInMemory, VerifierRejectsBadOperands) {
  Kernel k("tensormaps_bad");
  Value* gslot = k.arg(ir::pointer_type(ir::i64(), AddrSpace::Gmem, 128));
  Value* sslot = k.b.smem_alloc(ir::i64(), 16, 128);
  k.replace(gslot, ir::TmaDescField::GlobalDim, 0, k.b.const_int(ir::i64(), 4));     // an extent is i32
  k.replace(gslot, ir::TmaDescField::GlobalStride, 4, k.b.const_int(ir::i64(), 16));  // strides of dims 1..4 only
  k.b.create(OpCode::TmaDescCpFenceRelease, {sslot, gslot}, {});                   // (global, shared) order
  k.finish();
  auto errors = ir::verify_module(k.m);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_TRUE(contains(errors[0], "i32 extent")) << errors[0];
  EXPECT_TRUE(contains(errors[1], "stride < 4")) << errors[1];
  EXPECT_TRUE(contains(errors[2], "global tensor map pointer, shared")) << errors[2];
}

}  // namespace
