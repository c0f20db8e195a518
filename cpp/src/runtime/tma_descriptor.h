// TMA descriptors (CUtensorMap) for the copy_sm90 atoms: the fields the atom derived (element
// type, rank, the global tensor's address, extents and byte strides, the box, the swizzle) are
// checked against the hardware's rules, kept for the CPU emulator (emulator::TmaDescriptor) and,
// when kernels run on a GPU, encoded by the driver's cuTensorMapEncodeTiled into the 128 bytes
// passed as a 64-byte-aligned __grid_constant__ kernel parameter.
#pragma once
#include <cstdint>
#include <string>

#include "emulator/sm90_async.h"
#include "ir/types.h"

namespace opencute::runtime {

// (emulator::fill_tma_descriptor fills and checks the fields.)
// Encodes d.tensor_map through the driver (throws runtime::CudaError).
void encode_tma_descriptor(emulator::TmaDescriptor& d, ir::Type element);

}  // namespace opencute::runtime
