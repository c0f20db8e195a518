// CPU semantics of what a thread knows and does with the others: its special registers (thread /
// block indices and dimensions, lane, warp), the block barriers (sync_threads parks the warp for the
// scheduler; named barriers count arriving warps) and the warp collectives shfl.sync and vote.sync
// (PTX ISA), over the active lanes of the warp and their member masks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"
#include "ir/arch_attributes.h"

namespace opencute::emulator {

namespace {

Flow exec_special(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  const int d = int(i.imm);
  FOR_LANES(m) {
    int l = LANE;
    int64_t v = 0;
    switch (i.code) {
      case OpCode::ThreadIdx: {
        unsigned t[3];
        thread_coords(c, warp.first_thread + unsigned(l), t);
        v = t[d];
        break;
      }
      case OpCode::BlockIdx: v = w.block_idx[d]; break;
      case OpCode::BlockDim: v = c.req->block[d]; break;
      case OpCode::GridDim: v = c.req->grid[d]; break;
      case OpCode::LaneIdx: v = l; break;
      case OpCode::DynSmemSize: v = c.req->smem; break;
      default: v = warp.index; break;
    }
    at(i.dst, l).i = ir::wrap_int(i.type, v);
  }
  return Flow::Next;
}

Flow exec_barrier(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  warp.pc++;
  warp.state = WarpState::AtBarrier;
  return Flow::Stop;
}

Flow exec_named_barrier(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  // PTX bar.sync / bar.arrive: the warp counts as 32 threads; the barrier completes when
  // `count` threads arrived, releasing the warps that wait at it.
  if (!m) return Flow::Next;
  const int l0 = __builtin_ctz(m);
  const int64_t id = at(i.a, l0).i, count = at(i.b, l0).i;
  FOR_LANES(m) {
    int l = LANE;
    if (at(i.a, l).i != id || at(i.b, l).i != count)
      fail_at(c, w, warp, l, i, "named barrier with different ids or thread counts across one warp");
  }
  if (id < 0 || id >= kNamedBarriers) fail_at(c, w, warp, l0, i, "named barrier id " + std::to_string(id) +
                                                                    " outside [0, 15]");
  if (count <= 0 || count % kWarp != 0 || count > int64_t(c.num_warps) * kWarp)
    fail_at(c, w, warp, l0, i, "named barrier thread count " + std::to_string(count) +
                                   " is not a positive multiple of 32 up to the block's warps");
  if (w.named_count[id] && w.named_count[id] != count)
    fail_at(c, w, warp, l0, i, "named barrier " + std::to_string(id) + " used with thread counts " +
                                   std::to_string(w.named_count[id]) + " and " + std::to_string(count));
  w.named_count[id] = count;
  w.named_arrived[id] += kWarp;
  warp.pc++;
  if (i.imm == int64_t(ir::NamedBarrierKind::Sync)) {
    warp.state = WarpState::AtNamedBarrier;
    warp.barrier_id = int(id);
  }
  if (w.named_arrived[id] == count) {
    for (Warp& other : w.warps)
      if (other.state == WarpState::AtNamedBarrier && other.barrier_id == int(id)) other.state = WarpState::Running;
    w.named_arrived[id] = w.named_count[id] = 0;
    // Landed cp.async data becomes visible as at a block barrier. Only the participants
    // synchronised, so this may hide a race with a non-participant, never report a false one.
    w.async.barrier();
  }
  if (warp.state != WarpState::Running) return Flow::Stop;
  return Flow::Jumped;  // the pc is already past the barrier
}

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

// redux.sync: every lane of the mask gets the reduction over the mask's active lanes (PTX requires
// all of them to execute it; a lane outside its own mask is an error, as for vote). f32 min / max
// take |x| with .abs; NaN inputs are ignored unless .NaN, which makes any NaN the result.
Flow exec_warp_redux(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  const auto kind = ir::ReduxKind(i.imm);
  const ir::Type t = i.op->operands[0]->type;
  const bool f32 = t == ir::f32(), abs = f32 && i.op->ints.at(0), nan = f32 && i.op->ints.at(1);
  FOR_LANES(m) {
    int l = LANE;
    uint32_t member = uint32_t(at(i.b, l).i);
    if (!((member >> l) & 1))
      fail_at(c, w, warp, l, i, "redux.sync by lane " + std::to_string(l) + ", which is not in its member mask " +
                                    hex(member));
    const uint32_t lanes = m & member;
    if (f32) {
      float r = std::numeric_limits<float>::quiet_NaN();
      bool any_nan = false;
      for (uint32_t v = lanes; v; v &= v - 1) {
        float x = float(at(i.a, __builtin_ctz(v)).f);
        if (abs) x = std::fabs(x);
        if (std::isnan(x)) {
          any_nan = true;
          continue;
        }
        r = std::isnan(r) ? x : kind == ir::ReduxKind::Max ? std::fmax(r, x) : std::fmin(r, x);
      }
      if (nan && any_nan) r = std::numeric_limits<float>::quiet_NaN();
      at(i.dst, l).f = r;
      continue;
    }
    int64_t r = 0;
    bool first = true;
    for (uint32_t v = lanes; v; v &= v - 1) {
      const int64_t x = at(i.a, __builtin_ctz(v)).i;
      const int64_t sx = t->is_signed ? int64_t(int32_t(x)) : int64_t(uint32_t(x));
      switch (kind) {
        case ir::ReduxKind::Add: r += sx; break;
        case ir::ReduxKind::Min: r = first ? sx : std::min(r, sx); break;
        case ir::ReduxKind::Max: r = first ? sx : std::max(r, sx); break;
        case ir::ReduxKind::And: r = first ? sx : (r & sx); break;
        case ir::ReduxKind::Or: r |= sx; break;
        case ir::ReduxKind::Xor: r ^= sx; break;
      }
      first = false;
    }
    at(i.dst, l).i = t->is_signed ? int64_t(int32_t(uint32_t(r))) : int64_t(uint32_t(r));
  }
  return Flow::Next;
}

}  // namespace

void register_thread_handlers(HandlerTable& t) {
  t.add(K::Special, exec_special);
  t.add(K::Barrier, exec_barrier);
  t.add(K::NamedBarrier, exec_named_barrier);
  t.add(K::Shuffle, exec_shuffle);
  t.add(K::Vote, exec_vote);
  t.add(K::WarpRedux, exec_warp_redux);
}

}  // namespace opencute::emulator
