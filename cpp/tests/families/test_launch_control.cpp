// The MLIR-level surface and launch control: user inline PTX (InlineAsm) and griddepcontrol,
// lowered to NVVM IR, compiled by libNVVM and linked by nvJitLink (skipped without libNVVM);
// Launch ops with cooperative / PDL / event attributes through the printer and parser; the
// emulator's refusal of inline PTX; the cooperative-launch co-residency limit.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <algorithm>
#include <map>
#include <string>

#include "emulator/device_emulator.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "runtime/cooperative_grid.h"
#include "runtime/cuda_driver.h"
#include "support/cuda_paths.h"
#include "target/nvvm/lower_to_nvvm.h"
#include "target/nvvm/nvvm_compiler.h"
#include "transforms/dead_code.h"

namespace {

using namespace opencute;
using nvvm_test::compile_for;
using nvvm_test::contains;
using nvvm_test::have_libnvvm;
using ir::AddrSpace;
using ir::Type;
using ir::Value;

struct Kernel : nvvm_test::KernelUnderTest {
  using KernelUnderTest::KernelUnderTest;
  void finish() {
    b.set_block(f->body.get());
    b.ret({});
    ir::verify_or_throw(m);
  }
  target::NvvmModuleText lower() {
    finish();
    return target::lower_kernels_to_nvvm(m);
  }
};

Type gptr(Type t) { return ir::pointer_type(t, AddrSpace::Gmem, 0); }

TEST(InlineAsm, LowersWithTheUsersConstraintsAndCompiles) {
  Kernel k("asm_add");
  Value* a = k.arg(ir::i32());
  Value* out = k.arg(gptr(ir::i32()));
  Value* r = k.b.inline_asm(ir::i32(), {a, k.c32(5)}, "add.s32 $0, $1, $2;", "=r,r,r", false);
  k.b.store(r, out);
  auto t = k.lower();
  EXPECT_TRUE(contains(t.text, "call i32 asm \"add.s32 $0, $1, $2;\", \"=r,r,r\"(i32 ")) << t.text;
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  for (auto& [arch, ptx] : compile_for(t, {"sm_80", "sm_90a"})) EXPECT_TRUE(contains(ptx, "add.s32")) << arch;
}

TEST(InlineAsm, BooleansTravelAsRegistersAndMultiLineTextIsEscaped) {
  // The vote.sync shape NVIDIA's inline_ptx.py uses: an i1 operand and an i1 result bound to "r",
  // an immediate mask ("i"), and a braced multi-line body with tabs.
  Kernel k("asm_vote");
  Value* x = k.arg(ir::i32());
  Value* out = k.arg(gptr(ir::bool_type()));
  Value* pred = k.b.cmp(ir::CmpPredicate::Lt, x, k.c32(10));
  std::string body = "{\n\t.reg .pred ps;\n\t.reg .pred pd;\n\tsetp.ne.b32 ps, $1, 0;\n\t"
                     "vote.sync.any.pred pd, ps, $2;\n\tselp.b32 $0, 1, 0, pd;\n\t}";
  Value* r = k.b.inline_asm(ir::bool_type(), {pred, k.c32(-1)}, body, "=r,r,i", true);
  k.b.store(r, out);
  auto t = k.lower();
  EXPECT_TRUE(contains(t.text, "zext i1 ")) << t.text;
  EXPECT_TRUE(contains(t.text, "call i32 asm sideeffect \"{\\0A\\09.reg .pred ps;")) << t.text;
  EXPECT_TRUE(contains(t.text, "icmp ne i32 ")) << t.text;
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  for (auto& [arch, ptx] : compile_for(t, {"sm_80", "sm_90a"})) EXPECT_TRUE(contains(ptx, "vote.sync.any.pred")) << arch;
}

TEST(InlineAsm, NoResultAndPointerOperand) {
  Kernel k("asm_store");
  Value* p = k.arg(gptr(ir::i32()));
  Value* addr = k.b.create(ir::OpCode::PtrToInt, {p}, {ir::i64()})->result();
  EXPECT_EQ(k.b.inline_asm(nullptr, {addr, k.c32(7)}, "st.global.release.gpu.b32 [$0], $1;", "l,r,~{memory}", true),
            nullptr);
  auto t = k.lower();
  EXPECT_TRUE(contains(t.text, "call void asm sideeffect \"st.global.release.gpu.b32 [$0], $1;\", \"l,r,~{memory}\"("))
      << t.text;
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  for (auto& [arch, ptx] : compile_for(t, {"sm_80", "sm_90a"})) EXPECT_TRUE(contains(ptx, "st.global.release.gpu")) << arch;
}

TEST(InlineAsm, ConstraintCountMismatchIsAnError) {
  Kernel k("asm_bad");
  Value* a = k.arg(ir::i32());
  Value* out = k.arg(gptr(ir::i32()));
  k.b.store(k.b.inline_asm(ir::i32(), {a}, "mov.b32 $0, $1;", "=r,r,r", false), out);
  k.finish();
  try {
    target::lower_kernels_to_nvvm(k.m);
    FAIL() << "expected a lowering error";
  } catch (const std::exception& e) {
    EXPECT_TRUE(contains(e.what(), "names 2 input(s) but 1 operand(s)")) << e.what();
  }
}

TEST(InlineAsm, PrintedWithItsTextAndDeadOnlyWithoutSideEffects) {
  Kernel k("asm_print");
  Value* a = k.arg(ir::i32());
  k.b.inline_asm(ir::i32(), {a}, "mov.b32 $0, $1;", "=r,r", false);          // unused, pure: removed
  k.b.inline_asm(ir::i32(), {a}, "activemask.b32 $0;", "=r", true);         // unused, side effects: kept
  k.finish();
  std::string text = ir::print_module(k.m);
  EXPECT_TRUE(contains(text, "inline_asm \"mov.b32 $0, $1;\", \"=r,r\"")) << text;
  EXPECT_TRUE(contains(text, "inline_asm sideeffect \"activemask.b32 $0;\", \"=r\"")) << text;
  transforms::remove_dead_code(k.m);
  text = ir::print_module(k.m);
  EXPECT_FALSE(contains(text, "mov.b32")) << text;
  EXPECT_TRUE(contains(text, "activemask.b32")) << text;
}

TEST(InlineAsm, TheEmulatorRefusesItAtTheUsersLine) {
  Kernel k("asm_emulated");
  Value* a = k.arg(ir::i32());
  k.b.set_location("/home/user/my_kernel.py", 42);
  k.b.inline_asm(ir::i32(), {a}, "mov.b32 $0, $1;", "=r,r", true);
  k.finish();
  try {
    emulator::DeviceEmulator emu(*k.f);
    FAIL() << "expected the emulator to refuse inline PTX";
  } catch (const emulator::UnsupportedOnEmulator& e) {
    EXPECT_EQ(e.file, "/home/user/my_kernel.py");
    EXPECT_EQ(e.line, 42);
    EXPECT_TRUE(contains(e.what(), "inline PTX")) << e.what();
  }
}

TEST(GridDepControl, LowersToGriddepcontrolOnSm90) {
  Kernel k("pdl");
  k.b.griddepcontrol(ir::GridDepControlKind::Wait);
  k.b.griddepcontrol(ir::GridDepControlKind::LaunchDependents);
  auto t = k.lower();
  size_t wait = t.text.find("griddepcontrol.wait;"), dep = t.text.find("griddepcontrol.launch_dependents;");
  ASSERT_NE(wait, std::string::npos) << t.text;
  ASSERT_NE(dep, std::string::npos) << t.text;
  EXPECT_LT(wait, dep);  // in program order
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  for (auto& [arch, ptx] : compile_for(t, {"sm_90a"})) {
    EXPECT_TRUE(contains(ptx, "griddepcontrol.wait")) << arch;
    EXPECT_TRUE(contains(ptx, "griddepcontrol.launch_dependents")) << arch;
  }
}

TEST(GridDepControl, VerifierRejectsHostUseAndTheEmulatorAcceptsIt) {
  {
    ir::Module m;
    ir::Function* f = m.add_function("host", ir::FunctionKind::Host);
    ir::Builder b(f->body.get());
    b.griddepcontrol(ir::GridDepControlKind::Wait);
    b.ret({});
    EXPECT_THROW(ir::verify_or_throw(m), std::exception);
  }
  Kernel k("pdl_emulated");
  k.b.griddepcontrol(ir::GridDepControlKind::Wait);
  k.finish();
  EXPECT_NO_THROW(emulator::DeviceEmulator emu(*k.f));
}

TEST(LaunchAttributes, PrintAndParseRoundTrip) {
  ir::Module m;
  ir::Function* kern = m.add_function("k", ir::FunctionKind::Kernel);
  kern->body->add_arg(ir::i32());
  ir::Builder kb(kern->body.get());
  kb.ret({});
  ir::Function* host = m.add_function("h", ir::FunctionKind::Host);
  Value* ev1 = host->body->add_arg(ir::i64());
  Value* ev2 = host->body->add_arg(ir::i64());
  ir::Builder b(host->body.get());
  Value* one = b.const_int(ir::i32(), 1);
  Value* zero64 = b.const_int(ir::i64(), 0);
  b.launch("k", {one, one, one}, {one, one, one}, b.const_int(ir::i32(), 0), zero64, {}, {one},
           ir::kLaunchCooperative | ir::kLaunchPdl | ir::kLaunchCompletionEvent | ir::kLaunchProgrammaticEvent,
           {ev1, ev2}, {3, 4, 1});
  b.ret({});
  ir::verify_or_throw(m);
  std::string text = ir::print_module(m);
  EXPECT_TRUE(contains(text, " cooperative pdl completion_event(")) << text;
  EXPECT_TRUE(contains(text, ", 3) programmatic_event(")) << text;
  EXPECT_TRUE(contains(text, ", 4, 1) args(")) << text;
  std::unique_ptr<ir::Module> back = ir::parse_module(text);
  EXPECT_EQ(ir::print_module(*back), text);
  const ir::Op* launch = nullptr;
  for (auto& op : back->find("h")->body->ops)
    if (op->code == ir::OpCode::Launch) launch = op.get();
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(ir::launch_first_arg(*launch), 13u);
  EXPECT_EQ(launch->ints, (std::vector<int64_t>{3, 4, 1}));
}

TEST(LaunchAttributes, EventOperandsMustMatchTheFlags) {
  ir::Module m;
  ir::Function* host = m.add_function("h", ir::FunctionKind::Host);
  ir::Builder b(host->body.get());
  Value* one = b.const_int(ir::i32(), 1);
  Value* zero64 = b.const_int(ir::i64(), 0);
  EXPECT_THROW(b.launch("k", {one, one, one}, {one, one, one}, one, zero64, {}, {}, ir::kLaunchCompletionEvent, {}),
               ir::TypeError);
  EXPECT_THROW(b.launch("k", {one, one, one}, {one, one, one}, one, zero64, {}, {}, ir::kLaunchCompletionEvent, {one}),
               ir::TypeError);  // an event handle is i64
}

TEST(CooperativeGrid, CoResidencyFollowsThreadsAndSharedMemory) {
  runtime::OccupancyModel m;
  m.sms = 4;
  m.max_threads_per_sm = 2048;
  m.max_blocks_per_sm = 32;
  m.smem_per_sm = 100 * 1024;
  m.reserved_smem_per_block = 1024;
  EXPECT_EQ(runtime::max_coresident_blocks(m, 1024, 0), 4 * 2);    // 2 blocks of 1024 threads per SM
  EXPECT_EQ(runtime::max_coresident_blocks(m, 32, 0), 4 * 32);     // the block-count limit
  EXPECT_EQ(runtime::max_coresident_blocks(m, 100, 0), 4 * 16);    // 100 threads take 4 warps: 2048/128
  EXPECT_EQ(runtime::max_coresident_blocks(m, 128, 49 * 1024), 4 * 2);  // 100K / 50K of shared memory
  EXPECT_EQ(runtime::max_coresident_blocks(m, 128, 200 * 1024), 0);
  unsigned ok_grid[3] = {2, 2, 2}, big_grid[3] = {9, 1, 1}, block[3] = {32, 32, 1};
  EXPECT_NO_THROW(runtime::check_cooperative_grid(m, ok_grid, block, 0));
  try {
    runtime::check_cooperative_grid(m, big_grid, block, 0);
    FAIL() << "expected CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE";
  } catch (const runtime::CudaError& e) {
    EXPECT_EQ(e.code(), 720);
    EXPECT_TRUE(contains(e.what(), "at most 8")) << e.what();
  }
}

}  // namespace
