// CPU semantics of the warp collectives shfl.sync and vote.sync (PTX ISA), over the active lanes
// of the warp and their member masks.
#include <string>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"
#include "ir/arch_attributes.h"

namespace opencute::emulator {

namespace {

Flow exec_shuffle(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  const auto kind = ir::ShuffleKind(i.imm);
  FOR_LANES(m) {
    int l = LANE;
    uint32_t member = uint32_t(at(i.srcs[0], l).i);
    if (!((member >> l) & 1))
      fail_at(c, w, warp, l, i, "shuffle_sync by lane " + std::to_string(l) + ", which is not in its member mask " + hex(member));
    // PTX shfl.sync: c packs the clamp (bits 0-4) and the segment mask (bits 8-12).
    const int b = int(at(i.b, l).i & 31), cv = int(at(i.c, l).i);
    const int clamp = cv & 31, seg = (cv >> 8) & 31;
    const int max_lane = (l & seg) | (clamp & ~seg), min_lane = l & seg;
    int j = l;
    bool ok = false;
    switch (kind) {
      case ir::ShuffleKind::Up: j = l - b; ok = j >= max_lane; break;
      case ir::ShuffleKind::Down: j = l + b; ok = j <= max_lane; break;
      case ir::ShuffleKind::Bfly: j = l ^ b; ok = j <= max_lane; break;
      case ir::ShuffleKind::Idx: j = min_lane | (b & ~seg); ok = j <= max_lane; break;
    }
    // An out-of-range source gives the lane its own value (PTX). A source lane that is
    // inactive or outside the mask is undefined on the GPU; here it also gives the own value.
    if (!ok || j < 0 || j >= kWarp || !((m >> j) & 1) || !((member >> j) & 1)) j = l;
    at(i.dst, l) = at(i.a, j);
  }
  return Flow::Next;
}

Flow exec_vote(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  const auto kind = ir::VoteKind(i.imm);
  FOR_LANES(m) {
    int l = LANE;
    uint32_t member = uint32_t(at(i.b, l).i);
    if (!((member >> l) & 1))
      fail_at(c, w, warp, l, i, "vote by lane " + std::to_string(l) + ", which is not in its member mask " + hex(member));
    // The lanes that take part: active (not exited, not branched away) and in the mask.
    uint32_t voters = m & member, ballot = 0;
    for (uint32_t v = voters; v; v &= v - 1) {
      int k = __builtin_ctz(v);
      if (at(i.a, k).i) ballot |= 1u << k;
    }
    int64_t r = 0;
    switch (kind) {
      case ir::VoteKind::Ballot: r = int32_t(ballot); break;
      case ir::VoteKind::Any: r = ballot != 0; break;
      case ir::VoteKind::All: r = ballot == voters; break;
      case ir::VoteKind::Uni: r = ballot == 0 || ballot == voters; break;
    }
    at(i.dst, l).i = r;
  }
  return Flow::Next;
}

}  // namespace

void register_shuffle_vote_handlers(OpHandlerTable& t) {
  t.add(K::Shuffle, exec_shuffle);
  t.add(K::Vote, exec_vote);
}

}  // namespace opencute::emulator
