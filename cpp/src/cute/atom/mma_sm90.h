// Warpgroup MMA atoms of SM90 (CuTe C++'s mma_traits_sm90_gmma.hpp and mma_sm90_desc.hpp):
// wgmma.mma_async, issued by the 128 threads of a warpgroup, reads B (and A, unless A comes from
// registers) from shared memory through 64-bit matrix descriptors and accumulates a 64 x N tile
// in registers.
//
// Tables, as CuTe writes them (thread-value layouts map (thread, value) to the column-major index
// of the M x K / N x K / M x N tile):
//   ThrID         128:1
//   A/B from smem ((128),(MN,K)):((0),(1,MN))   every thread sees the whole tile (one descriptor)
//   A from regs   ((4,8,4),(2,2,2)):((128,1,16),(64,8,512))  16-bit; 8-bit: ((4,8,4),(4,2,2)):((256,1,16),(64,8,1024))
//   C             ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))
//
// Shared-memory operands are described by descriptors built from the swizzled smem layout: the
// start address (16-byte units), the leading and stride byte offsets (LBO, SBO, 16-byte units)
// and the swizzle mode, for the canonical layouts of CuTe's make_gmma_desc (T elements per 16
// bytes, W = 1, 2, 4, 8 16-byte chunks per swizzle row for INTERLEAVE, 32B, 64B, 128B):
//   K-major   INTERLEAVE ((8,m),(T,2)):((T,SBO),(1,LBO))     swizzled ((8,m),(T,2)):((W*T,SBO),(1,T))
//   MN-major  INTERLEAVE ((T,m),(8,k)):((1,SBO),(T,LBO))     swizzled ((W*T,m),(8,k)):((1,LBO),(W*T,SBO))
// (in elements; LBO and SBO above in elements are the descriptor fields times T). The swizzle
// acts on the byte address, so operand tensors carry it on the pointer (the CuTe DSL's
// `get_tensor(outer, swizzle=inner)` / `recast_ptr`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cute/atom/tiled_mma.h"

namespace opencute::cute {

// warpgroup.MmaF16BF16Op(ab_dtype, acc_dtype, instruction_shape, a_src, a_major_mode, b_major_mode):
// f16/bf16 inputs, f32 (or f16 for f16 inputs) accumulators, shape (64, N[, 16]) with N a
// multiple of 8 in [8, 256]. Errors (DSLUserCodeError): the constraints; a target other than sm_90a.
MmaAtom make_wgmma_f16bf16(ir::Type ab, ir::Type acc, const std::vector<int64_t>& shape, OperandSource a_src,
                           OperandMajor a_major, OperandMajor b_major);
// warpgroup.MmaF8Op(a_dtype, b_dtype, acc_dtype, instruction_shape, a_src, a_major_mode, b_major_mode):
// e4m3 / e5m2 inputs (each its own), f32 or f16 accumulators, shape (64, N[, 32]), K-major only.
// Int8/Uint8 A and B (each its own), Int32 accumulators, K = 32, K-major operands.
MmaAtom make_wgmma_i8(ir::Type a, ir::Type b, ir::Type acc, const std::vector<int64_t>& shape, OperandSource a_src,
                      OperandMajor a_major, OperandMajor b_major);
MmaAtom make_wgmma_f8(ir::Type a, ir::Type b, ir::Type acc, const std::vector<int64_t>& shape, OperandSource a_src,
                      OperandMajor a_major, OperandMajor b_major);

// warpgroup.SmemLayoutAtomKind and make_smem_layout_atom: the canonical swizzle atoms,
// S<B,4,3> o 0 o (C,8):(1,C) (MN kinds) or (8,C):(C,1) (K kinds), C = 128 << B bits of elements.
enum class SmemLayoutAtomKind : uint8_t { MN_INTER, MN_SW32, MN_SW64, MN_SW128, K_INTER, K_SW32, K_SW64, K_SW128 };
layout::ComposedLayout make_smem_layout_atom(SmemLayoutAtomKind kind, ir::Type element);

// The fields of a wgmma shared-memory descriptor other than the start address.
enum class GmmaLayoutType : uint8_t { Interleave = 0, B128 = 1, B64 = 2, B32 = 3 };
struct GmmaDescriptorFields {
  GmmaLayoutType layout_type = GmmaLayoutType::Interleave;
  uint32_t lbo = 0, sbo = 0;  // 16-byte units
  // The descriptor without its start address: LBO bits [16,30), SBO [32,46), base offset 0
  // [49,52), layout type [62,64).
  uint64_t bits() const;
};
// The descriptor fields of one atom's (MN, K) tile, `tile` in elements of `element_bits`, the
// tensor's byte-address swizzle being S<swizzle_bits,4,3> (0: none). Errors (DSLUserCodeError):
// a tile that is not one of the canonical layouts above (naming the operand), another swizzle.
GmmaDescriptorFields gmma_descriptor_fields(const layout::Layout& tile, int element_bits, int swizzle_bits,
                                            OperandMajor major, const std::string& operand);
// The bit count B of an operand tensor's byte-address swizzle S<B,4,3> (0 when none), the swizzles
// a descriptor-reading MMA (`instruction`: "wgmma", "tcgen05.mma") accepts. Errors
// (INVALID_SMEM_LAYOUT): a swizzle in a composed layout instead of on the pointer, another swizzle.
int descriptor_swizzle_bits(const Tensor& t, const std::string& what, const char* instruction);
// The 64-bit descriptor of the fields for the shared-memory byte address `smem_address`.
uint64_t encode_gmma_descriptor(const GmmaDescriptorFields& f, uint64_t smem_address);
// The start-address field of a shared-memory matrix descriptor (wgmma, tcgen05.mma, tcgen05.cp)
// for the shared-memory pointer `smem_ptr`: its byte-address bits [4, 18) as an i64 whose other
// bits are 0, to be or-ed with the constant fields. Computed in 32 bits (ptrtoint to u32, shift,
// mask, zero-extend): only those bits survive, and a 64-bit shift of the 64-bit shared pointer
// costs the hot loops funnel shifts and carries (USHF.R.U64, UIADD3.X) at every descriptor.
ir::Value* descriptor_start_address(ir::Builder& b, ir::Value* smem_ptr);
// The 64-bit descriptor of `smem_ptr` with the constant fields `fields` (everything but the start
// address). When the pointer is a base pointer moved by a constant, non-negative multiple of 16
// bytes below 256 KiB (the k-blocks of a stage), the base's descriptor plus that offset in
// 16-byte units, as CuTe's descriptor iterator adds to the descriptor's low word: the k-blocks
// then share the base's shift and mask, and each costs one add. The same descriptor on the GPU
// (a shared-window address is below 2^18, so the field never carries); the emulator's host
// addresses may carry into the reserved bits 14 and 15, which no reader decodes, never into LBO.
ir::Value* smem_descriptor(ir::Builder& b, ir::Value* smem_ptr, uint64_t fields);

// make_fragment_A/B of a warpgroup MMA over a partitioned smem tensor (MMA, MMA_M|N, MMA_K, ...):
// the descriptor fragment (see Tensor::desc_tile). Errors: not shared memory, a swizzle in the
// layout instead of on the pointer, another element type, a non-canonical layout.
Tensor make_wgmma_desc_fragment(const TiledMma& mma, MmaOperand which, const Tensor& partitioned);
// Whether make_fragment of `which` gives descriptors for this atom.
bool is_wgmma_desc_operand(const MmaAtom& atom, MmaOperand which);

// cute.gemm over a warpgroup atom: (V)x(V)->(V), (V,M)x(V,N)->(V,M,N), (V,M,K)x(V,N,K)->(V,M,N).
// A and B are descriptor fragments (A may be a register fragment for OperandSource.RMEM), C
// and D register fragments. The first k-block uses the atom's ACCUMULATE field, later ones
// accumulate. Emits one Wgmma op per (m, n, k) atom.
void wgmma_gemm(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c);

// atom.set(Field.ACCUMULATE, v): outside a kernel `v` must be static; inside one it is stored to
// the atom's cell, an i32 local of the kernel allocated (and initialised with the static value)
// at the start of the kernel on first use, so it dominates every later use.
void set_wgmma_accumulate(MmaAtom& atom, const dsl::Num& v);
// The atom's cell in the kernel being traced, made (holding the static value, at the kernel's
// entry) when it has none.
ir::Value* accumulate_cell(MmaAtom& atom, ir::Builder& bld);
// Called by cute.gemm inside a kernel before it reads the field: gives the atom its cell, so that
// a set(Field.ACCUMULATE, ...) later in a dynamic loop (after the loop's first gemm, as NVIDIA's
// Blackwell tutorials write it) reaches that gemm in the following iterations.
void prepare_accumulate_field(MmaAtom& atom);
// The ACCUMULATE value at the current insertion point: a load of the cell inside the kernel that
// owns it, else the static value.
dsl::Num wgmma_accumulate(const MmaAtom& atom);

// warpgroup.fence() / commit_group() / wait_group(n). Errors: outside a kernel, not sm_90a.
void warpgroup_fence();
void warpgroup_commit_group();
void warpgroup_wait_group(int64_t n);

// Raises UNSUPPORTED_ARCH unless the program is compiled for sm_90a (or the target is unknown).
void require_sm90a(const std::string& what);

std::string wgmma_op_string(const MmaAtom& a);

}  // namespace opencute::cute
