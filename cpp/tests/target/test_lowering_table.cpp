// Tests for the table through which the op families plug into the NVVM lowering (op_lowering.h):
// one family owns each op, every family's handlers are in the table, and region terminators,
// which the enclosing region lowers, are not.
#include <gtest/gtest.h>

#include <stdexcept>

#include "target/nvvm/op_lowering.h"

namespace {

using namespace opencute;
using ir::OpCode;

void lower_nothing(const ir::Op&, target::KernelLowering&) {}
void lower_nothing_else(const ir::Op&, target::KernelLowering&) {}

TEST(LoweringTable, AnOpHasOneHandler) {
  target::LoweringTable t;
  EXPECT_EQ(t.find(OpCode::Add), nullptr);
  t.add(OpCode::Add, lower_nothing);
  EXPECT_EQ(t.find(OpCode::Add), &lower_nothing);
  EXPECT_EQ(t.find(OpCode::Sub), nullptr);
  EXPECT_THROW(t.add(OpCode::Add, lower_nothing_else), std::logic_error);
  EXPECT_EQ(t.find(OpCode::Add), &lower_nothing);
}

TEST(LoweringTable, HoldsEveryFamily) {
  const target::LoweringTable& t = target::nvvm_lowerings();
  // One op of each family: scalar, conversions, memory, control flow, thread, diagnostics, SM80
  // copies and MMA, SM90 MMA, async, warp and tensormap ops, launch control.
  for (OpCode c : {OpCode::Constant, OpCode::Cast, OpCode::Load, OpCode::For, OpCode::ThreadIdx, OpCode::Printf,
                   OpCode::CpAsync, OpCode::MmaSync, OpCode::Wgmma, OpCode::MbarrierInit, OpCode::ElectOne,
                   OpCode::TmaDescCopy, OpCode::InlineAsm})
    EXPECT_NE(t.find(c), nullptr) << ir::opcode_name(c);
  for (OpCode c : {OpCode::Return, OpCode::Yield, OpCode::Condition}) EXPECT_EQ(t.find(c), nullptr) << ir::opcode_name(c);
}

}  // namespace
