// The non-tensor bulk copy of SM90 (CuTe C++'s SM90_BULK_COPY_G2S in copy_traits_sm90.hpp; the
// CuTe DSL's cpasync.CopyBulkG2SOp): one thread copies a contiguous run of global memory into
// shared memory with cp.async.bulk, and the bytes complete a transaction count on an mbarrier.
// Unlike TMA no tensor map is involved: the whole source tensor is one instruction.
#pragma once

#include "cute/atom/copy_atom.h"

namespace opencute::cute {

// cpasync.CopyBulkG2SOp's atom over elements of `value_type`. Errors: a target older than sm_90.
CopyAtom make_bulk_copy_g2s_atom(ir::Type value_type);

// cute.copy(atom, src, dst, mbar_ptr=): src (global, or generic pointing at global memory) and dst
// (shared) of the same size, each
// contiguous, copied as one cp.async.bulk of size * element bytes (a multiple of 16) that
// completes on the mbarrier. Errors (DSLUserCodeError): other memories or types, non-contiguous
// or dynamic tensors, a size that is not a multiple of 16 bytes, no mbar_ptr, a predicate.
void copy_bulk_g2s(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const CopyOperands& operands);

}  // namespace opencute::cute
