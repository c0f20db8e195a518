#include "emulator/ptx/ptx_scheduler.h"

#include <chrono>
#include <cstdlib>
#include <map>

namespace opencute::emulator::ptx {

namespace {

constexpr uint64_t kSliceInstructions = uint64_t(1) << 20;

// Runs `th` until it blocks or exits; returns the number of instructions it executed.
uint64_t run_thread(const Launch& L, Cluster& cl, Cta& cta, Thread& th) {
  const std::vector<Inst>& code = L.kernel->code;
  ThreadCtx ctx{L, cl, cta, th, nullptr};
  uint64_t n = 0;
  th.yielded_at_wait = th.out_of_slice = false;
  for (;;) {
    // A thread spinning on memory another thread writes (a flag, a volatile poll) never blocks:
    // after a slice of instructions it lets the others run.
    if (n >= kSliceInstructions) {
      th.out_of_slice = true;
      return n;
    }
    if (th.pc >= code.size()) {
      th.state = ThreadState::Exited;
      return n;
    }
    const Inst& i = code[th.pc];
    ++n;
    if (i.guard >= 0 && bool(th.regs[size_t(i.guard)] & 1) == i.guard_negated) {
      ++th.pc;
      continue;
    }
    if (i.collective) {
      th.state = ThreadState::AtCollective;
      return n;
    }
    ctx.inst = &i;
    switch (i.run(i, ctx)) {
      case Step::Next: ++th.pc; break;
      case Step::Jumped: break;
      case Step::Block: return n;
      case Step::Exit: th.state = ThreadState::Exited; return n;
      case Step::Yield:
        th.spin_pc = th.pc++;
        th.yielded_at_wait = true;
        return n;
    }
  }
}

int live_threads(const Cta& cta) {
  int n = 0;
  for (const Thread& t : cta.threads) n += t.state != ThreadState::Exited;
  return n;
}

// Runs the collectives whose group has arrived; true when one ran.
bool run_collectives(const Launch& L, Cluster& cl, Cta& cta) {
  bool ran = false;
  const int nthreads = int(cta.threads.size());
  const int nwarps = (nthreads + 31) / 32;
  for (int w = 0; w < nwarps; ++w) {
    for (int lane = 0; lane < 32; ++lane) {
      const int t = w * 32 + lane;
      if (t >= nthreads) break;
      Thread& th = cta.threads[size_t(t)];
      if (th.state != ThreadState::AtCollective) continue;
      const Inst& i = L.kernel->code[th.pc];
      const uint32_t pc = th.pc;
      CollectiveCtx c{L, cl, cta, {}, 0, &i};
      if (i.scope == Scope::Warpgroup) {
        const int first = (w / 4) * 128;
        c.threads.assign(128, nullptr);
        bool ready = true;
        for (int k = 0; k < 128 && ready; ++k) {
          if (first + k >= nthreads) break;
          Thread& o = cta.threads[size_t(first + k)];
          if (o.state == ThreadState::Exited) continue;
          if (o.state != ThreadState::AtCollective || o.pc != pc) ready = false;
          else c.threads[size_t(k)] = &o;
        }
        if (!ready) continue;
      } else {
        uint32_t exists = 0;
        for (int k = 0; k < 32 && w * 32 + k < nthreads; ++k)
          if (cta.threads[size_t(w * 32 + k)].state != ThreadState::Exited) exists |= 1u << k;
        uint32_t mask = exists;
        if (i.member_mask_operand == kConvergedLanes) {
          // The lanes at this instruction once every lane of the warp has run as far as it can:
          // the converged set (threads run one at a time, so no other notion of "active" exists).
          mask = 0;
          bool settled = true;
          for (int k = 0; k < 32 && w * 32 + k < nthreads; ++k) {
            const Thread& o = cta.threads[size_t(w * 32 + k)];
            if (o.state == ThreadState::Ready && !o.yielded_at_wait) settled = false;  // spinning lanes have settled
            if (o.state == ThreadState::AtCollective && o.pc == pc) mask |= 1u << k;
          }
          if (!settled) continue;
        } else if (i.member_mask_operand >= 0) {
          ThreadCtx tc{L, cl, cta, th, &i};
          mask = uint32_t(tc.get(i.ops[size_t(i.member_mask_operand)])) & exists;
          if (!(mask >> lane & 1)) {
            ThreadCtx(tc).fail("a thread executes " + i.opcode + " with a member mask that leaves it out");
          }
        }
        c.threads.assign(32, nullptr);
        bool ready = true;
        for (int k = 0; k < 32 && ready; ++k) {
          if (!(mask >> k & 1)) continue;
          Thread& o = cta.threads[size_t(w * 32 + k)];
          if (o.state != ThreadState::AtCollective || o.pc != pc) ready = false;
          else c.threads[size_t(k)] = &o;
        }
        if (!ready) continue;
        c.mask = mask;
      }
      i.collective(i, c);
      for (Thread* o : c.threads)
        if (o) o->state = ThreadState::Ready, ++o->pc;
      ++cl.changes;
      ran = true;
    }
  }
  return ran;
}

bool release_barriers(Cta& cta) {
  bool released = false;
  const int live = live_threads(cta);
  for (int id = 0; id < 16; ++id) {
    NamedBarrier& b = cta.bars[id];
    if (!b.arrived) continue;
    const int expected = b.expected ? b.expected : live;
    // A barrier without a thread count waits for every live thread; threads that only arrived
    // (bar.arrive) count as well.
    if (b.arrived < expected) continue;
    for (Thread& t : cta.threads)
      if (t.state == ThreadState::AtBarrier && t.barrier_id == id) t.state = ThreadState::Ready, ++t.pc;
    b.arrived -= expected;
    if (b.arrived < 0) b.arrived = 0;
    b.expected = 0;
    released = true;
  }
  return released;
}

bool release_waits(Cluster& cl) {
  bool released = false;
  int live = 0;
  for (Cta& cta : cl.ctas) live += live_threads(cta);
  if (cl.cluster_arrived > 0 && cl.cluster_arrived >= live) {
    ++cl.cluster_phase;
    cl.cluster_arrived = 0;
    ++cl.changes;
  }
  for (Cta& cta : cl.ctas)
    for (Thread& t : cta.threads) {
      if (t.state == ThreadState::AtMbarrier) {
        auto it = cl.mbarriers.find(t.wait_addr);
        // The wait re-runs; it completes when the phase of the parity it waits for has completed.
        if (it != cl.mbarriers.end() && (it->second.phase & 1) != t.wait_parity) t.state = ThreadState::Ready, released = true;
      } else if (t.state == ThreadState::AtClusterBarrier && cl.cluster_phase > t.cluster_phase) {
        t.state = ThreadState::Ready;
        released = true;
      }
    }
  return released;
}

const char* state_name(ThreadState s) {
  switch (s) {
    case ThreadState::AtCollective: return "waits for its warp at a collective";
    case ThreadState::AtBarrier: return "waits at a barrier";
    case ThreadState::AtMbarrier: return "waits on an mbarrier";
    case ThreadState::AtClusterBarrier: return "waits at the cluster barrier";
    default: return "spins on a failed mbarrier.try_wait";
  }
}

[[noreturn]] void report_deadlock(const Launch& L, Cluster& cl) {
  std::map<std::pair<uint32_t, int>, int> at;  // (pc, state) -> threads
  const Thread* first = nullptr;
  const Cta* first_cta = nullptr;
  for (Cta& cta : cl.ctas)
    for (Thread& t : cta.threads)
      if (t.state != ThreadState::Exited) {
        ++at[{t.state == ThreadState::Ready ? t.spin_pc : t.pc, int(t.state)}];
        if (!first) first = &t, first_cta = &cta;
      }
  std::string what = "deadlock: no thread can go on;";
  for (auto& [key, n] : at) {
    const Inst& i = L.kernel->code[key.first];
    what += " " + std::to_string(n) + " thread(s) " + state_name(ThreadState(key.second)) + " at PTX line " +
            std::to_string(i.line) + " `" + i.text + "`;";
  }
  fail_at(L, *first_cta, *first, L.kernel->code[first->state == ThreadState::Ready ? first->spin_pc : first->pc], what);
}

// OPENCUTE_PTX_TIME_LIMIT: seconds a cluster may run (0: no limit). A loop that never ends keeps
// its threads running, so no deadlock is seen; the GPU would hang as well.
double time_limit_seconds() {
  const char* e = std::getenv("OPENCUTE_PTX_TIME_LIMIT");
  return e ? std::atof(e) : 0.0;
}

[[noreturn]] void report_still_running(const Launch& L, Cluster& cl, double limit) {
  std::map<std::pair<uint32_t, int>, int> at;  // (pc, state) -> threads
  const Thread* first = nullptr;
  const Cta* first_cta = nullptr;
  for (Cta& cta : cl.ctas)
    for (Thread& t : cta.threads)
      if (t.state != ThreadState::Exited) {
        ++at[{t.pc, int(t.state)}];
        if (!first) first = &t, first_cta = &cta;
      }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", limit);
  std::string what = std::string("still running after ") + secs +
                     " s (OPENCUTE_PTX_TIME_LIMIT), a loop that may never end;";
  for (auto& [key, n] : at) {
    const Inst& i = L.kernel->code[key.first];
    what += " " + std::to_string(n) + " thread(s) " +
            (ThreadState(key.second) == ThreadState::Ready ? std::string("at") : std::string(state_name(ThreadState(key.second))) + " at") +
            " PTX line " + std::to_string(i.line) + " `" + i.text + "`;";
  }
  fail_at(L, *first_cta, *first, L.kernel->code[first->pc], what);
}

}  // namespace

void run_cluster(const Launch& L, Cluster& cl) {
  // Rounds in which every thread only blocked or spun on a failed try_wait, and nothing any wait
  // depends on changed: two in a row are a deadlock (the spinning threads can never succeed).
  int idle_rounds = 0;
  const double limit = time_limit_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (limit > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit)
      report_still_running(L, cl, limit);
    bool moved = false, any_live = false, worked = false;
    const uint64_t changes_before = cl.changes;
    int live_before = 0;
    for (Cta& cta : cl.ctas)
      for (Thread& th : cta.threads) live_before += th.state != ThreadState::Exited;
    for (Cta& cta : cl.ctas)
      for (Thread& th : cta.threads)
        if (th.state == ThreadState::Ready) {
          moved = run_thread(L, cl, cta, th) > 0 || moved;
          worked = worked || th.out_of_slice;
        }
    bool released = false;
    for (Cta& cta : cl.ctas) {
      released = run_collectives(L, cl, cta) || released;
      released = release_barriers(cta) || released;
    }
    released = release_waits(cl) || released;
    moved = moved || released;
    int live_after = 0;
    for (Cta& cta : cl.ctas)
      for (Thread& th : cta.threads) live_after += th.state != ThreadState::Exited;
    const bool idle = !released && !worked && cl.changes == changes_before && live_after == live_before;
    idle_rounds = idle ? idle_rounds + 1 : 0;
    if (idle_rounds >= 2 && live_after) report_deadlock(L, cl);
    for (Cta& cta : cl.ctas) {
      moved = run_collectives(L, cl, cta) || moved;
      moved = release_barriers(cta) || moved;
    }
    moved = release_waits(cl) || moved;
    bool ready = false;
    for (Cta& cta : cl.ctas)
      for (Thread& th : cta.threads) {
        any_live = any_live || th.state != ThreadState::Exited;
        ready = ready || th.state == ThreadState::Ready;
      }
    if (!any_live) return;
    if (!ready && !moved) report_deadlock(L, cl);
    if (!ready) {
      // Something changed (a barrier's count, a phase): give the waits another look.
      bool again = release_waits(cl);
      for (Cta& cta : cl.ctas) again = run_collectives(L, cl, cta) || release_barriers(cta) || again;
      bool now_ready = false;
      for (Cta& cta : cl.ctas)
        for (Thread& th : cta.threads) now_ready = now_ready || th.state == ThreadState::Ready;
      if (!now_ready) report_deadlock(L, cl);
    }
  }
}

}  // namespace opencute::emulator::ptx
