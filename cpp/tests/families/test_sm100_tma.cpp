// Blackwell cta_group::2 TMA loads (a 2-CTA MMA's operands): the lowering names the CTA group and
// clears the peer bit of the mbarrier's shared::cluster address (the pair leader's barrier), and
// libNVVM + nvJitLink accept it for sm_100a (skipped without libNVVM); the verifier's rule for the
// CTA group attribute. The emulator's semantics (the bytes complete the leader's barrier) are
// tested from Python (tests/nvgpu/test_pipeline_sm100.py, test_blackwell_helpers.py).
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <string>

#include "ir/builder.h"
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

TEST(Sm100Tma, TwoCtaLoadsCompileForSm100a) {
  nvvm_test::KernelUnderTest k("tma_2sm");
  // The tensor map in global memory (as a grouped GEMM's updated descriptors are): no by-value
  // parameter, whose spelling differs for sm_100 (that is the runtime's concern, tested there).
  Value* desc = k.arg(ir::pointer_type(ir::f32(), AddrSpace::Gmem, 64));
  Value* x = k.arg(ir::i32());
  Value* tile = k.b.smem_alloc(ir::f32(), 1024, 1024);
  Value* bar = k.b.smem_alloc(ir::i64(), 1, 8);
  ir::Op* load = k.b.create(OpCode::TmaLoad, {desc, tile, bar, x, k.c32(0)}, {});
  load->int_attr = 2;
  load->ints = {0, 0, 2};
  ir::Op* mcast = k.b.create(OpCode::TmaLoad, {desc, tile, bar, x, k.c32(8), k.c32(3)}, {});
  mcast->int_attr = 2;
  mcast->ints = {1, 0, 2};
  k.b.ret({});
  ir::verify_or_throw(k.m);
  auto t = target::lower_kernels_to_nvvm(k.m);
  EXPECT_TRUE(contains(t.text, "cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes "))
      << t.text;
  EXPECT_TRUE(contains(t.text, "mbarrier::complete_tx::bytes.multicast::cluster [$0]")) << t.text;
  EXPECT_TRUE(contains(t.text, ", -16777217")) << t.text;  // the peer bit (bit 24) cleared
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  for (auto& [arch, ptx] : compile_for(t, {"sm_100a"}))
    EXPECT_TRUE(contains(ptx, "cp.async.bulk.tensor.2d.cta_group::2")) << arch;
}

TEST(Sm100Tma, VerifierChecksTheCtaGroup) {
  nvvm_test::KernelUnderTest k("tma_bad_group");
  Value* desc = k.arg(ir::pointer_type(ir::f32(), AddrSpace::Param, 64));
  Value* tile = k.b.smem_alloc(ir::f32(), 1024, 1024);
  Value* bar = k.b.smem_alloc(ir::i64(), 1, 8);
  ir::Op* load = k.b.create(OpCode::TmaLoad, {desc, tile, bar, k.c32(0), k.c32(0)}, {});
  load->int_attr = 2;
  load->ints = {0, 0, 3};
  k.b.ret({});
  EXPECT_THROW(ir::verify_or_throw(k.m), std::exception);
}

}  // namespace
