#include "cute/atom/mma_atom.h"

#include "cute/atom/mma_sm80.h"
#include "cute/atom/mma_sm100.h"
#include "cute/atom/mma_sm120.h"
#include "cute/atom/mma_sm90.h"
#include "cute/pointer.h"
#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using L::IntTuple;
using L::Layout;

namespace {

[[noreturn]] void invalid(const std::string& msg) { throw dsl::UserError("INVALID_MMA_OP", msg); }

}  // namespace

std::string mma_type_name(ir::Type t) { return t ? dsl::dtype_name(t) : "None"; }

std::string mma_shape_text(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

MmaAtom make_mma_universal(ir::Type t) {
  if (!t->is_f16() && !t->is_f32() && !t->is_f64())
    invalid("MmaUniversalOp: abacc_dtype must be Float16, Float32 or Float64, got " + mma_type_name(t));
  MmaAtom a;
  a.kind = MmaKind::Universal;
  a.a_type = a.b_type = a.c_type = t;
  a.thr_id = Layout(1, 0);
  a.layout_a_tv = a.layout_b_tv = a.layout_c_tv = Layout(IntTuple{1, 1}, IntTuple{0, 0});
  return a;
}

void check_mma_fragment(const Tensor& t, ir::Type want, int count, const char* which, bool registers_only) {
  if (!t.is_memory() || (registers_only && t.space() != ir::AddrSpace::Rmem))
    throw dsl::UserError("TYPE_MISMATCH", std::string("gemm: operand ") + which + " must be a register fragment, got " +
                                              to_string(t));
  if (t.element() != want)
    throw dsl::UserError("TYPE_MISMATCH", std::string("gemm: operand ") + which + " holds " + mma_type_name(t.element()) +
                                              " but the MMA atom takes " + mma_type_name(want));
  L::Int n = L::size(t.layout);
  if (!n.is_static() || n.value() != count)
    throw dsl::UserError("SHAPE_MISMATCH", std::string("gemm: operand ") + which + " " + to_string(t) + " has " +
                                               (n.is_static() ? std::to_string(n.value()) : "a dynamic number of") +
                                               " values; the MMA atom takes " + std::to_string(count));
}

std::vector<dsl::Num> mma_operand_values(const Tensor& t, ir::Type want, int count, const char* which) {
  check_mma_fragment(t, want, count, which, /*registers_only=*/false);
  // 16-bit values go to mma.sync in pairs, one 32-bit register each: a pair stored side by side
  // is read as one <2 x T> (LLVM then keeps the fragment as 32-bit registers across the main
  // loop instead of 16-bit pieces that ptxas re-packs with PRMTs before every mma).
  const bool pairs = want->width == 16 && t.space() == ir::AddrSpace::Rmem && !t.swizzle;
  std::vector<dsl::Num> out;
  for (int i = 0; i < count;) {
    if (pairs && i + 1 < count) {
      L::Int o0 = t.layout(IntTuple(i)).as_int(), o1 = t.layout(IntTuple(i + 1)).as_int();
      if (o0.is_static() && o1.is_static() && o1.value() == o0.value() + 1) {
        ir::Builder& b = trace_builder("gemm");
        ir::Value* p = offset_pointer(b, t.ptr, o0);
        if (p->type->align >= 4) {
          ir::Value* v = b.load(p, ir::vector_type(want, 2));
          out.push_back(dsl::Num::of_value(b.vec_extract(v, 0)));
          out.push_back(dsl::Num::of_value(b.vec_extract(v, 1)));
          i += 2;
          continue;
        }
      }
    }
    out.push_back(load_element(t, IntTuple(i)));
    ++i;
  }
  return out;
}

void mma_atom_call(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c) {
  mma_atom_call(atom, d, mma_operand_values(a, atom.a_type, atom.values_a(), "A"),
                mma_operand_values(b, atom.b_type, atom.values_b(), "B"), c);
}

void mma_atom_call(const MmaAtom& atom, const Tensor& d, const std::vector<dsl::Num>& av,
                   const std::vector<dsl::Num>& bv, const Tensor& c) {
  std::vector<dsl::Num> cv = mma_operand_values(c, atom.c_type, atom.values_c(), "C");
  if (!d.is_memory() || d.element() != atom.c_type)
    throw dsl::UserError("TYPE_MISMATCH", "gemm: operand D must be a register fragment of " + mma_type_name(atom.c_type) +
                                              ", got " + to_string(d));
  std::vector<ir::Value*> results;
  switch (atom.kind) {
    case MmaKind::Universal: {
      ir::Builder& bld = trace_builder("gemm");
      results.push_back(bld.fma(dsl::materialize(av[0]), dsl::materialize(bv[0]), dsl::materialize(cv[0])));
      break;
    }
    case MmaKind::F16BF16:
    case MmaKind::FP8:
    case MmaKind::Warpgroup:  // not reached: gemm() gives warpgroup atoms their descriptor operands
    case MmaKind::Tcgen05:    // nor tcgen05 atoms
      results = mma_sync_call(atom, av, bv, cv);
      break;
    case MmaKind::BlockScaledSync:
      throw dsl::UserError("INVALID_MMA_OP", "gemm: a block-scaled MMA (" + mma_type_name(atom.a_type) +
                                                 ") needs its scale factors: cute.gemm(mma, d, [a, sfa], [b, sfb], c)");
  }
  L::Int nd = L::size(d.layout);
  if (!nd.is_static() || nd.value() != int64_t(results.size()))
    throw dsl::UserError("SHAPE_MISMATCH", "gemm: operand D " + to_string(d) + " does not hold the atom's " +
                                               std::to_string(results.size()) + " accumulator values");
  for (size_t i = 0; i < results.size(); ++i) store_element(d, IntTuple(int64_t(i)), dsl::Num::of_value(results[i]));
}

std::string op_string(const MmaAtom& a) {
  switch (a.kind) {
    case MmaKind::Universal:
      return "universal MMA Operation\n  A/B/Accumulator data type = " + mma_type_name(a.a_type);
    case MmaKind::F16BF16:
    case MmaKind::FP8:
      return mma_sm80_op_string(a);
    case MmaKind::Warpgroup:
      return wgmma_op_string(a);
    case MmaKind::Tcgen05:
      return tcgen05_op_string(a);
    case MmaKind::BlockScaledSync:
      return mma_sm120_op_string(a);
  }
  return "";
}

std::string to_string(const MmaAtom& a) {
  return "MMA Atom\n  ThrID:           " + L::to_string(a.thr_id) + "\n  Shape MNK:       " +
         L::to_string(IntTuple{a.m, a.n, a.k}) + "\n  TV Layout A:     " + L::to_string(a.layout_a_tv) +
         "\n  TV Layout B:     " + L::to_string(a.layout_b_tv) + "\n  TV Layout C:     " + L::to_string(a.layout_c_tv);
}

}  // namespace opencute::cute
