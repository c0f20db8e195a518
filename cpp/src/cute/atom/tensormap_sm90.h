// TMA descriptors (tensor maps) in device memory, as CuTe's copy_sm90_desc.hpp handles them: a
// kernel copies the descriptor a TMA atom was made with into a 128-byte slot of global or shared
// memory (copy_tensormap), re-points the copy at another global tensor of the same shape class
// (update_tma_descriptor: tensormap.replace of the address, the extents and the byte strides),
// publishes a shared-memory copy to global memory (cp_fence_tma_desc_release), and names the slot
// in later TMA copies (cute.copy(..., tma_desc_ptr=), or the NVVM-level predicated TMA load).
// The box, the swizzle, the element type and the rank stay those of the atom.
#pragma once
#include <vector>

#include "cute/atom/copy_sm90.h"
#include "cute/tensor.h"
#include "dsl/num.h"

namespace opencute::cute {

// cpasync.copy_tensormap(atom, dst): the atom's descriptor into the 128-byte slot at `dst`
// (a global, generic or shared pointer, 128-byte aligned).
void copy_tensormap(const dsl::Num& descriptor, const dsl::Num& dst);

// cpasync.update_tma_descriptor(atom, tensor, slot): the slot's tensor map now describes `gmem`
// (a global tensor laid out as the atom's tensor was: the same modes, the same contiguous one).
void update_tma_descriptor(const TmaAtom& atom, const Tensor& gmem, const dsl::Num& slot);

// cpasync.cp_fence_tma_desc_release(global slot, shared slot): copies the shared tensor map to
// global memory and releases it to the tensor-map proxy (one instruction, the whole warp).
void cp_fence_tma_desc_release(const dsl::Num& global_slot, const dsl::Num& shared_slot);

// The NVVM dialect's cp.async.bulk.tensor (tile mode) with a predicate: every lane where
// `predicate` holds loads the box at `coords` (tensor-map order, innermost first) through the
// descriptor at `descriptor` into `smem`, completing its bytes on `mbar`.
void tma_load_predicated(const dsl::Num& smem, const dsl::Num& descriptor, const std::vector<dsl::Num>& coords,
                         const dsl::Num& mbar, const dsl::Num& predicate);

// llvm.addrspacecast of a traced pointer to address space `space` (same element type).
dsl::Num address_space_cast(const dsl::Num& ptr, ir::AddrSpace space);

}  // namespace opencute::cute
