// The block / warp scheduler: a launch's clusters spread over a pool of host threads, the blocks
// of a cluster run together on one, their warps interleaved round-robin (each runs until it
// reaches a barrier, parks at a wait or ends; warp_interpreter.cpp runs it), barriers released,
// mbarrier waiters woken and deadlocks detected (see device_emulator.h).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "emulator/device_emulator.h"
#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"

namespace opencute::emulator {

int default_emulator_threads() {
  if (const char* e = std::getenv("OPENCUTE_EMULATOR_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

// ---- clusters: barrier.cluster bookkeeping --------------------------------------------------

void complete_cluster_barrier_if_done(ClusterState& cl) {
  if (cl.barrier_arrived > 0 && cl.barrier_arrived >= cl.live_threads) {
    ++cl.barrier_phase;
    cl.barrier_arrived = 0;
    ++cl.epoch;
  }
}

void warp_exits(Worker& w, Warp& warp) {
  ClusterState& cl = *w.cluster;
  cl.live_threads -= __builtin_popcount(warp.live);
  if (warp.cluster_arrived && warp.cluster_phase == cl.barrier_phase)
    cl.barrier_arrived -= __builtin_popcount(warp.cluster_arrived);
  warp.cluster_arrived = 0;
  ++cl.epoch;
  complete_cluster_barrier_if_done(cl);
}

namespace {

// One host thread's blocks get their registers, local and shared memory once per launch.
void prepare_worker(const LaunchCtx& c, Worker& w) {
  const auto& prog = *c.prog;
  size_t nregs = size_t(std::max(prog.num_regs, 1));
  w.regs.assign(nregs * kWarp * size_t(c.num_warps), Scalar{});
  w.local.assign(c.local_stride * kWarp * size_t(c.num_warps), 0);
  w.warps.assign(size_t(c.num_warps), Warp{});
  for (int k = 0; k < c.num_warps; ++k) {
    Warp& warp = w.warps[size_t(k)];
    warp.regs = w.regs.data() + size_t(k) * nregs * kWarp;
    warp.local = w.local.data() + size_t(k) * c.local_stride * kWarp;
    warp.index = k;
    warp.first_thread = unsigned(k * kWarp);
    unsigned n = std::min<unsigned>(kWarp, c.block_threads - warp.first_thread);
    warp.live = n == 32 ? 0xffffffffu : ((1u << n) - 1);
    warp.stack.reserve(16);
    auto fill = [&](int reg, Scalar v) {
      for (int l = 0; l < kWarp; ++l) warp.regs[size_t(reg) * kWarp + size_t(l)] = v;
    };
    for (auto& [reg, v] : prog.constants) fill(reg, v);
    for (size_t a = 0; a < prog.arg_regs.size(); ++a) fill(prog.arg_regs[a], c.req->args[a]);
  }
  w.scratch.reserve(64 * kWarp);
  w.smem_size = size_t(prog.dyn_smem_offset) + c.req->smem;
  if (w.smem_size) {
    // Byte-address swizzles (CuTe's swizzle_ptr) act on shared-window offsets, which start at 0
    // on the GPU: a 4 KiB-aligned buffer keeps the low address bits equal to those offsets.
    const size_t align = std::max<size_t>(size_t(prog.smem_align), 4096);
    w.smem_storage.assign(w.smem_size + align, 0);
    uintptr_t raw = reinterpret_cast<uintptr_t>(w.smem_storage.data());
    w.smem = reinterpret_cast<char*>((raw + align - 1) / align * align);
  }
}

// A block's state at its start: zeroed shared memory, no copies in flight, every warp at pc 0.
void start_block(const LaunchCtx& c, Worker& w) {
  if (w.smem_size) std::memset(w.smem, 0, w.smem_size);
  w.async.reset(w.smem, w.smem_size, c.block_threads);
  w.wgmma_reads.reset(reinterpret_cast<uintptr_t>(w.smem), w.smem_size, (c.block_threads + kWarp - 1) / kWarp);
  for (int b = 0; b < kNamedBarriers; ++b) w.named_arrived[b] = w.named_count[b] = 0;
  w.mbarriers.reset();
  w.tmem.reset();
  for (Warp& warp : w.warps) {
    warp.pc = 0;
    warp.mask = warp.live;
    warp.state = WarpState::Running;
    warp.stack.clear();
    warp.cluster_arrived = 0;
    warp.cluster_phase = 0;
    warp.spins = 0;
    warp.spin_epoch = 0;
    warp.tmem_pending_ld = nullptr;
    std::fill(warp.tmem_pending_regs.begin(), warp.tmem_pending_regs.end(), 0);
    warp.tmem_pending_local.clear();
    warp.tmem_pair_alloc_waiting = false;
    warp.dealloc_seen_steps = ~uint64_t(0);
  }
  w.steps = 0;
}

// Runs the blocks of one cluster to completion, their warps interleaved round-robin: a warp runs
// until it reaches a barrier, parks at a wait or ends.
void run_cluster(const LaunchCtx& c, ClusterState& cl, uint64_t linear_cluster) {
  const unsigned cc[3] = {unsigned(linear_cluster % cl.nclusters[0]),
                          unsigned((linear_cluster / cl.nclusters[0]) % cl.nclusters[1]),
                          unsigned(linear_cluster / (uint64_t(cl.nclusters[0]) * cl.nclusters[1]))};
  for (unsigned rank = 0; rank < cl.size; ++rank) {
    Worker& w = *cl.blocks[rank];
    w.rank = rank;
    w.in_cluster[0] = rank % cl.shape[0];
    w.in_cluster[1] = (rank / cl.shape[0]) % cl.shape[1];
    w.in_cluster[2] = rank / (cl.shape[0] * cl.shape[1]);
    for (int d = 0; d < 3; ++d) {
      w.cluster_id[d] = cc[d];
      w.block_idx[d] = cc[d] * cl.shape[d] + w.in_cluster[d];
    }
    start_block(c, w);
  }
  cl.barrier_arrived = cl.barrier_phase = 0;
  cl.live_threads = int64_t(cl.size) * c.block_threads;
  cl.epoch = 0;
  cl.mma_completion.reset();
  for (;;) {
    bool progress = false;
    const uint64_t epoch = cl.epoch;
    for (Worker* w : cl.blocks)
      for (Warp& warp : w->warps) {
        if (warp.state == WarpState::Running) {
          const int pc = warp.pc;
          run_warp(c, *w, warp);
          progress = true;
          if (warp.pc != pc || warp.state != WarpState::Parked) ++w->steps;
        } else if (warp.state == WarpState::Parked) {
          const int pc = warp.pc;
          warp.state = WarpState::Running;
          run_warp(c, *w, warp);
          const bool moved = warp.state != WarpState::Parked || warp.pc != pc;
          progress = progress || moved;
          if (moved) ++w->steps;
        }
      }
    // Wake the warps whose mbarrier moved (a peer CTA's arrival or a TMA landing may do it).
    for (Worker* w : cl.blocks)
      for (Warp& warp : w->warps) {
        if (warp.state == WarpState::AtMbarrier && w->mbarriers.phase_done(warp.mbar, warp.mbar_parity))
          warp.state = WarpState::Running, progress = true;
        else if (warp.state == WarpState::Spinning && warp.spin_epoch != w->mbarriers.epoch())
          warp.state = WarpState::Running, warp.spins = 0, progress = true;
      }
    progress = progress || cl.epoch != epoch;
    bool running = false, unfinished = false;
    for (Worker* w : cl.blocks) {
      int at_barrier = 0, done = 0, other = 0;
      for (const Warp& warp : w->warps) {
        if (warp.state == WarpState::AtBarrier) ++at_barrier;
        else if (warp.state == WarpState::Done) ++done;
        else ++other;
        running = running || warp.state == WarpState::Running;  // released by a named barrier
      }
      unfinished = unfinished || done != int(w->warps.size());
      if (!at_barrier || other) continue;
      if (done) report_sync_threads_deadlock(c, *w);
      // Every warp of the block is at sync_threads: release them.
      w->async.barrier();
      for (Warp& warp : w->warps) warp.state = WarpState::Running;
      running = progress = true;
    }
    if (!unfinished) {
      for (Worker* w : cl.blocks) report_mma_in_flight_at_exit(c, *w);
      for (Worker* w : cl.blocks) report_leaked_tmem(c, *w);
      return;
    }
    if (running) continue;
    if (!progress) report_deadlock(c, cl);
  }
}

}  // namespace

void DeviceEmulator::launch(const LaunchRequest& r, const EmulatorConfig& cfg) const {
  check_launch(r, kernel_.name, program_->arg_regs.size());  // grid, block, arguments, cluster shape
  const uint64_t threads = uint64_t(r.block[0]) * r.block[1] * r.block[2];
  LaunchCtx c;
  c.prog = program_.get();
  c.kernel = &kernel_.name;
  c.req = &r;
  // A kernel that makes global pointers out of integers it read (grouped GEMM's per-group
  // addresses) reaches buffers no argument describes: their extents are unknown, so trust them.
  EmulatorConfig trusting = cfg;
  trusting.strict = false;
  c.cfg = cfg.strict && forges_pointers_ ? &trusting : &cfg;
  c.block_threads = unsigned(threads);
  c.num_warps = int((threads + kWarp - 1) / kWarp);
  c.local_stride = size_t((program_->local_bytes + 15) / 16 * 16);
  unsigned shape[3] = {1, 1, 1};
  if (r.has_cluster)
    for (int d = 0; d < 3; ++d) shape[d] = r.cluster[d];
  const unsigned cluster_size = shape[0] * shape[1] * shape[2];
  const unsigned nclusters3[3] = {r.grid[0] / shape[0], r.grid[1] / shape[1], r.grid[2] / shape[2]};
  const uint64_t clusters = uint64_t(nclusters3[0]) * nclusters3[1] * nclusters3[2];
  // Clusters are launched in order from this counter; a running one may cancel the next ones
  // (cluster launch control), which are then never launched.
  std::atomic<uint64_t> next{0};
  c.next_cluster = &next;
  c.num_clusters = clusters;

  // One host thread's blocks: a cluster's worth, reused for each cluster the thread runs.
  struct ClusterRunner {
    std::vector<Worker> blocks;
    ClusterState state;
  };
  auto prepare = [&](ClusterRunner& runner) {
    runner.blocks.resize(cluster_size);
    for (int d = 0; d < 3; ++d) {
      runner.state.shape[d] = shape[d];
      runner.state.nclusters[d] = nclusters3[d];
    }
    runner.state.size = cluster_size;
    for (Worker& w : runner.blocks) {
      prepare_worker(c, w);
      w.cluster = &runner.state;
      runner.state.blocks.push_back(&w);
    }
  };

  int nthreads = cfg.threads > 0 ? cfg.threads : default_emulator_threads();
  if (has_printf_) nthreads = 1;  // output in block order
  // A cooperative grid is co-resident on the GPU (the launch checked its size): blocks may wait
  // for each other, so each cluster gets its own host thread and none waits for another to finish.
  if (r.cooperative) nthreads = int(clusters);
  nthreads = int(std::min<uint64_t>(uint64_t(nthreads), clusters));
  if (nthreads <= 1) {
    ClusterRunner runner;
    prepare(runner);
    for (uint64_t k; (k = next.fetch_add(1, std::memory_order_relaxed)) < clusters;) run_cluster(c, runner.state, k);
    return;
  }
  std::atomic<bool> failed{false};
  std::mutex err_mu;
  std::exception_ptr first_error;
  uint64_t first_error_cluster = ~uint64_t(0);
  auto body = [&]() {
    ClusterRunner runner;
    try {
      prepare(runner);
    } catch (...) {
      std::lock_guard<std::mutex> lock(err_mu);
      if (!first_error) first_error = std::current_exception();
      failed = true;
      return;
    }
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      uint64_t k = next.fetch_add(1, std::memory_order_relaxed);
      if (k >= clusters) return;
      try {
        run_cluster(c, runner.state, k);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mu);
        // Report the lowest failing cluster seen, for stable messages.
        if (k < first_error_cluster) first_error_cluster = k, first_error = std::current_exception();
        failed = true;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < nthreads; ++t) pool.emplace_back(body);
  body();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace opencute::emulator
