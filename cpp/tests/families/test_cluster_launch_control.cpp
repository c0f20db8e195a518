// Blackwell cluster launch control: try_cancel (with and without multicast) and query_cancel
// lowered to NVVM IR, compiled for sm_100a by libNVVM and linked by nvJitLink (skipped without
// libNVVM); the ops through the printer and parser; the verifier's operand rules. The emulator's
// semantics (a try_cancel takes a cluster not launched yet) are tested from Python
// (tests/nvgpu/test_cluster_launch_control.py), where a launch has clusters to take.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <string>

#include "emulator/device_emulator.h"
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
using ir::Value;

struct ClcKernel : nvvm_test::KernelUnderTest {
  Value* response;
  Value* bar;
  explicit ClcKernel(const std::string& name) : KernelUnderTest(name) {
    response = b.smem_alloc(ir::i32(), 4, 16);
    bar = b.smem_alloc(ir::i64(), 1, 8);
  }
  ir::Op* try_cancel(bool multicast) {
    ir::Op* op = b.create(ir::OpCode::ClcTryCancel, {response, bar}, {});
    op->ints = {multicast ? 1 : 0};
    return op;
  }
  ir::Op* query() {
    return b.create(ir::OpCode::ClcQueryCancel, {response}, {ir::i32(), ir::i32(), ir::i32(), ir::bool_type()});
  }
  void finish() {
    b.set_block(f->body.get());
    b.ret({});
    ir::verify_or_throw(m);
  }
};

TEST(ClusterLaunchControl, LowersToTryCancelAndQueryAndCompilesForSm100a) {
  ClcKernel k("clc");
  Value* out = k.arg(ir::pointer_type(ir::i32(), ir::AddrSpace::Gmem, 0));
  k.try_cancel(true);
  k.try_cancel(false);
  ir::Op* q = k.query();
  Value* sum = k.b.binary(ir::OpCode::Add, k.b.binary(ir::OpCode::Add, q->result(0), q->result(1)), q->result(2));
  k.b.store(k.b.select(q->result(3), sum, k.c32(-1)), out);
  k.finish();
  auto t = target::lower_kernels_to_nvvm(k.m);
  EXPECT_TRUE(contains(t.text, "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
                               ".multicast::cluster::all.b128 [$0], [$1];")) << t.text;
  EXPECT_TRUE(contains(t.text, "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
                               ".b128 [$0], [$1];")) << t.text;
  EXPECT_TRUE(contains(t.text, "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128")) << t.text;
  EXPECT_TRUE(contains(t.text, "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128")) << t.text;
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  for (auto& [arch, ptx] : compile_for(t, {"sm_100a"})) {
    EXPECT_TRUE(contains(ptx, "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
                              ".multicast::cluster::all.b128")) << arch;
    EXPECT_TRUE(contains(ptx, "clusterlaunchcontrol.query_cancel.get_first_ctaid")) << arch;
  }
}

TEST(ClusterLaunchControl, PrintsAndParsesBack) {
  ClcKernel k("clc_text");
  k.try_cancel(true);
  k.query();
  k.finish();
  std::string text = ir::print_module(k.m);
  EXPECT_TRUE(contains(text, "clc_try_cancel [0, 1]")) << text;
  EXPECT_TRUE(contains(text, "clc_query_cancel [0]")) << text;
  EXPECT_EQ(ir::print_module(*ir::parse_module(text)), text);
}

TEST(ClusterLaunchControl, VerifierChecksOperandsAndPlace) {
  {
    ClcKernel k("clc_bad_query");
    k.b.create(ir::OpCode::ClcQueryCancel, {k.response}, {ir::i32()});  // one result instead of four
    k.b.set_block(k.f->body.get());
    k.b.ret({});
    EXPECT_THROW(ir::verify_or_throw(k.m), std::exception);
  }
  {
    ClcKernel k("clc_global_response");
    Value* g = k.arg(ir::pointer_type(ir::i32(), ir::AddrSpace::Gmem, 0));
    k.b.create(ir::OpCode::ClcTryCancel, {g, k.bar}, {})->ints = {1};
    k.b.set_block(k.f->body.get());
    k.b.ret({});
    EXPECT_THROW(ir::verify_or_throw(k.m), std::exception);
  }
  ClcKernel k("clc_emulated");
  k.try_cancel(true);
  k.query();
  k.finish();
  EXPECT_NO_THROW(emulator::DeviceEmulator emu(*k.f));
}

}  // namespace
