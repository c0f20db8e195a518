// mbarrier.* (init, arrive with counts and expect_tx, arrive on a peer CTA's barrier through a
// shared::cluster address, expect_tx / complete_tx, test_wait / try_wait by phase parity or
// state, inval, pending_count) and cp.async.mbarrier.arrive. A barrier's state lives beside the
// cluster (keyed by the host address of its 8 bytes); a phase completes when its pending
// arrivals and transaction bytes both reach zero. A try_wait whose phase has not completed
// returns false and ends the thread's turn, as a GPU's try_wait returns false once its time
// limit passes; a kernel spinning on it forever is reported as a deadlock by the scheduler.
#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

enum Kind : int32_t { Init, Inval, Arrive, ArriveDrop, ExpectTx, CompleteTx, TestWait, TryWait, PendingCount, CpAsyncArrive };
enum Flag : uint32_t { Parity = 1, WithTx = 2, NoComplete = 4, NoInc = 8 };

void complete_if_done(Mbarrier& b, Cluster& cl) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.expected;
    ++cl.changes;
  }
}

uint64_t barrier_key(const Inst& i, ThreadCtx& t, const Operand& addr) {
  return reinterpret_cast<uintptr_t>(t.host(t.address(addr), i.space, 8, true, 8));
}

Mbarrier& existing(const Inst& i, ThreadCtx& t, uint64_t key) {
  auto it = t.cl.mbarriers.find(key);
  if (it == t.cl.mbarriers.end()) t.fail(i.opcode + " on an mbarrier that was never initialised (mbarrier.init)");
  return it->second;
}

// Arrives `count` times (and adds `tx` transaction bytes first); returns the phase token.
uint64_t arrive(const Inst& i, ThreadCtx& t, uint64_t key, int64_t count, int64_t tx, bool drop) {
  Mbarrier& b = existing(i, t, key);
  const uint64_t token = b.phase;
  b.tx += tx;
  if (count > b.pending)
    t.fail(i.opcode + ": " + std::to_string(count) + " arrivals on an mbarrier whose phase has " +
           std::to_string(b.pending) + " outstanding");
  b.pending -= count;
  if (drop) --b.expected;
  ++t.cl.changes;
  complete_if_done(b, t.cl);
  return token;
}

Step run_mbarrier(const Inst& i, ThreadCtx& t) {
  switch (i.i0) {
    case Init: {
      const uint64_t key = barrier_key(i, t, i.ops[0]);
      const int64_t count = int64_t(t.get(i.ops[1]) & 0xffffffff);
      if (count < 1) t.fail("mbarrier.init with a count of " + std::to_string(count));
      Mbarrier& b = t.cl.mbarriers[key];
      b = Mbarrier{count, count, 0, 0};
      ++t.cl.changes;
      return Step::Next;
    }
    case Inval:
      t.cl.mbarriers.erase(barrier_key(i, t, i.ops[0]));
      return Step::Next;
    case Arrive:
    case ArriveDrop: {
      // mbarrier.arrive[.expect_tx] state, [addr][, count or tx]
      const uint64_t key = barrier_key(i, t, i.ops[1]);
      int64_t count = 1, tx = 0;
      if (i.ops.size() > 2) {
        const int64_t v = int64_t(t.get(i.ops[2]) & 0xffffffff);
        if (i.flags & WithTx) tx = v;
        else count = v;
      }
      const uint64_t token = arrive(i, t, key, count, tx, i.i0 == ArriveDrop);
      t.set(i.ops[0], token);
      return Step::Next;
    }
    case ExpectTx:
    case CompleteTx: {
      Mbarrier& b = existing(i, t, barrier_key(i, t, i.ops[0]));
      const int64_t v = int64_t(t.get(i.ops[1]) & 0xffffffff);
      b.tx += i.i0 == ExpectTx ? v : -v;
      ++t.cl.changes;
      if (i.i0 == CompleteTx) complete_if_done(b, t.cl);
      return Step::Next;
    }
    case TestWait:
    case TryWait: {
      const uint64_t key = barrier_key(i, t, i.ops[1]);
      Mbarrier& b = existing(i, t, key);
      const uint64_t v = t.get(i.ops[2]);
      // .parity: the phase of that parity completed (the current one has the other parity);
      // a state token: the phase it was taken in completed.
      const bool done = (i.flags & Parity) ? (b.phase & 1) != (v & 1) : b.phase > v;
      t.set(i.ops[0], done);
      // A failed try_wait returns false (its time limit passed) and lets the other threads run:
      // the kernel's loop tries again on its next turn.
      // test_wait does not wait at all, but a kernel spinning on it (sm_80's wait loop) needs
      // the others to run as much.
      return done ? Step::Next : Step::Yield;
    }
    case PendingCount:
      t.fail("mbarrier.pending_count is not supported");
    case CpAsyncArrive: {
      // cp.async copies have landed when issued. Without .noinc the pending count rises by one
      // before the arrive: no change; with .noinc it counts as one arrival.
      const uint64_t key = reinterpret_cast<uintptr_t>(t.host(t.address(i.ops[0]), i.space, 8, true, 8));
      if (i.flags & NoInc) arrive(i, t, key, 1, 0, false);
      else existing(i, t, key);
      return Step::Next;
    }
  }
  return Step::Next;
}

void decode_mbarrier(Inst& i) {
  i.space = space_of(i);
  const std::string& k = i.mods.at(0);
  if (k == "init") i.i0 = Init;
  else if (k == "inval") i.i0 = Inval;
  else if (k == "arrive") i.i0 = Arrive;
  else if (k == "arrive_drop") i.i0 = ArriveDrop;
  else if (k == "expect_tx") i.i0 = ExpectTx;
  else if (k == "complete_tx") i.i0 = CompleteTx;
  else if (k == "test_wait") i.i0 = TestWait;
  else if (k == "try_wait") i.i0 = TryWait;
  else if (k == "pending_count") i.i0 = PendingCount;
  else unsupported(i);
  if (i.has_mod("parity")) i.flags |= Parity;
  if (i.has_mod("expect_tx") && i.i0 != ExpectTx) i.flags |= WithTx;
  if (i.has_mod("noComplete")) unsupported(i, ".noComplete");
  if ((i.i0 == Arrive || i.i0 == ArriveDrop) && i.ops.size() < 2) unsupported(i, "operands");
  i.run = run_mbarrier;
}

void decode_cp_async_mbarrier(Inst& i) {
  i.i0 = CpAsyncArrive;
  i.space = space_of(i);
  if (i.has_mod("noinc")) i.flags |= NoInc;
  i.run = run_mbarrier;
}

}  // namespace

// Used by the TMA copies (ptx_bulk_copy.cpp): complete_tx of `bytes` on the barrier at `key`.
void mbarrier_complete_tx(ThreadCtx& t, Cluster& cl, uint64_t key, int64_t bytes) {
  auto it = cl.mbarriers.find(key);
  if (it == cl.mbarriers.end()) t.fail(t.inst->opcode + " signals an mbarrier that was never initialised");
  it->second.tx -= bytes;
  ++cl.changes;
  complete_if_done(it->second, cl);
}

// Used by tcgen05.commit (ptx_tcgen05_mma.cpp): one arrival on the barrier at `key`.
void mbarrier_arrive_one(ThreadCtx& t, uint64_t key) { arrive(*t.inst, t, key, 1, 0, false); }

void register_ptx_mbarrier(PtxFamilyTable& t) {
  t.add("mbarrier", decode_mbarrier);
  t.add("cp.async.mbarrier", decode_cp_async_mbarrier);  // reached through cp's decoder
}

}  // namespace opencute::emulator::ptx
