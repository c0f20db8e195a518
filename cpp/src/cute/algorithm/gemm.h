// cute.gemm: D = A * B + C over register fragments, dispatched on the fragments' ranks as in
// CuTe C++'s algorithm/gemm.hpp: (V)x(V)->(V), (M)x(N)->(M,N), (M,K)x(N,K)->(M,N),
// (V,M)x(V,N)->(V,M,N) and (V,M,K)x(V,N,K)->(V,M,N), with K the outer loop.
#pragma once
#include "cute/atom/mma_atom.h"

namespace opencute::cute {

// Errors (DSLUserCodeError at the user's line): ranks outside the dispatch table, modes whose
// sizes disagree (A's M vs C's M ...), element types that differ from the atom's.
void gemm(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c);

}  // namespace opencute::cute
