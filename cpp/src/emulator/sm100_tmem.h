// CPU semantics of Blackwell's tensor memory (PTX ISA "Tensor Memory" and the tcgen05 family):
// per CTA, 128 lanes x 512 columns of 32-bit cells, handed out in columns by tcgen05.alloc and
// reached only through tcgen05 instructions, which name cells by 32-bit addresses
// (lane << 16) | column. The emulator decodes the addresses the kernel computed, as the GPU
// does: a wrong address reads or writes the wrong cells, and a cell outside the CTA's
// allocation is reported (the GPU leaves it undefined).
//
// Allocation (tcgen05.alloc / dealloc / relinquish_alloc_permit): warp-wide; a power-of-two
// number of columns in [32, 512] at a column offset that is a multiple of the count; the first
// column's address is written to shared memory. An allocation that does not fit would block on
// the GPU until another warp frees columns: the emulator runs one CTA per SM, so nothing would
// free them and it reports the request instead. Allocating after relinquish_alloc_permit, freeing
// what was not allocated, and columns still allocated when the CTA exits are reported.
// With .cta_group::2 one warp of each CTA of the pair allocates, collectively: the first waits for
// the other (a peer that never gets there is a deadlock, reported).
//
// Who may touch which lanes (PTX ISA "Access restrictions"): warp w of a warpgroup reaches lanes
// [32 * (w % 4), 32 * (w % 4) + 32) with tcgen05.ld / st.
//
// What wrote each cell since its columns were allocated (nothing, a tcgen05.cp / st, or an MMA's
// accumulator): a block-scaled MMA reports scale factors read from cells no copy or store wrote
// (uninitialised tensor memory, which the GPU reads as whatever the last owner left there) and
// from cells an accumulator overwrote.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "emulator/device_program.h"

namespace opencute::emulator {

struct LaunchCtx;
struct Worker;
struct Warp;

class TensorMemory {
 public:
  static constexpr int kLanes = 128, kColumns = 512;

  void reset();
  // The allocations of a CTA at its start: none, and the permit held.
  // "" or why not: allocates `columns` and sets *column to the first one.
  std::string allocate(int64_t columns, const ir::Op* op, uint32_t* column);
  std::string deallocate(uint32_t address, int64_t columns);
  void relinquish() { relinquished_ = true; }
  // tcgen05.alloc.cta_group::2 calls this CTA's warps have reached (the pair allocates together).
  uint64_t pair_allocs_reached = 0;
  // "" when columns [column, column + count) are all allocated, else why not.
  std::string check_columns(uint32_t column, int64_t count, const char* what) const;
  // A CTA exiting with columns allocated: the op that allocated the first of them, else null.
  const ir::Op* leaked(int64_t* columns) const;

  uint32_t& cell(uint32_t lane, uint32_t column) { return cells_[size_t(lane) * kColumns + column]; }
  uint32_t* row(uint32_t lane) { return cells_.data() + size_t(lane) * kColumns; }

  enum class Writer : uint8_t { None, CopyOrStore, Accumulator };
  void wrote(uint32_t lane, uint32_t column, Writer how) { writers_[size_t(lane) * kColumns + column] = how; }
  Writer writer(uint32_t lane, uint32_t column) const { return writers_[size_t(lane) * kColumns + column]; }

 private:
  struct Allocation {
    uint32_t column;
    int64_t columns;
    const ir::Op* op;
  };
  std::vector<uint32_t> cells_;
  std::vector<Writer> writers_;  // per cell, cleared when its columns are allocated
  std::vector<Allocation> allocations_;
  std::array<bool, kColumns> used_{};
  bool relinquished_ = false;
};

// A tcgen05.ld's registers may be read only after tcgen05.wait::ld. While a warp has loads not
// waited for, run_warp calls this before each instruction: moving, converting or storing the
// values to the thread's local memory carries the mark along; any other use of them, or a load of
// the local bytes they went to, is reported at the load's line.
void check_tmem_pending(const LaunchCtx& c, Worker& w, Warp& warp, const Inst& i);

// Lowers one of the tensor-memory ops (TmemAlloc, TmemDealloc, TmemRelinquish, Tcgen05Ld / St /
// Wait / Fence / Cp) into the program; false when `op` is not one.
bool lower_sm100_tmem(DeviceEmulator::Program& p, const ir::Op& op);

}  // namespace opencute::emulator
