// The generic MMA atom (CuTe C++'s MMA_Atom of mma_atom.hpp, with the universal FMA of
// mma_traits.hpp): an atom is a table of its thread layout, its A/B/C thread-value layouts, its
// value types and its MNK shape, plus the IR op one call emits. The families fill it in: mma.sync
// (mma_sm80), wgmma (mma_sm90); mma_atom_call and op_string map an atom's kind to its family.
//
// TV layouts map (thread, value) to the column-major index of the atom's M x K (A), N x K (B)
// and M x N (C) tile, exactly as CuTe writes them; value v of a thread is element v of the
// operand list of the PTX instruction (two 16-bit or four 8-bit values per 32-bit register,
// lowest bits first).
#pragma once
#include <string>
#include <vector>

#include "cute/tensor.h"

namespace opencute::cute {

enum class MmaKind : uint8_t { Universal, F16BF16, FP8, Warpgroup, Tcgen05, BlockScaledSync };

// Warpgroup (SM90 wgmma) atoms only, see mma_sm90.h: where operand A comes from and which mode of
// A / B is contiguous in shared memory.
// Tmem: operand A of a tcgen05 MMA from tensor memory (mma_sm100.h).
enum class OperandSource : uint8_t { Smem, Rmem, Tmem };
enum class OperandMajor : uint8_t { K, MN };

struct MmaAtom {
  MmaKind kind = MmaKind::Universal;
  ir::Type a_type = nullptr, b_type = nullptr, c_type = nullptr;  // D has C's type
  int m = 1, n = 1, k = 1;
  layout::Layout thr_id;
  layout::Layout layout_a_tv, layout_b_tv, layout_c_tv;
  // Warpgroup atoms: A's source, the operands' major modes, and the ACCUMULATE field
  // (tiled_mma.set(warpgroup.Field.ACCUMULATE, b)): D = A*B + D when true, D = A*B when false.
  // Outside kernels it is a static bool; inside a kernel it lives in a per-thread cell of the
  // kernel (`accumulate_cell`, see mma_sm90.h) so that a set inside a dynamic loop reaches the
  // following iterations, as on NVIDIA's DSL where the field is runtime state of the atom.
  OperandSource a_source = OperandSource::Smem;
  OperandMajor a_major = OperandMajor::K, b_major = OperandMajor::K;
  dsl::Num accumulate = dsl::Num::of_int(ir::bool_type(), 0);
  ir::Value* accumulate_cell = nullptr;
  // tcgen05 atoms (mma_sm100.h): the PTX .kind (ir::Tcgen05Kind) and the CTA group (1 or 2; the
  // atom's "threads" are the CTAs of the group).
  int tcgen05_kind = 0;
  int cta_group = 1;
  // Block-scaled tcgen05 atoms: the scale factors' type (Float8E8M0FNU or Float8E4M3FN), how many
  // K elements one factor scales, and the SFA / SFB fields (tiled_mma.set(Field.SFA, tmem_ptr)):
  // per-thread cells of the kernel holding the factors' tensor-memory addresses, as ACCUMULATE's.
  ir::Type sf_type = nullptr;
  int sf_vec_size = 0;
  ir::Value* sf_cells[2] = {nullptr, nullptr};
  // Warp-level block-scaled atoms (BlockScaledSync, mma_sm120.h; tcgen05_kind holds their .kind):
  // the scale factors' (thread, value) -> (M, K) / (N, K) layouts, CuTe's SFALayout / SFBLayout.
  layout::Layout layout_sfa_tv, layout_sfb_tv;
  // ... and the element formats of their A and B values (ir::BlockScaledFormat).
  int a_format = 0, b_format = 0;

  int num_threads() const {
    return kind == MmaKind::Universal ? 1 : kind == MmaKind::Warpgroup ? 128 : kind == MmaKind::Tcgen05 ? cta_group : 32;
  }
  // Shared-memory operands of a warpgroup atom are whole tiles that every thread sees.
  int values_a() const {
    return kind == MmaKind::Warpgroup && a_source == OperandSource::Smem ? m * k : m * k / num_threads();
  }
  int values_b() const { return kind == MmaKind::Warpgroup ? n * k : n * k / num_threads(); }
  bool is_tcgen05() const { return kind == MmaKind::Tcgen05; }
  int values_c() const { return m * n / num_threads(); }
  std::vector<int64_t> shape_mnk() const { return {m, n, k}; }
};

// nvgpu.MmaUniversalOp(abacc_dtype): one thread, 1x1x1, d = a * b + c; f16, f32 or f64.
MmaAtom make_mma_universal(ir::Type abacc);

// One call of the atom on one thread's fragments: a, b, c, d are register tensors holding
// exactly the atom's A, B, C and D values (in value order). Emits one MmaSync op (or an FMA).
// Errors: element types that differ from the atom's, wrong value counts.
void mma_atom_call(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c);
// The same call with the A and B values already read (gemm reads each A and B fragment once for
// all the atoms that use it, instead of once per atom).
void mma_atom_call(const MmaAtom& atom, const Tensor& d, const std::vector<dsl::Num>& a_values,
                   const std::vector<dsl::Num>& b_values, const Tensor& c);
// Throws unless `t`, operand `which` ("A", "B", "C") of gemm, is a fragment of `count` values of
// type `want` (in registers when `registers_only`; else any memory tensor).
void check_mma_fragment(const Tensor& t, ir::Type want, int count, const char* which, bool registers_only);
// The values of an A ("A"), B or C operand fragment, checked against what the atom takes.
std::vector<dsl::Num> mma_operand_values(const Tensor& t, ir::Type want, int count, const char* which);

// "warp-level F16/BF16 MMA Operation" ... (the Op's text) and the MMA Atom block.
std::string op_string(const MmaAtom& a);
std::string to_string(const MmaAtom& a);

// How the MMA atoms name a value type in messages ("Float16"; "None" for none) and a shape
// ("(16, 8, 8)").
std::string mma_type_name(ir::Type t);
std::string mma_shape_text(const std::vector<int64_t>& shape);

}  // namespace opencute::cute
