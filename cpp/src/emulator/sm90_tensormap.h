// CPU semantics of TMA descriptors in device memory (copy_tensormap, tensormap.replace,
// tensormap.cp_fenceproxy). A descriptor the host encodes (TmaDescriptor) is the 128-byte
// CUtensorMap followed by the emulator's fields; a kernel's 128-byte slot cannot hold both, so on
// the emulator a slot holds a TmaDescriptorImage: the emulator's fields in the tensor map's 128
// bytes, tagged by a magic word whose low nibble is not zero (a real tensor map starts with a
// 16-byte aligned global address, so neither can be taken for the other). TMA copies accept
// either form (tma_descriptor_at).
#pragma once
#include <cstdint>

#include "emulator/sm90_async.h"

namespace opencute::emulator {

constexpr uint64_t kTmaImageMagic = 0x3147414d49414d54ull;  // "TMAIMAG1", low nibble 4
struct TmaDescriptorImage {
  uint64_t magic = kTmaImageMagic;
  int32_t rank = 0, elem_bytes = 0, swizzle_bytes = 0;
  int32_t data_type_plus_one = 0;  // TmaDescriptor::data_type + 1 (0: unknown)
  uint64_t global_address = 0;
  uint64_t strides[5] = {};  // bytes
  uint32_t dims[5] = {};
  uint32_t box[5] = {};
  uint32_t invalid = 0;  // TmaDescriptor::invalid
  uint32_t padding[3] = {};
};
static_assert(sizeof(TmaDescriptorImage) == 128, "a tensor map slot is 128 bytes");

// The 128-byte slot image of a descriptor (what copy_tensormap writes; the PTX executor puts a
// descriptor parameter's image in the kernel's .param space).
TmaDescriptorImage tma_descriptor_image(const TmaDescriptor& d);

// The descriptor at `addr`: a host-encoded TmaDescriptor or a slot's image. False when neither.
bool tma_descriptor_at(uintptr_t addr, TmaDescriptor* out);

// Executes TmaDescCopy / TmaDescReplace / TmaDescCpFenceRelease (issued by every active lane, as
// the PTX instructions are; a whole-warp op writes the same bytes from each lane).
void execute_sm90_tensormap(const Inst& i, Sm90WarpContext& w);

// True when `body` turns integers of unknown origin (read from memory, passed in) into global or
// generic pointers, or points a tensor map at such an address: the kernel then reaches buffers
// that no argument describes. A pointer rebuilt from another's address (ptr.toint()) is not one.
bool forges_global_pointers(const ir::Block& body);

// Lowers one of the tensor-map ops into the program (as K::Sm90Tensormap); false when `op` is not one.
bool lower_sm90_tensormap(DeviceEmulator::Program& p, const ir::Op& op);

}  // namespace opencute::emulator
