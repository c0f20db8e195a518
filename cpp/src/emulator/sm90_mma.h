// CPU semantics of the SM90 warpgroup MMA family (ir OpCode::Wgmma, WgmmaFence, WgmmaCommit,
// WgmmaWait) for the device emulator, per the PTX ISA ("Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate": matrix descriptors, canonical shared-memory layouts, the register
// fragments of wgmma .m64nNk16 / .m64nNk32).
//
// The four warps of a warpgroup each own 16 rows of the 64 x N accumulator tile, and every
// value a warp needs is either in shared memory (read through the descriptors) or in its own
// lanes' registers (A from registers), so each warp runs its part when it reaches the
// instruction. The emulator computes a wgmma when it is issued: the smem operands are read then
// and the accumulators written (chained wgmma read the accumulators of the previous one, so the
// registers cannot wait for wait_group here); what wait_group completes is the reading of shared
// memory, see WgmmaReadTracker.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "emulator/device_program.h"

namespace opencute::emulator {

// The shared memory that issued wgmma still read: on the GPU a wgmma reads its shared-memory
// operands at some time before the wait_group that retires its group, so a store to those bytes
// before that wait is a race. The emulator reads them at issue (the values are right either way)
// and remembers the bytes until the issuing warp's wait_group retires the group; a store to them
// before then raises, naming the wgmma's line.
class WgmmaReadTracker {
 public:
  void reset(uintptr_t smem, size_t smem_size, unsigned warps);
  bool active() const { return active_; }
  // Warp `warp` read these element addresses of `bytes` each (a wgmma of user line `line`).
  void issue(unsigned warp, const std::vector<uintptr_t>& addrs, int bytes, int line);
  void commit(unsigned warp);
  void wait(unsigned warp, int64_t pending_allowed);
  // "" when [addr, addr + bytes) may be written now, else why not.
  std::string check_store(uintptr_t addr, size_t bytes) const;

 private:
  struct Group {
    std::vector<uint32_t> offsets;  // shared-memory byte offsets read
    bool committed = false;
  };
  void release(Group& g);
  bool active_ = false;
  uintptr_t smem_ = 0;
  std::vector<uint16_t> readers_;  // per byte: in-flight wgmma reads of it
  std::vector<int> line_;          // per byte: the line of the latest wgmma reading it
  std::vector<std::vector<Group>> groups_;  // per warp, oldest first; the last may be open
};

// The shared-memory byte address of element (mn, k) of an operand described by `desc` (the
// 64-bit wgmma matrix descriptor), `mn_major` saying which layout family it is, for elements of
// `element_bits`; `smem` / `smem_size` are the block's shared memory (the descriptor holds the
// low 18 bits of the address). Returns 0 when the address lies outside it.
uintptr_t wgmma_operand_address(uint64_t desc, bool mn_major, int element_bits, int64_t mn, int64_t k,
                                uintptr_t smem, size_t smem_size);

// Runs one warp's part of a Wgmma, or a fence / commit / wait (which retire the warp's reads in
// `reads`). `warp` is the warp's index in the block. Returns an error message, or "".
// `check_read` (optional) says why an operand element of shared memory may not be read now ("" when
// it may), e.g. that a TMA load still fills it.
std::string run_wgmma(const Inst& i, uint32_t active_mask, ir::Scalar* regs, unsigned warp, uintptr_t smem,
                      size_t smem_size, WgmmaReadTracker& reads,
                      const std::function<std::string(uintptr_t addr, size_t bytes)>& check_read = {});

// Lowers one of the family's ops into the program; false when `op` is not one.
bool lower_sm90_mma(DeviceEmulator::Program& p, const ir::Op& op);

}  // namespace opencute::emulator
