// What an op family's NVVM lowering (lower_sm80_copy.cpp, lower_sm80_mma.cpp, ...) may use of the kernel being
// lowered: emit instructions, read operand values, define results, name LLVM types, fail.
// KernelLowering (lower_to_nvvm.cpp) implements it.
#pragma once
#include <string>

#include "ir/ir.h"

namespace opencute::target {

class OpLowering {
 public:
  virtual ~OpLowering() = default;
  virtual std::string emit_def(const std::string& rhs) = 0;     // "%vN = rhs"; returns %vN
  virtual void emit_line(const std::string& instruction) = 0;   // an instruction without a result
  virtual std::string operand(const ir::Value* v) const = 0;    // the LLVM value of an IR value
  virtual void define(const ir::Op& op, int result, const std::string& value) = 0;
  virtual std::string type_text(ir::Type t) const = 0;          // the LLVM type of an IR type
  [[noreturn]] virtual void error(const ir::Op& op, const std::string& msg) const = 0;
};

// Each op family's lowering, in its own file; false when `op` is not of the family.
// SM80 copies (cp.async, commit / wait groups, ldmatrix, stmatrix): lower_sm80_copy.cpp.
bool lower_sm80_copy(const ir::Op& op, OpLowering& k);
// SM80 mma.sync: lower_sm80_mma.cpp.
bool lower_sm80_mma(const ir::Op& op, OpLowering& k);
// SM90 warpgroup MMA (wgmma.mma_async, fence, commit / wait groups): lower_sm90_mma.cpp.
bool lower_sm90_mma(const ir::Op& op, OpLowering& k);

// The MLIR-level surface and launch control: user inline assembly (llvm.inline_asm) and
// griddepcontrol.wait / launch_dependents. False when `op` is not one.
bool lower_launch_control(const ir::Op& op, OpLowering& k);

// SM90 asynchronous machinery (mbarrier ops, fences, TMA): lower_sm90_async.cpp.
bool lower_sm90_async(const ir::Op& op, OpLowering& k);

// The Hopper warp / CTA and cluster ops (elect, setmaxnreg, cluster registers and barrier, mapa,
// ...): lower_sm90_warp.cpp.
bool lower_sm90_warp(const ir::Op& op, OpLowering& k);

// TMA descriptors in device memory (copy, tensormap.replace, cp_fenceproxy): lower_sm90_tensormap.cpp.
bool lower_sm90_tensormap(const ir::Op& op, OpLowering& k);

}  // namespace opencute::target
