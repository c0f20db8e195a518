// Atomic read-modify-write on host memory for the emulator's Atomic op. Atomic across host
// threads (the emulator runs blocks in parallel), with the value semantics of scalar_semantics.
#pragma once
#include "ir/arch_attributes.h"
#include "ir/scalar_semantics.h"

namespace opencute::emulator {

// Applies `kind` to the element of type `t` at `address` and returns its previous value.
// `compare` is read only for AtomicKind::Cas, which compares bit patterns as PTX does.
ir::Scalar atomic_update(ir::AtomicKind kind, ir::Type t, void* address, const ir::Scalar& value,
                         const ir::Scalar& compare);

}  // namespace opencute::emulator
