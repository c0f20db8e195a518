// The generic copy atom (CuTe's Copy_Atom, copy_atom.hpp): one copy instruction as a table of
// its thread ids, its (thread, bit) layouts and its value type. The architecture families fill it
// in: the universal (SIMT load/store) copy here, cp.async / ldmatrix / stmatrix in copy_sm80, the
// TMA bulk tensor copies in copy_sm90. cute.copy maps an atom's op to its family's
// implementation in one place (algorithm/copy.cpp).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cute/tensor.h"
#include "dsl/num.h"

namespace opencute::cute {

// The instruction an atom issues.
enum class CopyOp : uint8_t { Universal, CpAsync, LdMatrix, StMatrix, Tma, BulkG2S, TmemLoad, TmemStore, SmemToTmem };

struct TmaAtom;  // the TMA table (copy_sm90.h)

// One copy instruction: `num_bits` moved per thread per call, of `value_type` elements.
// As CuTe's Copy_Traits, an atom is its thread ids and three (thread, bit) -> bit layouts
// (source, destination, and the reference both are expressed against); the universal copy
// and cp.async have one thread and identity layouts, ldmatrix / stmatrix a warp.
struct CopyAtom {
  CopyOp op = CopyOp::Universal;
  ir::Type value_type = nullptr;
  int num_bits = 0;  // source bits per thread per call
  // cp_async: 0 cache at all levels (.ca), 1 cache global (.cg). ldmatrix / stmatrix: matrices
  // and .trans.
  int cache_mode = 0;
  int num_matrices = 0;
  bool transpose = false;
  bool wide_matrix = false;  // ldmatrix .m16n16 .b8 (sm_100): 16x16-byte matrices, not 8x8 b16
  // ldmatrix .m8n16 .b8x16.b4x16_p64 (4; sm_100a / sm_120a): each row's first 8 bytes hold 16
  // packed 4-bit values (then 8 bytes of padding), each widened to the low bits of a byte.
  int unpack_bits = 0;
  std::string op_name;  // the operation as the user named it, for messages and printing
  layout::Layout thr_id_layout = layout::Layout(1, 0);
  layout::Layout src_bits, dst_bits, ref_bits;
  // TMA: the tensor map's table, the host program's descriptor value and the stride ratios of
  // a merged trailing dimension (make_tma_copy_atom, copy_sm90.h).
  std::shared_ptr<const TmaAtom> tma;
  // tcgen05.ld / st (copy_sm100.h): the shape (ir::Tcgen05Shape), repetitions, 16-bit packing.
  // tcgen05.cp (SmemToTmem): tmem_shape is the ir::Tcgen05CpShape, cp_cta_group the CTA group.
  int tmem_shape = 0, tmem_repetitions = 1;
  bool tmem_pack = false;
  int cp_cta_group = 1;
  std::optional<dsl::Num> tma_descriptor;
  std::vector<dsl::Num> tma_ratios;

  int value_bits() const;
  int num_values() const { return num_bits / value_bits(); }
  layout::Layout thr_id() const { return thr_id_layout; }
  // (thread, value) -> value of the atom, in elements of value_type.
  layout::Layout layout_src_tv() const;
  layout::Layout layout_dst_tv() const;
  layout::Layout layout_ref_tv() const;
  layout::Layout layout_tv() const { return layout_src_tv(); }
  int num_src_values() const;  // per thread per call
  int num_dst_values() const;
  int num_threads() const;     // threads that cooperate in one call
  int num_ref_values() const;
};

// What one cute.copy call gives the atom beside the tensors (CuTe's atom.with(...)): the
// predicate (one Boolean per atom call), and for TMA the mbarrier the load completes on, the
// multicast mask and a descriptor in memory to use instead of the atom's (tma_desc_ptr=).
// `file`:`line`: the user's call, recorded on the ops a TMA copy adds (the emulator names it
// when a load never completes).
struct CopyOperands {
  std::optional<Tensor> pred;
  std::optional<dsl::Num> mbar, mcast_mask, descriptor;
  std::string file;
  int line = 0;
};

// The universal copy. num_bits 0 means one element per copy. Errors: num_bits not a multiple of
// the element's.
CopyAtom make_copy_atom(const std::string& op, ir::Type value_type, int num_bits);

std::string to_string(const CopyAtom& a);

}  // namespace opencute::cute
