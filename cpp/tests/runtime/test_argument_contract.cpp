// The argument contract: a tensor's findings against what it was compiled for, the compact
// DLTensor check agreeing with the full one, and one rule worded as each call path words it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ir/types.h"
#include "runtime/argument_contract.h"

using namespace opencute;
using runtime::ContractFindings;
using runtime::KernelMemory;

namespace {

// data: f32* align 16 (slot 0), shape 0 dynamic div 4 (slot 1, Int32); the tensor is (?{div=4},8):(8,1).
runtime::ArgumentPlan plan_of_one_tensor() {
  runtime::ArgumentPlan p;
  p.slots = {{0, runtime::SlotKind::TensorData, 0}, {0, runtime::SlotKind::TensorShape, 0}};
  runtime::TensorContract c;
  c.source = 0;
  c.shape = {-1, 8};
  c.stride = {8, 1};
  c.shape_div = {4, 1};
  c.stride_div = {1, 1};
  c.description = "(?{div=4},8):(8,1)";
  c.name = "a";
  p.checks.push_back(c);
  p.num_sources = 1;
  return p;
}

std::vector<ir::Type> slot_types() { return {ir::pointer_type(ir::f32(), ir::AddrSpace::Gmem, 16), ir::i32()}; }

struct Tensor {  // a DLTensor over a float buffer aligned to 64 bytes
  alignas(64) float data[256];
  std::vector<int64_t> shape, stride;
  runtime::DLTensorView view(size_t offset_elements = 0) {
    return runtime::DLTensorView{data + offset_elements, 1, 0, int32_t(shape.size()), 2, 32, 1, shape.data(),
                                 stride.data(), 0};
  }
};

}  // namespace

TEST(ArgumentContract, ResolvesWhatTheHostProgramAssumes) {
  runtime::ArgumentPlan p = plan_of_one_tensor();
  runtime::resolve_argument_plan(p, slot_types());
  EXPECT_EQ(p.checks[0].element, ir::f32());
  EXPECT_EQ(p.checks[0].align, 16);
  EXPECT_EQ(p.checks[0].dl_code, 2);  // kDLFloat
  EXPECT_EQ(p.checks[0].dl_bits, 32);
  EXPECT_EQ(runtime::check_of_slots(p), (std::vector<int>{0, -1}));
}

TEST(ArgumentContract, FindingsNameEachBrokenRule) {
  runtime::ArgumentPlan p = plan_of_one_tensor();
  runtime::resolve_argument_plan(p, slot_types());
  Tensor t{{}, {12, 8}, {8, 1}};
  runtime::DLTensorView good = t.view();
  runtime::DLTensorContractView v{good};
  EXPECT_TRUE(runtime::check_tensor(p.checks[0], v, KernelMemory::Host, nullptr).ok());

  t.shape = {10, 8};  // 10 is not divisible by 4; one float off the 16-byte alignment
  runtime::DLTensorView bad = t.view(1);
  runtime::DLTensorContractView w{bad};
  ContractFindings f = runtime::check_tensor(p.checks[0], w, KernelMemory::Device, nullptr);
  EXPECT_TRUE(f.has(ContractFindings::kShapeDivisibility));
  EXPECT_EQ(f.at[ContractFindings::kShapeDivisibility], 0);
  EXPECT_EQ(f.got[ContractFindings::kShapeDivisibility], 10);
  EXPECT_TRUE(f.has(ContractFindings::kAlignment));
  EXPECT_TRUE(f.has(ContractFindings::kMemory));  // host memory for GPU kernels
  EXPECT_FALSE(f.has(ContractFindings::kDtype));
  EXPECT_FALSE(f.has(ContractFindings::kShape));
}

TEST(ArgumentContract, CompactCheckAgreesWithTheFullCheck) {
  runtime::ArgumentPlan p = plan_of_one_tensor();
  runtime::resolve_argument_plan(p, slot_types());
  runtime::TensorReads reads = runtime::build_tensor_reads(p, slot_types());
  ASSERT_EQ(reads.read_of_slot, (std::vector<int>{0, -1}));
  const runtime::TensorRead& r = reads.reads[0];
  ir::Scalar vals[2];
  for (int64_t rows : {12, 10, 16}) {
    Tensor t{{}, {rows, 8}, {8, 1}};
    for (size_t offset : {0, 1, 4}) {
      runtime::DLTensorView d = t.view(offset);
      runtime::DLTensorContractView v{d};
      const bool full = runtime::check_tensor(p.checks[0], v, KernelMemory::Host, vals).ok();
      EXPECT_EQ(runtime::read_dltensor(reads, r, d, KernelMemory::Host, vals), full) << rows << " " << offset;
      if (full) {
        EXPECT_EQ(vals[1].i, rows);
      }
    }
  }
}

TEST(ArgumentContract, OneRuleInEachCallPathsWords) {
  runtime::ArgumentPlan p = plan_of_one_tensor();
  runtime::resolve_argument_plan(p, slot_types());
  Tensor t{{}, {10, 8}, {8, 1}};
  runtime::DLTensorView d = t.view();
  runtime::DLTensorContractView v{d};
  const ContractFindings f = runtime::check_tensor(p.checks[0], v, KernelMemory::Host, nullptr);
  runtime::MessageInputs in;
  in.layout = "(10,8):(8,1)";
  EXPECT_EQ(runtime::argument_error(runtime::MessageStyle::CompiledFunction, p.checks[0], f, in).message,
            "argument #0 has layout (10,8):(8,1) but the function was compiled for (?{div=4},8):(8,1): shape mode 0 "
            "(10) is not divisible by 4");
  in.label = "a";
  in.at = " on argument #0 when calling: `f(a: Tensor([n0, 8], float32))`, ";
  runtime::ArgumentError tvm = runtime::argument_error(runtime::MessageStyle::TvmFfi, p.checks[0], f, in);
  EXPECT_STREQ(tvm.kind, "ValueError");
  EXPECT_EQ(tvm.message,
            "Invalid a.shape[0] on argument #0 when calling: `f(a: Tensor([n0, 8], float32))`, expected to be "
            "divisible by 4");
  in.label = "argument #0 (a)";
  EXPECT_EQ(runtime::argument_error(runtime::MessageStyle::ExportedC, p.checks[0], f, in).message,
            "argument #0 (a): shape mode 0 (10) is not divisible by 4 as (?{div=4},8):(8,1) requires");
  in.label = "argument #0 (a) when calling `f`";
  EXPECT_EQ(runtime::argument_error(runtime::MessageStyle::ExportedTvmFfi, p.checks[0], f, in).message,
            "Invalid shape on argument #0 (a) when calling `f`: mode 0 (10) is not divisible by 4");
  in.function = "f";
  in.label = "input 0";
  EXPECT_EQ(runtime::argument_error(runtime::MessageStyle::Xla, p.checks[0], f, in).message,
            "f: input 0 has extent 10 in kernel mode 0, which the kernel assumes divisible by 4");
}

TEST(ArgumentContract, AStyleThatDoesNotCheckARuleRaisesNothing) {
  runtime::ArgumentPlan p = plan_of_one_tensor();
  p.checks[0].int32_strides = true;
  p.checks[0].stride = {-1, 1};
  runtime::resolve_argument_plan(p, slot_types());
  Tensor t{{}, {4, 8}, {int64_t(1) << 31, 1}};  // a layout Int32 strides cannot address
  runtime::DLTensorView d = t.view();
  runtime::DLTensorContractView v{d};
  const ContractFindings f = runtime::check_tensor(p.checks[0], v, KernelMemory::Any, nullptr);
  ASSERT_TRUE(f.has(ContractFindings::kInt32Layout));
  runtime::MessageInputs in;
  in.layout = "(4,8):(2147483648,1)";
  EXPECT_STREQ(runtime::argument_error(runtime::MessageStyle::CompiledFunction, p.checks[0], f, in).code,
               "ARG_LAYOUT_MISMATCH");
  EXPECT_EQ(runtime::argument_error(runtime::MessageStyle::Xla, p.checks[0], f, in).code, nullptr);
}
