#include "cute/atom/mma_sm120.h"

#include "cute/pointer.h"
#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using L::IntTuple;
using L::Layout;
using ir::BlockScaledFormat;
using ir::Tcgen05Kind;

namespace {

IntTuple T(std::initializer_list<IntTuple> e) { return IntTuple(std::vector<IntTuple>(e)); }

[[noreturn]] void invalid(const std::string& msg) { throw dsl::UserError("INVALID_MMA_OP", msg); }

BlockScaledFormat value_format(ir::Type t) {
  if (t->is_fp4()) return BlockScaledFormat::E2M1;
  return t->is_float_kind(ir::FloatKind::E4M3) ? BlockScaledFormat::E4M3 : BlockScaledFormat::E5M2;
}

// The thread-value layouts of CuTe's mma_traits_sm120.hpp. A and B are those of the m16n8k32
// 8-bit mma.sync (four values to a register) or, for 4-bit values, the m16n8k64 ones (eight to a
// register); C is the m16n8 accumulator of every mma.sync. A row's scale factors sit in the lanes
// of thread-id 0 of each quad pair: row m in lane 4 (m % 8) + m / 8 (and, duplicated, the lane 2
// above), every K value of the row; a column's in lane 4 n (duplicated in the quad).
void set_layouts(MmaAtom& a) {
  const int k = a.k;
  if (k == 64) {
    a.layout_a_tv = Layout(T({T({4, 8}), T({8, 2, 2})}), T({T({128, 1}), T({16, 8, 512})}));
    a.layout_b_tv = Layout(T({T({4, 8}), T({8, 2})}), T({T({64, 1}), T({8, 256})}));
  } else {
    a.layout_a_tv = Layout(T({T({4, 8}), T({4, 2, 2})}), T({T({64, 1}), T({16, 8, 256})}));
    a.layout_b_tv = Layout(T({T({4, 8}), T({4, 2})}), T({T({32, 1}), T({8, 128})}));
  }
  a.layout_c_tv = Layout(T({T({4, 8}), T({2, 2})}), T({T({32, 1}), T({16, 8})}));
  a.layout_sfa_tv = Layout(T({T({2, 2, 8}), k}), T({T({8, 0, 1}), 16}));
  a.layout_sfb_tv = Layout(T({T({4, 8}), k}), T({T({0, 1}), 8}));
}

std::string kind_name(int kind) {
  switch (Tcgen05Kind(kind)) {
    case Tcgen05Kind::MXF4NVF4: return "MXF4NVF4";
    case Tcgen05Kind::MXF4: return "MXF4";
    default: return "MXF8F6F4";
  }
}

// The values of `t` (register fragment of one atom) as 32-bit words, in register order.
std::vector<ir::Value*> words(const Tensor& t, int want_words, const char* which) {
  if (!t.is_memory() || t.space() != ir::AddrSpace::Rmem)
    throw dsl::UserError("TYPE_MISMATCH", std::string("gemm: operand ") + which + " must be a register fragment, got " +
                                              to_string(t));
  L::Int n = L::size(t.layout);
  const int bits = t.element()->is_bool() ? 8 : t.element()->width;
  if (!n.is_static() || n.value() * bits != int64_t(want_words) * 32)
    throw dsl::UserError("SHAPE_MISMATCH", std::string("gemm: operand ") + which + " " + to_string(t) + " holds " +
                                               (n.is_static() ? std::to_string(n.value() * bits) : "a dynamic number of") +
                                               " bits; the MMA atom takes " + std::to_string(want_words * 32));
  Tensor w = recast_tensor(with_layout(t, L::coalesce(t.layout)), ir::int_type(32));
  L::Int nw = L::size(w.layout);
  if (!nw.is_static() || nw.value() != want_words)
    throw dsl::UserError("SHAPE_MISMATCH", std::string("gemm: operand ") + which + " " + to_string(t) +
                                               " is not contiguous in its registers");
  std::vector<ir::Value*> out;
  for (int i = 0; i < want_words; ++i) out.push_back(dsl::materialize(load_element(w, IntTuple(i))));
  return out;
}

// The distinct scale factors of one atom's SFA / SFB fragment packed into a 32-bit register, the
// first K block in the lowest byte.
ir::Value* factors_word(const MmaAtom& atom, const Tensor& t, const char* which) {
  if (!t.is_memory() || t.space() != ir::AddrSpace::Rmem || t.element() != atom.sf_type)
    throw dsl::UserError("TYPE_MISMATCH", std::string("gemm: ") + which + " must be a register fragment of " +
                                              mma_type_name(atom.sf_type) + ", got " + to_string(t));
  const int blocks = atom.k / atom.sf_vec_size;
  Tensor f = with_layout(t, L::filter_zeros(t.layout));
  L::Int n = L::size(f.layout);
  if (!n.is_static() || n.value() != blocks)
    throw dsl::UserError("SHAPE_MISMATCH", std::string("gemm: ") + which + " " + to_string(t) + " holds " +
                                               (n.is_static() ? std::to_string(n.value()) : "a dynamic number of") +
                                               " distinct scale factors; the MMA atom reads " + std::to_string(blocks));
  ir::Builder& b = trace_builder("gemm");
  ir::Type i8 = ir::int_type(8, false), i32 = ir::int_type(32);
  ir::Value* word = nullptr;
  for (int j = 0; j < blocks; ++j) {
    ir::Value* v = b.cast(b.bitcast(dsl::materialize(load_element(f, IntTuple(j))), i8), i32);
    if (j) v = b.binary(ir::OpCode::Shl, v, b.const_int(i32, 8 * j));
    word = j ? b.binary(ir::OpCode::Or, word, v) : v;
  }
  return word;
}

int64_t static_mode(const Tensor& t, int mode, const char* what) {
  L::Int n = L::size(t.layout, {mode});
  if (!n.is_static()) throw dsl::UserError("SHAPE_MISMATCH", std::string("gemm: the modes of ") + what + " must be static");
  return n.value();
}

Tensor pick(const Tensor& t, std::initializer_list<int64_t> idx) {
  std::vector<IntTuple> c{IntTuple::underscore()};
  for (int64_t i : idx) c.push_back(IntTuple(i));
  return slice(t, IntTuple(c));
}

void atom_call(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& sfa, const Tensor& b,
               const Tensor& sfb, const Tensor& c) {
  // A and B as 32-bit registers: the atom's values times their bits, over 32 lanes of 32 bits.
  std::vector<ir::Value*> operands = words(a, atom.m * atom.k * atom.a_type->width / 32 / 32, "A");
  for (ir::Value* v : words(b, atom.n * atom.k * atom.b_type->width / 32 / 32, "B")) operands.push_back(v);
  for (const dsl::Num& v : mma_operand_values(c, atom.c_type, atom.values_c(), "C")) operands.push_back(dsl::materialize(v));
  operands.push_back(factors_word(atom, sfa, "SFA"));
  operands.push_back(factors_word(atom, sfb, "SFB"));
  if (!d.is_memory() || d.element() != atom.c_type || L::size(d.layout).value() != atom.values_c())
    throw dsl::UserError("TYPE_MISMATCH", "gemm: operand D must be a register fragment of " +
                                              std::to_string(atom.values_c()) + " " + mma_type_name(atom.c_type) +
                                              " values, got " + to_string(d));
  ir::Builder& bld = trace_builder("gemm");
  ir::Op* op = bld.create(ir::OpCode::MmaSyncBlockScaled, operands,
                          std::vector<ir::Type>(size_t(atom.values_c()), atom.c_type));
  op->int_attr = atom.tcgen05_kind;
  const BlockScaledFormat sf = atom.sf_type->is_e8m0() ? BlockScaledFormat::UE8M0 : BlockScaledFormat::UE4M3;
  op->ints = {atom.m, atom.n, atom.k, atom.k / atom.sf_vec_size, atom.a_format, atom.b_format, int64_t(sf)};
  for (int i = 0; i < atom.values_c(); ++i) store_element(d, IntTuple(int64_t(i)), dsl::Num::of_value(op->result(i)));
}

}  // namespace

MmaAtom make_mma_block_scaled_sync(int kind, ir::Type a_t, ir::Type b_t, ir::Type acc, ir::Type sf, const char* name) {
  const std::string op = name;
  const auto k = Tcgen05Kind(kind);
  const bool fp4_kind = k == Tcgen05Kind::MXF4 || k == Tcgen05Kind::MXF4NVF4;
  if (fp4_kind) {
    if (!a_t->is_fp4()) invalid(op + ": ab_dtype must be Float4E2M1FN, got " + mma_type_name(a_t));
  } else {
    for (ir::Type t : {a_t, b_t})
      if (!t->is_fp8() && !t->is_fp4())
        invalid(op + ": a_dtype and b_dtype must be Float8E4M3FN, Float8E5M2 or Float4E2M1FN, got " + mma_type_name(t));
  }
  if (!acc->is_f32()) invalid(op + ": acc_dtype must be Float32, got " + mma_type_name(acc));
  const bool e8m0 = sf->is_e8m0(), e4m3 = sf->is_float_kind(ir::FloatKind::E4M3);
  if (k == Tcgen05Kind::MXF4NVF4 ? !(e8m0 || e4m3) : !e8m0)
    invalid(op + ": sf_dtype must be " + (k == Tcgen05Kind::MXF4NVF4 ? "Float8E4M3FN or " : "") +
            "Float8E8M0FNU, got " + mma_type_name(sf));
  MmaAtom a;
  a.kind = MmaKind::BlockScaledSync;
  a.tcgen05_kind = kind;
  a.a_format = int(value_format(a_t));
  a.b_format = int(value_format(b_t));
  // mxf8f6f4 reads every value from a byte of its own (CuTe's ValTypeA = uint8_t): an fp4
  // operand's fragment holds bytes.
  a.a_type = fp4_kind || !a_t->is_fp4() ? a_t : ir::int_type(8, false);
  a.b_type = fp4_kind || !b_t->is_fp4() ? b_t : ir::int_type(8, false);
  a.c_type = acc;
  a.sf_type = sf;
  a.m = 16, a.n = 8, a.k = fp4_kind ? 64 : 32;
  a.sf_vec_size = k == Tcgen05Kind::MXF4NVF4 ? 16 : 32;
  a.thr_id = Layout(32, 1);
  set_layouts(a);
  return a;
}

void sm120_scaled_gemm(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& sfa, const Tensor& b,
                       const Tensor& sfb, const Tensor& c) {
  if (atom.kind != MmaKind::BlockScaledSync)
    throw dsl::UserError("INVALID_MMA_OP", "gemm: scale-factor operands ([A, SFA], [B, SFB]) need a block-scaled MMA");
  const int ra = a.layout.rank();
  // (V)x(V)->(V): one atom; its factors may come in any shape (K values, zero strides).
  if (ra == 1 && b.layout.rank() == 1 && d.layout.rank() == 1) return atom_call(atom, d, a, sfa, b, sfb, c);
  if (ra != b.layout.rank() || (ra != 2 && ra != 3) || d.layout.rank() != 3 || sfa.layout.rank() != ra ||
      sfb.layout.rank() != ra)
    throw dsl::UserError("SHAPE_MISMATCH", "gemm: a block-scaled mma.sync takes (V,M)x(V,N)->(V,M,N) or "
                                           "(V,M,K)x(V,N,K)->(V,M,N) with SFA / SFB shaped as A / B; got D " +
                                               to_string(d) + ", A " + to_string(a) + ", SFA " + to_string(sfa) +
                                               ", B " + to_string(b) + ", SFB " + to_string(sfb));
  const int64_t M = static_mode(a, 1, "A"), N = static_mode(b, 1, "B"), K = ra == 3 ? static_mode(a, 2, "A") : 1;
  if (static_mode(d, 1, "D") != M || static_mode(d, 2, "D") != N || static_mode(c, 1, "C") != M ||
      static_mode(c, 2, "C") != N || static_mode(sfa, 1, "SFA") != M || static_mode(sfb, 1, "SFB") != N ||
      (ra == 3 && (static_mode(b, 2, "B") != K || static_mode(sfa, 2, "SFA") != K || static_mode(sfb, 2, "SFB") != K)))
    throw dsl::UserError("SHAPE_MISMATCH", "gemm: the (M, N, K) modes of D " + to_string(d) + ", A " + to_string(a) +
                                               ", SFA " + to_string(sfa) + ", B " + to_string(b) + ", SFB " +
                                               to_string(sfb) + " disagree");
  for (int64_t k = 0; k < K; ++k)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        auto at = [&](const Tensor& t, int64_t i) { return ra == 3 ? pick(t, {i, k}) : pick(t, {i}); };
        atom_call(atom, pick(d, {m, n}), at(a, m), at(sfa, m), at(b, n), at(sfb, n), k == 0 ? pick(c, {m, n}) : pick(d, {m, n}));
      }
}

TiledMma scale_factor_mma(const TiledMma& mma) {
  if (mma.atom.kind != MmaKind::BlockScaledSync)
    throw dsl::UserError("INVALID_MMA_OP", "the scale factors' partitioning needs a warp-level block-scaled MMA "
                                           "(MmaMXF4NVF4Op, MmaMXF4Op, MmaMXF8Op, MmaMXF8F6F4Op)");
  TiledMma sf = mma;
  sf.atom.layout_a_tv = mma.atom.layout_sfa_tv;
  sf.atom.layout_b_tv = mma.atom.layout_sfb_tv;
  return sf;
}

Tensor partition_fragment_sf(const TiledMma& mma, MmaOperand which, const Tensor& t, const L::Int& thr_index) {
  Tensor part = partition(scale_factor_mma(mma), which, t, thr_index);
  return make_rmem_tensor(fragment_like_layout(part.layout), mma.atom.sf_type);
}

std::string mma_sm120_op_string(const MmaAtom& a) {
  std::string s = "warp-level " + kind_name(a.tcgen05_kind) + " block-scaled MMA Operation\n";
  const char* names[] = {"Float4E2M1FN", "Float8E4M3FN", "Float8E5M2"};
  if (a.a_format == a.b_format) s += std::string("  A/B data type = ") + names[a.a_format] + "\n";
  else s += std::string("  A data type = ") + names[a.a_format] + "\n  B data type = " + names[a.b_format] + "\n";
  return s + "  Accumulator data type = " + mma_type_name(a.c_type) + "\n  Scale factor data type = " +
         mma_type_name(a.sf_type) + "\n  Scale factor vector size = " + std::to_string(a.sf_vec_size) +
         "\n  Instruction shape MNK = " + mma_shape_text(a.shape_mnk());
}

}  // namespace opencute::cute
