// When a tcgen05.mma is known to be complete (PTX ISA "tcgen05 memory consistency model"): the
// MMA runs asynchronously; the only way to learn that it finished is a tcgen05.commit issued
// after it by the same thread, which makes an mbarrier arrival once every earlier tcgen05 op of
// that thread completed, and a wait that sees that mbarrier's phase complete. The emulator
// computes an MMA when it is issued, so without this bookkeeping a kernel that reads the
// accumulator too early, or exits with an MMA still running, would pass on the CPU and fail on
// the GPU.
//
// Per cluster: the MMAs not known to be complete (one record per issuing warp, CTA and
// accumulator columns: a K loop's MMAs into the same columns share one), the commits that track
// them (mbarrier, the phase their arrival falls in) and the waits that see those phases complete.
// A wait by any thread counts: the report is for an MMA nobody can know is done (lenient, so that
// no correct kernel is reported).
//
// tcgen05.cp is tracked the same way (a commit covers the thread's earlier copies too), for the
// block-scaled MMA that reads its scale factors: one thread's copy and MMA run in issue order (PTX
// ISA "Pipelined tcgen05 instructions"), but an MMA of another thread reads copied columns only
// once the copy is known to be complete.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace opencute::emulator {

class MmaCompletion {
 public:
  struct InFlight {
    const ir::Op* op;           // the latest MMA of the record
    unsigned issuer_rank;       // the issuing thread's CTA (rank in the cluster) and warp
    int issuer_warp;
    uint64_t seq;               // its issue number (per cluster)
    unsigned block;             // the CTA whose tensor memory it writes
    uint32_t begin, end;        // the accumulator's columns there
    const ir::Op* commit;       // the first tcgen05.commit after it, null when none yet
    unsigned commit_block;      // that commit's mbarrier: its CTA and address
    uintptr_t commit_bar;
  };

  void reset() { mmas_.clear(), copies_.clear(), commits_.clear(), seq_ = 0; }
  bool any_in_flight() const { return !mmas_.empty(); }
  bool any_commit() const { return !commits_.empty(); }

  // An MMA by (issuer_rank, issuer_warp) writing columns [begin, end) of CTA `block`'s tensor memory.
  void issue(const ir::Op* op, unsigned issuer_rank, int issuer_warp, unsigned block, uint32_t begin, uint32_t end);
  // A tcgen05.cp by (issuer_rank, issuer_warp) writing columns [begin, end) of CTA `block`'s tensor memory.
  void copy(const ir::Op* op, unsigned issuer_rank, int issuer_warp, unsigned block, uint32_t begin, uint32_t end);
  // tcgen05.commit by (issuer_rank, issuer_warp): an arrival on the mbarrier at `bar` of CTA
  // `block`, in that barrier's phase `phase` (the number of phases it completed before).
  void commit(const ir::Op* op, unsigned issuer_rank, int issuer_warp, unsigned block, uintptr_t bar, uint64_t phase);
  // A wait on the mbarrier at `bar` of CTA `block` returned, the barrier having completed
  // `completed` phases: the MMAs its earlier commits track are complete.
  void waited(unsigned block, uintptr_t bar, uint64_t completed);

  // The first MMA not known to be complete that writes any of columns [begin, end) of CTA
  // `block`, else null.
  const InFlight* writing(unsigned block, uint32_t begin, uint32_t end) const;
  // The first MMA not known to be complete that writes CTA `block`'s tensor memory, else null.
  const InFlight* in_flight(unsigned block) const;
  // The first tcgen05.cp not known to be complete that writes any of columns [begin, end) of CTA
  // `block`, issued by another warp than (reader_rank, reader_warp), else null.
  const InFlight* copying(unsigned block, uint32_t begin, uint32_t end, unsigned reader_rank, int reader_warp) const;

 private:
  struct Commit {
    unsigned issuer_rank;
    int issuer_warp;
    uint64_t seq;  // it tracks the issuer's MMAs up to this issue number
    unsigned block;
    uintptr_t bar;
    uint64_t phase;
  };
  static void record(std::vector<InFlight>& list, uint64_t seq, const ir::Op* op, unsigned issuer_rank, int issuer_warp,
                     unsigned block, uint32_t begin, uint32_t end);
  std::vector<InFlight> mmas_, copies_;
  std::vector<Commit> commits_;
  uint64_t seq_ = 0;
};

}  // namespace opencute::emulator
