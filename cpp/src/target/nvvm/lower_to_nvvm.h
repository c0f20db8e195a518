// Lowering of the kernels of an IR module to NVVM IR text for libNVVM.
//
// The output is the LLVM 7 typed-pointer dialect that libNVVM accepts (`float addrspace(1)*`,
// not opaque `ptr`), with the nvptx64 data layout, `!nvvm.annotations` marking kernels (and
// their reqntid when the IR fixes the block size) and `!nvvmir.version` 2.0. Host functions
// are skipped: they run in the host interpreter.
//
// Mapping decisions that the host side and other back ends must agree with:
//   * Address spaces: Generic -> 0, Gmem -> 1, Smem -> 3, Cmem -> 4. Rmem pointers are plain
//     generic pointers (addrspace 0): an Alloca is `alloca [N x T]` in the entry block whose
//     first-element address is used generically, which is how NVPTX expects local memory to be
//     reached (it infers the local space itself).
//   * i1 kernel arguments are `i8` parameters (the host packs one byte) and mean `!= 0`.
//     i1 values in memory occupy one byte (stored as 0/1, loaded as `!= 0`).
//   * bf16 is `i16` in LLVM (LLVM 7 has no bfloat); arithmetic goes through f32 and rounds
//     back to nearest-even with integer ops that match support::float_to_bf16_bits exactly.
//     f16 is LLVM `half`, also computed in f32 and rounded back per op.
//   * Float -> int casts use the saturating cvt.rzi intrinsics (NaN -> 0), int division and
//     shifts are guarded so that every case scalar_semantics defines gives the same value.
//     Float FloorDiv floors the f64 quotient, as scalar_semantics does, for every float type.
//   * Math functions call libdevice (__nv_*); needs_libdevice reports when that happened.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"

namespace opencute::target {

struct NvvmModuleText {
  std::string text;
  bool needs_libdevice = false;
  std::vector<std::string> kernel_names;  // in module order
};

// Throws std::runtime_error naming the op and kernel when an op cannot run in a kernel
// (e.g. launch) or has no lowering. With line_info, every instruction carries the source line
// of its op (DWARF line tables only), which libNVVM's -generate-line-info turns into PTX .loc.
// `arch`: the architecture libNVVM compiles for, where its IR dialect differs (support/arch.h's
// nvvm_byval_names_type); empty: the dialect of sm_90 and older.
NvvmModuleText lower_kernels_to_nvvm(const ir::Module& m, bool line_info = false, const std::string& arch = "");

}  // namespace opencute::target
