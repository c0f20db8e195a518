// The warp interpreter: runs one warp's instructions in lock-step over its active lanes.
#include <cstdio>
#include <cstring>

#include "emulator/device_atomics.h"
#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/sm80_copy.h"
#include "emulator/sm80_mma.h"
#include "emulator/sm90_async.h"
#include "emulator/sm90_mma.h"
#include "emulator/sm90_warp.h"

namespace opencute::emulator {

namespace {

#define FOR_LANES(m) for (uint32_t mm_ = (m); mm_; mm_ &= mm_ - 1)
#define LANE __builtin_ctz(mm_)

// Cluster special registers, barrier.cluster and mapa: they need the cluster's blocks.
// False when the warp parks (barrier.cluster.wait before the phase completed).
bool run_cluster_op(const LaunchCtx& c, Worker& w, Warp& warp, const Inst& i) {
  ClusterState& cl = *w.cluster;
  const uint32_t m = warp.mask;
  const int64_t attr = i.imm & 0xffffffff, extra = i.imm >> 32;
  Scalar* R = warp.regs;
  auto at = [R](int reg, int lane) -> Scalar& { return R[size_t(reg) * kWarp + size_t(lane)]; };
  if (!m) return true;
  const int l0 = __builtin_ctz(m);
  switch (i.code) {
    case OpCode::ClusterSreg: {
      const int d = int(extra);
      int64_t v = 0;
      switch (ir::ClusterSregKind(attr)) {
        case ir::ClusterSregKind::ClusterIdx: v = w.cluster_id[d]; break;
        case ir::ClusterSregKind::ClusterDim: v = cl.nclusters[d]; break;
        case ir::ClusterSregKind::BlockInCluster: v = w.in_cluster[d]; break;
        case ir::ClusterSregKind::BlockInClusterDim: v = cl.shape[d]; break;
        case ir::ClusterSregKind::CtaRank: v = w.rank; break;
        case ir::ClusterSregKind::ClusterSize: v = cl.size; break;
      }
      FOR_LANES(m) at(i.dst, LANE).i = v;
      return true;
    }
    case OpCode::ClusterBarrier: {
      const bool aligned = extra != 0;
      if (aligned && m != warp.live)
        fail_at(c, w, warp, l0, i, std::string(ir::ClusterBarrierKind(attr) == ir::ClusterBarrierKind::Wait
                                                   ? "cluster_wait" : "cluster_arrive") +
                                       " (aligned) executed by only some threads of the warp (lanes " + hex(m) +
                                       " of " + hex(warp.live) + "); every thread of the warp must execute it together");
      if (ir::ClusterBarrierKind(attr) != ir::ClusterBarrierKind::Wait) {
        if (warp.cluster_arrived & m)
          fail_at(c, w, warp, __builtin_ctz(warp.cluster_arrived & m), i,
                  "cluster_arrive twice without a cluster_wait in between");
        warp.cluster_arrived |= m;
        warp.cluster_phase = cl.barrier_phase;
        cl.barrier_arrived += __builtin_popcount(m);
        ++cl.epoch;
        complete_cluster_barrier_if_done(cl);
        return true;
      }
      if ((warp.cluster_arrived & m) != m)
        fail_at(c, w, warp, __builtin_ctz(m & ~warp.cluster_arrived), i,
                "cluster_wait by a thread that did not cluster_arrive first");
      if (cl.barrier_phase > warp.cluster_phase) {
        warp.cluster_arrived &= ~m;
        return true;
      }
      warp.state = WarpState::Parked;
      return false;
    }
    case OpCode::MapSharedRank:
      FOR_LANES(m) {
        int l = LANE;
        const uintptr_t p = uintptr_t(at(i.a, l).i);
        const int64_t rank = at(i.b, l).i;
        if (rank < 0 || rank >= int64_t(cl.size))
          fail_at(c, w, warp, l, i, "map_dsmem_ptr to CTA rank " + std::to_string(rank) + ", but the cluster has " +
                                        std::to_string(cl.size) + " CTA(s)");
        const Worker* from = in_smem(w, p, 1) ? &w : cluster_block_holding(w, p, 1);
        if (!from)
          fail_at(c, w, warp, l, i, "map_dsmem_ptr of address " + hex(p) + ", which is not in shared memory");
        const Worker* to = cl.blocks[size_t(rank)];
        at(i.dst, l).i = int64_t(reinterpret_cast<uintptr_t>(to->smem) + (p - reinterpret_cast<uintptr_t>(from->smem)));
      }
      return true;
    default:
      fail_at(c, w, warp, l0, i, std::string("not a cluster op: ") + ir::opcode_name(i.code));
  }
}

}  // namespace

// Runs a warp until it reaches a barrier or returns.
void run_warp(const LaunchCtx& c, Worker& w, Warp& warp) {
  const Inst* code = c.prog->code.data();
  Scalar* R = warp.regs;
  auto at = [R](int reg, int lane) -> Scalar& { return R[size_t(reg) * kWarp + size_t(lane)]; };
  std::string err;
  for (;;) {
    const Inst& i = code[warp.pc];
    const uint32_t m = warp.mask;
    switch (i.kind) {
      case K::AddI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) + uint32_t(b[l].i)); } }
        else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(a[l].i) + uint32_t(b[l].i); } }
        break;
      }
      case K::SubI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) - uint32_t(b[l].i)); } }
        else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(uint32_t(a[l].i) - uint32_t(b[l].i)); } }
        break;
      }
      case K::MulI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) * uint32_t(b[l].i)); } }
        else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(a[l].i) * uint32_t(b[l].i); } }
        break;
      }
      case K::AddF32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        FOR_LANES(m) { int l = LANE; d[l].f = double(float(a[l].f + b[l].f)); }
        break;
      }
      case K::MulF32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        FOR_LANES(m) { int l = LANE; d[l].f = double(float(a[l].f * b[l].f)); }
        break;
      }
      case K::Binary:
        for (int k = 0; k < i.width; ++k) {
          FOR_LANES(m) {
            int l = LANE;
            if (!ir::eval_binary(i.code, i.type, at(i.a + k, l), at(i.b + k, l), &at(i.dst + k, l), &err))
              fail_at(c, w, warp, l, i, err);
          }
        }
        break;
      case K::Unary:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = ir::eval_unary(i.code, i.type, at(i.a + k, l)); }
        break;
      case K::CmpI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        auto p = ir::CmpPredicate(i.imm);
        if (i.in_type->is_signed) {
          FOR_LANES(m) {
            int l = LANE;
            int32_t x = int32_t(a[l].i), y = int32_t(b[l].i);
            bool r;
            switch (p) {
              case ir::CmpPredicate::Eq: r = x == y; break;
              case ir::CmpPredicate::Ne: r = x != y; break;
              case ir::CmpPredicate::Lt: r = x < y; break;
              case ir::CmpPredicate::Le: r = x <= y; break;
              case ir::CmpPredicate::Gt: r = x > y; break;
              default: r = x >= y; break;
            }
            d[l].i = r;
          }
        } else {
          FOR_LANES(m) { int l = LANE; d[l].i = ir::eval_cmp(p, i.in_type, a[l], b[l]); }
        }
        break;
      }
      case K::Cmp:
        for (int k = 0; k < i.width; ++k)
          FOR_LANES(m) { int l = LANE; at(i.dst + k, l).i = ir::eval_cmp(ir::CmpPredicate(i.imm), i.in_type, at(i.a + k, l), at(i.b + k, l)); }
        break;
      case K::Select:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a, l).i ? at(i.b + k, l) : at(i.c + k, l); }
        break;
      case K::Cast:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = ir::eval_cast(i.in_type, i.type, at(i.a + k, l)); }
        break;
      case K::Bitcast:
        FOR_LANES(m) { int l = LANE; at(i.dst, l) = ir::eval_bitcast(i.in_type, i.type, at(i.a, l)); }
        break;
      case K::Fma:
        for (int k = 0; k < i.width; ++k)
          FOR_LANES(m) {
            int l = LANE;
            at(i.dst + k, l) = Scalar::of_float(ir::round_float(i.type, at(i.a + k, l).f * at(i.b + k, l).f + at(i.c + k, l).f));
          }
        break;
      case K::Math:
        FOR_LANES(m) {
          int l = LANE;
          w.math_args.resize(i.srcs.size());
          for (size_t k = 0; k < i.srcs.size(); ++k) w.math_args[k] = at(i.srcs[k], l);
          if (!ir::eval_math(i.op->str_attr, i.type, w.math_args, &at(i.dst, l)))
            fail_at(c, w, warp, l, i, "unknown math function " + i.op->str_attr);
        }
        break;
      case K::PtrAdd:
        if (i.imm >= 0) {
          FOR_LANES(m) { int l = LANE; at(i.dst, l).i = at(i.a, l).i + at(i.b, l).i * i.imm; }
        } else {  // packed sub-byte elements: -imm bits each
          FOR_LANES(m) { int l = LANE; at(i.dst, l).i = at(i.a, l).i + ((at(i.b, l).i * -i.imm) >> 3); }
        }
        break;
      case K::Move:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a + k, l); }
        break;
      case K::PMove: {
        const size_t n = i.srcs.size();
        w.scratch.resize(n * kWarp);
        for (size_t k = 0; k < n; ++k) std::memcpy(&w.scratch[k * kWarp], &at(i.srcs[k], 0), sizeof(Scalar) * kWarp);
        for (size_t k = 0; k < n; ++k) {
          Scalar* d = &at(i.dsts[k], 0);
          const Scalar* s = &w.scratch[k * kWarp];
          if (m == 0xffffffffu) std::memcpy(d, s, sizeof(Scalar) * kWarp);
          else FOR_LANES(m) { int l = LANE; d[l] = s[l]; }
        }
        break;
      }
      case K::Load: {
        if (i.imm < 0) {  // packed sub-byte elements (whole bytes: the IR builder's vectors)
          const size_t bytes = (size_t(-i.imm) * size_t(i.width) + 7) / 8;
          FOR_LANES(m) {
            int l = LANE;
            uintptr_t p = uintptr_t(at(i.a, l).i);
            check_access(c, w, warp, l, i, p, bytes, false);
            for (int k = 0; k < i.width; ++k) at(i.dst + k, l) = ir::load_packed_scalar(i.type, reinterpret_cast<const void*>(p), k);
          }
          break;
        }
        const size_t bytes = size_t(i.imm) * size_t(i.width);
        FOR_LANES(m) {
          int l = LANE;
          uintptr_t p = uintptr_t(at(i.a, l).i);
          check_access(c, w, warp, l, i, p, bytes, false);
          for (int k = 0; k < i.width; ++k)
            at(i.dst + k, l) = ir::load_scalar(i.type, reinterpret_cast<const void*>(p + uintptr_t(k * i.imm)));
        }
        break;
      }
      case K::Store: {
        if (i.imm < 0) {
          const size_t bytes = (size_t(-i.imm) * size_t(i.width) + 7) / 8;
          FOR_LANES(m) {
            int l = LANE;
            uintptr_t p = uintptr_t(at(i.b, l).i);
            check_access(c, w, warp, l, i, p, bytes, true);
            for (int k = 0; k < i.width; ++k) ir::store_packed_scalar(i.type, at(i.a + k, l), reinterpret_cast<void*>(p), k);
          }
          break;
        }
        const size_t bytes = size_t(i.imm) * size_t(i.width);
        FOR_LANES(m) {
          int l = LANE;
          uintptr_t p = uintptr_t(at(i.b, l).i);
          check_access(c, w, warp, l, i, p, bytes, true);
          for (int k = 0; k < i.width; ++k)
            ir::store_scalar(i.type, at(i.a + k, l), reinterpret_cast<void*>(p + uintptr_t(k * i.imm)));
        }
        break;
      }
      case K::Alloca:
        FOR_LANES(m) {
          int l = LANE;
          at(i.dst, l).i = int64_t(reinterpret_cast<uintptr_t>(warp.local) + uintptr_t(l) * c.local_stride + uintptr_t(i.imm));
        }
        break;
      case K::VecInsert:
        FOR_LANES(m) {
          int l = LANE;
          for (int k = 0; k < i.width; ++k) at(i.dst + k, l) = at(i.a + k, l);
          at(i.dst + int(i.imm), l) = at(i.b, l);
        }
        break;
      case K::VecSplat:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a, l); }
        break;
      case K::Special: {
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
        break;
      }
      case K::Printf:
        FOR_LANES(m) {
          int l = LANE;
          w.printf_vals.resize(i.srcs.size());
          for (size_t k = 0; k < i.srcs.size(); ++k) w.printf_vals[k] = at(i.srcs[k], l);
          w.text.clear();
          format_printf(i.op->str_attr, i.types, w.printf_vals, &w.text);
          std::fwrite(w.text.data(), 1, w.text.size(), stdout);
        }
        std::fflush(stdout);
        break;
      case K::Shuffle: {
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
        break;
      }
      case K::MmaSync: {
        std::string e = run_mma_sync(i, m, R);
        if (!e.empty()) fail_at(c, w, warp, __builtin_ctz(m ? m : 1u), i, e);
        break;
      }
      case K::Wgmma: {
        // Operands still being filled by a TMA load (their mbarrier phase not waited for) are a race.
        std::function<std::string(uintptr_t, size_t)> filling;
        if (w.mbarriers.any_filling())
          filling = [&](uintptr_t addr, size_t bytes) { return w.mbarriers.check_filling(addr, bytes, w.smem); };
        std::string e = run_wgmma(i, m, R, warp.first_thread / kWarp, reinterpret_cast<uintptr_t>(w.smem),
                                  w.smem_size, w.wgmma_reads, filling);
        if (!e.empty()) fail_at(c, w, warp, __builtin_ctz(m ? m : 1u), i, e);
        break;
      }
      case K::Vote: {
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
        break;
      }
      case K::Atomic: {
        const auto kind = ir::AtomicKind(i.imm);
        const size_t bytes = size_t(i.type->byte_size());
        // Lanes update one after another, in lane order: one of the orders the GPU may pick.
        FOR_LANES(m) {
          int l = LANE;
          uintptr_t p = uintptr_t(at(i.a, l).i);
          check_access(c, w, warp, l, i, p, bytes, true);
          Scalar cmp = i.c >= 0 ? at(i.c, l) : Scalar{};
          at(i.dst, l) = atomic_update(kind, i.type, reinterpret_cast<void*>(p), at(i.b, l), cmp);
        }
        break;
      }
      case K::SmemAddr: {
        const int64_t a = int64_t(reinterpret_cast<uintptr_t>(w.smem)) + i.imm;
        FOR_LANES(m) { int l = LANE; at(i.dst, l).i = a; }
        break;
      }
      case K::Assert:
        FOR_LANES(m) {
          int l = LANE;
          if (!at(i.a, l).i) report_assertion(c, w, warp, l, i);
        }
        break;
      case K::Sm80Copy: {
        Sm80WarpContext ctx;
        ctx.regs = R;
        ctx.mask = m;
        ctx.first_thread = warp.first_thread;
        ctx.async = &w.async;
        ctx.check = [&](int lane, uintptr_t addr, size_t bytes, bool store, bool smem) {
          if (smem && !in_smem(w, addr, bytes))
            fail_at(c, w, warp, lane, i, std::string("a ") + ir::opcode_name(i.code) + " shared-memory address " +
                                             hex(addr) + " (" + std::to_string(bytes) +
                                             " bytes) lies outside the block's shared memory");
          if (addr % std::min<size_t>(bytes, 16))
            fail_at(c, w, warp, lane, i, std::string("misaligned ") + ir::opcode_name(i.code) + " address " +
                                             hex(addr) + ": not a multiple of " + std::to_string(std::min<size_t>(bytes, 16)));
          if (smem && store && w.wgmma_reads.active()) {
            std::string race = w.wgmma_reads.check_store(addr, bytes);
            if (!race.empty()) fail_at(c, w, warp, lane, i, race);
          }
          Inst probe = i;
          probe.space = smem ? ir::AddrSpace::Smem : ir::AddrSpace::Generic;
          if (!smem) check_access(c, w, warp, lane, probe, addr, bytes, store);
        };
        ctx.fail = [&](int lane, const std::string& what) { fail_at(c, w, warp, lane, i, what); };
        execute_sm80_copy(i, ctx);
        break;
      }
      case K::Sm90Warp: {
        int bad = 0;
        std::string e = execute_sm90_warp(i, R, m, warp.live, &bad);
        if (!e.empty()) fail_at(c, w, warp, bad, i, e);
        break;
      }
      case K::Cluster:
        if (!run_cluster_op(c, w, warp, i)) return;  // parked at barrier.cluster.wait
        break;
      case K::Sm90Async: {
        Sm90WarpContext ctx;
        ctx.regs = R;
        ctx.mask = m;
        ctx.table = &w.mbarriers;
        ctx.smem = w.smem;
        ctx.smem_size = w.smem_size;
        // The CTA of rank `rank` in this cluster (without a cluster, a block is rank 0 of one).
        ctx.peer = [&](int64_t rank) -> std::pair<char*, MbarrierTable*> {
          if (rank < 0 || rank >= int64_t(w.cluster->size)) return {nullptr, nullptr};
          Worker* b = w.cluster->blocks[size_t(rank)];
          return {b->smem, &b->mbarriers};
        };
        ctx.fail = [&](int lane, const std::string& what) { fail_at(c, w, warp, lane, i, what); };
        ctx.check_global = [&](int lane, uintptr_t addr, size_t bytes, bool store) {
          check_access(c, w, warp, lane, i, addr, bytes, store);
        };
        // A TMA load refilling shared memory that a wgmma in flight (not yet retired by its
        // warpgroup's wait_group) still reads: on the GPU the MMA may read the new bytes.
        ctx.check_smem_fill = [&](int lane, const char* smem, uintptr_t begin, size_t bytes) {
          for (Worker* b : w.cluster->blocks)
            if (b->smem == smem && b->wgmma_reads.active()) {
              std::string race = b->wgmma_reads.check_store(begin, bytes);
              if (!race.empty()) fail_at(c, w, warp, lane, i, "a TMA load overwrites shared memory: " + race);
            }
        };
        const AsyncStep step = execute_sm90_async(i, ctx);
        if (step == AsyncStep::Continue) break;
        warp.mbar = ctx.wait_addr;
        warp.mbar_parity = ctx.wait_parity;
        warp.mbar_wait = &i;
        if (step == AsyncStep::Block) {  // re-runs the wait when woken
          warp.state = WarpState::AtMbarrier;
          return;
        }
        // A failed try/test wait: let the other warps run. Failing again and again while no
        // barrier changes parks the warp until one does (a spin loop cannot hang the emulator).
        const uint64_t epoch = w.mbarriers.epoch();
        warp.spins = warp.spin_epoch == epoch ? warp.spins + 1 : 1;
        warp.spin_epoch = epoch;
        if (warp.spins >= 3) warp.state = WarpState::Spinning;
        warp.pc++;
        return;
      }
      case K::Barrier:
        warp.pc++;
        warp.state = WarpState::AtBarrier;
        return;
      case K::NamedBarrier: {
        // PTX bar.sync / bar.arrive: the warp counts as 32 threads; the barrier completes when
        // `count` threads arrived, releasing the warps that wait at it.
        if (!m) break;
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
        if (warp.state != WarpState::Running) return;
        continue;
      }
      case K::If: {
        uint32_t t = 0;
        FOR_LANES(m) { int l = LANE; if (at(i.a, l).i) t |= 1u << l; }
        warp.stack.push_back({m, m & ~t});
        warp.mask = t;
        if (!t) { warp.pc = i.target; continue; }
        break;
      }
      case K::Else:
        warp.mask = warp.stack.back().other;
        if (!warp.mask) { warp.pc = i.target; continue; }
        break;
      case K::EndIf:
      case K::LoopEnd:
        warp.mask = warp.stack.back().saved;
        warp.stack.pop_back();
        break;
      case K::LoopBegin:
        warp.stack.push_back({m, 0});
        break;
      case K::ForTest: {
        uint32_t keep = 0;
        FOR_LANES(m) {
          int l = LANE;
          const Scalar& st = at(i.c, l);
          if (st.i == 0) fail_at(c, w, warp, l, i, "a for loop with a zero step");
          bool up = ir::eval_cmp(ir::CmpPredicate::Gt, i.in_type, st, Scalar::of_int(0));
          if (ir::eval_cmp(up ? ir::CmpPredicate::Lt : ir::CmpPredicate::Gt, i.in_type, at(i.a, l), at(i.b, l)))
            keep |= 1u << l;
        }
        warp.mask = keep;
        if (!keep) { warp.pc = i.target; continue; }
        break;
      }
      case K::ForStep:
        FOR_LANES(m) {
          int l = LANE;
          ir::eval_binary(OpCode::Add, i.in_type, at(i.a, l), at(i.b, l), &at(i.a, l), nullptr);
        }
        break;
      case K::WhileTest: {
        uint32_t keep = 0;
        FOR_LANES(m) { int l = LANE; if (at(i.a, l).i) keep |= 1u << l; }
        warp.mask = keep;
        if (!keep) { warp.pc = i.target; continue; }
        break;
      }
      case K::Jump:
        warp.pc = i.target;
        continue;
      case K::Return:
        warp.state = WarpState::Done;
        warp_exits(w, warp);
        return;
    }
    warp.pc++;
  }
}

#undef FOR_LANES
#undef LANE

}  // namespace opencute::emulator
