// Warp-collective instructions with a member mask: shfl.sync (up, down, bfly, idx with the
// segment mask and clamp of operand c), vote.sync (all, any, uni, ballot), elect.sync,
// redux.sync, bar.warp.sync; and activemask. Each runs once its member lanes have all arrived.
#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

enum ShflMode : int32_t { Up, Down, Bfly, Idx };

// shfl.sync.mode.b32 d[|p], a, b, c, membermask
void run_shfl(const Inst& i, CollectiveCtx& c) {
  uint64_t a[32] = {};
  for (int l = 0; l < 32; ++l)
    if (c.threads[size_t(l)]) a[l] = reg_of(*c.threads[size_t(l)], i.ops[1]) & 0xffffffffu;
  for (int l = 0; l < 32; ++l) {
    Thread* th = c.threads[size_t(l)];
    if (!th) continue;
    ThreadCtx t = c.ctx(l);
    const uint32_t b = uint32_t(t.get(i.ops[2])) & 0x1f;
    const uint32_t cv = uint32_t(t.get(i.ops[3]));
    const uint32_t clamp = cv & 0x1f, segmask = (cv >> 8) & 0x1f;
    const uint32_t lane = uint32_t(l);
    const uint32_t max_lane = (lane & segmask) | (clamp & ~segmask), min_lane = lane & segmask;
    int64_t j = 0;
    bool p = false;
    switch (i.i0) {
      case Up: j = int64_t(lane) - b; p = j >= int64_t(max_lane); break;
      case Down: j = int64_t(lane) + b; p = j <= int64_t(max_lane); break;
      case Bfly: j = int64_t(lane ^ b); p = j <= int64_t(max_lane); break;
      case Idx: j = int64_t(min_lane | (b & ~segmask)); p = j <= int64_t(max_lane); break;
    }
    if (!p) j = l;
    // A source lane outside the member mask is undefined on the GPU: the reading lane keeps its value.
    const uint64_t v = (c.mask >> j & 1) ? a[j] : a[l];
    const Operand& d = i.ops[0];
    if (d.kind == Operand::Vec) {
      t.set(d.elems[0], v);
      t.set(d.elems[1], p);
    } else {
      t.set(d, v);
    }
  }
}

enum VoteMode : int32_t { All, Any, Uni, Ballot };

// vote.sync.mode.type d, {!}a, membermask
void run_vote(const Inst& i, CollectiveCtx& c) {
  uint32_t ballot = 0;
  for (int l = 0; l < 32; ++l)
    if (c.threads[size_t(l)] && c.ctx(l).pred(i.ops[1])) ballot |= 1u << l;
  for (int l = 0; l < 32; ++l) {
    if (!c.threads[size_t(l)]) continue;
    ThreadCtx t = c.ctx(l);
    uint64_t r = 0;
    switch (i.i0) {
      case All: r = ballot == c.mask; break;
      case Any: r = ballot != 0; break;
      case Uni: r = ballot == 0 || ballot == c.mask; break;
      case Ballot: r = ballot; break;
    }
    t.set(i.ops[0], r);
  }
}

// elect.sync d|p, membermask: the lowest member lane is the leader.
void run_elect(const Inst& i, CollectiveCtx& c) {
  const int leader = __builtin_ctz(c.mask);
  for (int l = 0; l < 32; ++l) {
    if (!c.threads[size_t(l)]) continue;
    ThreadCtx t = c.ctx(l);
    const Operand& d = i.ops[0];
    if (d.kind == Operand::Vec) {
      t.set(d.elems[0], uint64_t(leader));
      t.set(d.elems[1], l == leader);
    } else {
      t.set(d, l == leader);
    }
  }
}

enum ReduxOp : int32_t { RAdd, RMin, RMax, RAnd, ROr, RXor };

void run_redux(const Inst& i, CollectiveCtx& c) {
  const bool s = ptype_is_signed(i.type);
  int64_t acc = 0;
  bool first = true;
  for (int l = 0; l < 32; ++l) {
    if (!c.threads[size_t(l)]) continue;
    const uint64_t raw = c.ctx(l).get(i.ops[1]) & 0xffffffffu;
    const int64_t v = s ? sign_extend(raw, 32) : int64_t(raw);
    if (first) acc = v, first = false;
    else switch (i.i0) {
      case RAdd: acc += v; break;
      case RMin: acc = std::min(acc, v); break;
      case RMax: acc = std::max(acc, v); break;
      case RAnd: acc &= v; break;
      case ROr: acc |= v; break;
      case RXor: acc ^= v; break;
    }
  }
  for (int l = 0; l < 32; ++l)
    if (c.threads[size_t(l)]) c.ctx(l).set(i.ops[0], uint64_t(acc) & 0xffffffffu);
}

void run_no_collective(const Inst&, CollectiveCtx&) {}

// activemask.b32 d: the lanes that arrived together (see kConvergedLanes).
void run_activemask(const Inst& i, CollectiveCtx& c) {
  for (int l = 0; l < 32; ++l)
    if (c.threads[size_t(l)]) c.ctx(l).set(i.ops[0], c.mask);
}

void as_warp_collective(Inst& i, CollectiveFn fn, int mask_operand) { as_collective(i, fn, Scope::Warp, mask_operand); }

void decode_shfl(Inst& i) {
  if (!i.has_mod("sync")) unsupported(i, "shfl without .sync");
  static const char* modes[] = {"up", "down", "bfly", "idx"};
  i.i0 = -1;
  for (int k = 0; k < 4; ++k)
    if (i.has_mod(modes[k])) i.i0 = k;
  if (i.i0 < 0 || i.ops.size() != 5) unsupported(i);
  as_warp_collective(i, run_shfl, 4);
}

void decode_vote(Inst& i) {
  if (!i.has_mod("sync")) unsupported(i, "vote without .sync");
  static const char* modes[] = {"all", "any", "uni", "ballot"};
  i.i0 = -1;
  for (int k = 0; k < 4; ++k)
    if (i.has_mod(modes[k])) i.i0 = k;
  if (i.i0 < 0 || i.ops.size() != 3) unsupported(i);
  as_warp_collective(i, run_vote, 2);
}

void decode_elect(Inst& i) {
  if (i.ops.size() != 2) unsupported(i);
  as_warp_collective(i, run_elect, 1);
}

void decode_redux(Inst& i) {
  static const char* ops[] = {"add", "min", "max", "and", "or", "xor"};
  i.i0 = -1;
  for (int k = 0; k < 6; ++k)
    if (i.has_mod(ops[k])) i.i0 = k;
  i.type = last_type(i);
  if (i.i0 < 0 || i.ops.size() != 3 || ptype_is_float(i.type)) unsupported(i);
  as_warp_collective(i, run_redux, 2);
}

void decode_bar_warp(Inst& i) {
  if (i.ops.size() != 1) unsupported(i);
  as_warp_collective(i, run_no_collective, 0);
}

}  // namespace

void register_ptx_warp(PtxFamilyTable& t) {
  t.add("shfl", decode_shfl);
  t.add("vote", decode_vote);
  t.add("elect", decode_elect);
  t.add("redux", decode_redux);
  t.add("bar.warp", decode_bar_warp);  // reached through bar's decoder
  t.add("activemask", [](Inst& i) { as_collective(i, run_activemask, Scope::Warp, kConvergedLanes); });
}

}  // namespace opencute::emulator::ptx
