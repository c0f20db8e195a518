// How op families plug into the NVVM lowering: each family's file fills a LoweringTable with one
// handler per OpCode it lowers (register_<family>_lowerings); lower_to_nvvm.cpp builds the table
// from all of them once, and KernelLowering::lower_block calls the handler of each op.
#pragma once
#include <array>

#include "ir/ir.h"
#include "target/nvvm/kernel_lowering.h"
#include "target/nvvm/nvvm_types.h"

namespace opencute::target {

// Lowers one op of the kernel `k` is lowering (its results through k.define).
using LowerOpFn = void (*)(const ir::Op& op, KernelLowering& k);

class LoweringTable {
 public:
  // Throws std::logic_error when `code` already has a handler: one family owns each op.
  void add(ir::OpCode code, LowerOpFn fn);
  LowerOpFn find(ir::OpCode code) const { return fns_[size_t(code)]; }  // nullptr when none

 private:
  static_assert(sizeof(ir::OpCode) == 1, "the table has one slot per OpCode value");
  std::array<LowerOpFn, 256> fns_{};
};

// Every family's handlers (built on first use).
const LoweringTable& nvvm_lowerings();

// The core families.
// Constants, arithmetic, comparisons, select, fma, math (libdevice), vector lanes: lower_scalar.cpp.
void register_scalar_lowerings(LoweringTable& t);
// Cast and bitcast: lower_conversions.cpp.
void register_conversion_lowerings(LoweringTable& t);
// Loads, stores, pointer arithmetic, allocas, shared memory, atomics: lower_memory.cpp.
void register_memory_lowerings(LoweringTable& t);
// for / if / while: lower_control_flow.cpp.
void register_control_flow_lowerings(LoweringTable& t);
// Thread and block indices, barriers, warp shuffle and vote: lower_thread_ops.cpp.
void register_thread_lowerings(LoweringTable& t);
// printf and assert: lower_diagnostics.cpp.
void register_diagnostic_lowerings(LoweringTable& t);

// The architecture families.
// SM80 copies (cp.async, commit / wait groups, ldmatrix, stmatrix): lower_sm80_copy.cpp.
void register_sm80_copy_lowerings(LoweringTable& t);
// SM80 mma.sync: lower_sm80_mma.cpp.
void register_sm80_mma_lowerings(LoweringTable& t);
// SM120 block-scaled mma.sync (.kind::mxf8f6f4 / mxf4 / mxf4nvf4): lower_sm120_mma.cpp.
void register_sm120_mma_lowerings(LoweringTable& t);
// SM90 warpgroup MMA (wgmma.mma_async, fence, commit / wait groups): lower_sm90_mma.cpp.
void register_sm90_mma_lowerings(LoweringTable& t);
// The MLIR-level surface and launch control: user inline assembly (llvm.inline_asm) and
// griddepcontrol.wait / launch_dependents: lower_launch_control.cpp.
void register_launch_control_lowerings(LoweringTable& t);
// SM90 asynchronous machinery (mbarrier ops, fences, TMA): lower_sm90_async.cpp.
void register_sm90_async_lowerings(LoweringTable& t);
// The Hopper warp / CTA and cluster ops (elect, setmaxnreg, cluster registers and barrier, mapa,
// ...): lower_sm90_warp.cpp.
void register_sm90_warp_lowerings(LoweringTable& t);
// TMA descriptors in device memory (copy, tensormap.replace, cp_fenceproxy): lower_sm90_tensormap.cpp.
void register_sm90_tensormap_lowerings(LoweringTable& t);
// Blackwell cluster launch control (clusterlaunchcontrol.try_cancel / query_cancel):
// lower_cluster_launch_control.cpp.
void register_cluster_launch_control_lowerings(LoweringTable& t);
// Blackwell tensor memory and tcgen05 (alloc / dealloc, mma, commit, ld / st / cp, waits and
// fences): lower_sm100.cpp.
void register_sm100_lowerings(LoweringTable& t);

}  // namespace opencute::target
