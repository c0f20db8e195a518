#include "cute/algorithm/gemm.h"

#include "cute/atom/mma_sm100.h"
#include "cute/atom/mma_sm90.h"

#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using L::IntTuple;
using L::Layout;

namespace {

[[noreturn]] void incongruent(const std::string& why, const Tensor& d, const Tensor& a, const Tensor& b,
                              const Tensor& c) {
  throw dsl::UserError("SHAPE_MISMATCH", "gemm: " + why + "; got D " + to_string(d) + ", A " + to_string(a) + ", B " +
                                             to_string(b) + ", C " + to_string(c));
}

int64_t mode_size(const Tensor& t, int mode, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c) {
  L::Int n = L::size(t.layout, {mode});
  if (!n.is_static()) incongruent("fragment modes must be static", d, a, b, c);
  return n.value();
}

Tensor with_modes(const Tensor& t, const Layout& l) { return with_layout(t, l); }

// (V,M,N) x ... -> the (V) sub-fragment at (m, n).
Tensor at2(const Tensor& t, int64_t i, int64_t j) {
  return slice(t, IntTuple{IntTuple::underscore(), IntTuple(i), IntTuple(j)});
}
Tensor at1(const Tensor& t, int64_t i) { return slice(t, IntTuple{IntTuple::underscore(), IntTuple(i)}); }

// The local array (or other base pointer) a tensor's pointer was derived from.
const ir::Value* base_pointer(const ir::Value* p) {
  while (p->def && p->def->code == ir::OpCode::PtrAdd) p = p->def->operands[0];
  return p;
}

// Dispatch [4]: (V,M) x (V,N) => (V,M,N).
void gemm_vmn(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c) {
  int64_t M = mode_size(a, 1, d, a, b, c), N = mode_size(b, 1, d, a, b, c);
  if (mode_size(c, 1, d, a, b, c) != M || mode_size(c, 2, d, a, b, c) != N)
    incongruent("C's (M, N) modes must match A's M and B's N", d, a, b, c);
  // Reading all A and B values first is only safe when D's storage is none of theirs: all three
  // must be distinct register arrays (a pointer of unknown origin might alias).
  const ir::Value *dbase = base_pointer(d.ptr), *abase = base_pointer(a.ptr), *bbase = base_pointer(b.ptr);
  auto local_array = [](const ir::Value* p) { return p->def && p->def->code == ir::OpCode::Alloca; };
  if (!local_array(dbase) || !local_array(abase) || !local_array(bbase) || dbase == abase || dbase == bbase) {
    // D may overwrite A or B values a later atom reads: read them atom by atom, in order.
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) mma_atom_call(atom, at2(d, m, n), at1(a, m), at1(b, n), at2(c, m, n));
    return;
  }
  // Each A value feeds N atoms and each B value M: read each once (the NVVM IR of a 4x8 tile of
  // atoms otherwise reads every A register 8 times and every B register 4 times).
  std::vector<std::vector<dsl::Num>> av, bv;
  for (int64_t m = 0; m < M; ++m) av.push_back(mma_operand_values(at1(a, m), atom.a_type, atom.values_a(), "A"));
  for (int64_t n = 0; n < N; ++n) bv.push_back(mma_operand_values(at1(b, n), atom.b_type, atom.values_b(), "B"));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) mma_atom_call(atom, at2(d, m, n), av[size_t(m)], bv[size_t(n)], at2(c, m, n));
}

// Dispatch [5]: (V,M,K) x (V,N,K) => (V,M,N), K outermost. The first k-block adds C, the
// following ones accumulate into D (CuTe passes C again, which is D when they alias).
void gemm_vmnk(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c) {
  int64_t K = mode_size(a, 2, d, a, b, c);
  if (mode_size(b, 2, d, a, b, c) != K) incongruent("A's and B's K modes differ", d, a, b, c);
  IntTuple us = IntTuple::underscore();
  for (int64_t k = 0; k < K; ++k) {
    Tensor ak = slice(a, IntTuple{us, us, IntTuple(k)}), bk = slice(b, IntTuple{us, us, IntTuple(k)});
    gemm_vmn(atom, d, ak, bk, k == 0 ? c : d);
  }
}

Tensor prepend1(const Tensor& t) { return with_modes(t, L::prepend(t.layout, Layout(1, 0))); }
Tensor append1(const Tensor& t) { return with_modes(t, L::append(t.layout, Layout(1, 0))); }

}  // namespace

void gemm(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c) {
  if (atom.kind == MmaKind::Warpgroup) return wgmma_gemm(atom, d, a, b, c);  // descriptor operands
  if (atom.kind == MmaKind::Tcgen05) return tcgen05_gemm(atom, d, a, b, c);  // descriptors, tensor memory
  if (atom.kind == MmaKind::BlockScaledSync)
    throw dsl::UserError("INVALID_MMA_OP", "gemm: a block-scaled MMA (" + mma_type_name(atom.a_type) +
                                               ") needs its scale factors: cute.gemm(mma, d, [a, sfa], [b, sfb], c)");
  for (const Tensor* t : {&d, &a, &b, &c})
    if (!t->is_memory() || t->space() != ir::AddrSpace::Rmem)
      throw dsl::UserError("TYPE_MISMATCH", "gemm: operands must be register fragments (make_fragment_A/B/C or "
                                            "make_rmem_tensor), got " + to_string(*t));
  int rd = d.layout.rank(), ra = a.layout.rank(), rb = b.layout.rank(), rc = c.layout.rank();
  if (ra != rb) incongruent("A and B must have the same rank", d, a, b, c);
  if (rc != rd) incongruent("C and D must have the same rank", d, a, b, c);
  for (int i = 0; i < rd; ++i)
    if (mode_size(c, i, d, a, b, c) != mode_size(d, i, d, a, b, c)) incongruent("C and D shapes differ", d, a, b, c);
  if (rd == 1 && ra == 1) return mma_atom_call(atom, d, a, b, c);  // (V) x (V) => (V)
  if (rd == 2 && ra == 1) return gemm(atom, d, append1(a), append1(b), c);  // (M) x (N) => (M,N)
  if (rd == 2 && ra == 2)  // (M,K) x (N,K) => (M,N), a one-value atom
    return gemm(atom, prepend1(d), prepend1(a), prepend1(b), prepend1(c));
  if (rd == 3 && ra == 2) return gemm_vmn(atom, d, a, b, c);
  if (rd == 3 && ra == 3) return gemm_vmnk(atom, d, a, b, c);
  incongruent("the fragments' ranks match none of (V)x(V)->(V), (M)x(N)->(M,N), (M,K)x(N,K)->(M,N), "
              "(V,M)x(V,N)->(V,M,N), (V,M,K)x(V,N,K)->(V,M,N)",
              d, a, b, c);
}

}  // namespace opencute::cute
