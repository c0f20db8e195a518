#include "emulator/device_emulator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "emulator/device_atomics.h"
#include "emulator/device_program.h"
#include "emulator/sm80_mma.h"
#include "emulator/sm80_copy.h"
#include "emulator/sm90_mma.h"

namespace opencute::emulator {

int default_emulator_threads() {
  if (const char* e = std::getenv("OPENCUTE_EMULATOR_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

// ---- execution ---------------------------------------------------------------------------

namespace {

struct MaskEntry {
  uint32_t saved;  // mask at entry of the if / loop
  uint32_t other;  // the else-side mask of an if
};

enum class WarpState : uint8_t { Running, AtBarrier, AtNamedBarrier, Done };
constexpr int kNamedBarriers = 16;

struct Warp {
  int pc = 0;
  uint32_t mask = 0, live = 0;
  WarpState state = WarpState::Running;
  std::vector<MaskEntry> stack;
  Scalar* regs = nullptr;  // num_regs * 32
  char* local = nullptr;   // 32 * local_stride bytes
  unsigned first_thread = 0;
  int index = 0;
  int barrier_id = -1;  // the named barrier a warp in AtNamedBarrier waits at
};

// One host thread's state: registers and local memory for every warp of a block, reused for
// every block that thread runs.
struct Worker {
  std::vector<Scalar> regs;
  std::vector<char> local;
  std::vector<Warp> warps;
  std::vector<char> smem_storage;
  char* smem = nullptr;  // the block's shared memory, aligned to Program::smem_align
  size_t smem_size = 0;
  std::vector<Scalar> scratch;
  std::vector<Scalar> math_args;
  std::vector<Scalar> printf_vals;
  std::string text;
  unsigned block_idx[3] = {0, 0, 0};
  AsyncCopyTracker async;  // cp.async in flight in the block (emulator/sm80_copy.h)
  WgmmaReadTracker wgmma_reads;  // shared memory that wgmma in flight still read (emulator/sm90_mma.h)
  // Named barriers of the running block: threads arrived so far and the count that completes it.
  int64_t named_arrived[kNamedBarriers] = {};
  int64_t named_count[kNamedBarriers] = {};
};

struct LaunchCtx {
  const DeviceEmulator::Program* prog;
  const std::string* kernel;
  const LaunchRequest* req;
  const EmulatorConfig* cfg;
  unsigned block_threads;
  int num_warps;
  size_t local_stride;
};

std::string hex(uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)a);
  return buf;
}

std::string dims3(const unsigned d[3]) {
  return "(" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + ")";
}

void thread_coords(const LaunchCtx& c, unsigned lin, unsigned out[3]) {
  out[0] = lin % c.req->block[0];
  out[1] = (lin / c.req->block[0]) % c.req->block[1];
  out[2] = lin / (c.req->block[0] * c.req->block[1]);
}

std::string where(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i) {
  unsigned t[3];
  thread_coords(c, warp.first_thread + unsigned(lane), t);
  std::string s = "in kernel '" + *c.kernel + "'";
  if (i.op && i.op->line) s += " (line " + std::to_string(i.op->line) + ")";
  s += ", block " + dims3(w.block_idx) + " thread " + dims3(t);
  return s;
}

[[noreturn]] void fail_at(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                          const std::string& what) {
  throw ExecutionError(what + " " + where(c, w, warp, lane, i));
}

[[noreturn]] void bad_access(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                             uintptr_t addr, size_t bytes, bool store, bool misaligned) {
  std::string what = std::string(misaligned ? "misaligned " : "out-of-bounds ") + (store ? "store" : "load") +
                     " of " + std::to_string(bytes) + " bytes at address " + hex(addr) + " " +
                     where(c, w, warp, lane, i);
  if (misaligned) {
    what += ": the address is not a multiple of " + std::to_string(bytes);
  } else {
    const MemoryRegion* nearest = nullptr;
    uintptr_t best = ~uintptr_t(0);
    for (const MemoryRegion& r : *c.cfg->regions) {
      uintptr_t d = addr < r.begin ? r.begin - addr : (addr >= r.end ? addr - r.end : 0);
      if (d < best) best = d, nearest = &r;
    }
    what += ": it lies outside every buffer the kernel was given";
    if (nearest) {
      if (addr >= nearest->end)
        what += " (" + std::to_string(addr - nearest->end) + " bytes past the end of " + nearest->name;
      else if (addr + bytes > nearest->end)
        what += " (it runs over the end of " + nearest->name;
      else
        what += " (" + std::to_string(nearest->begin - addr) + " bytes before the start of " + nearest->name;
      what += ", " + std::to_string(nearest->end - nearest->begin) + " bytes at " + hex(nearest->begin) + ")";
    }
  }
  throw ExecutionError(what);
}

inline bool in_smem(const Worker& w, uintptr_t addr, size_t bytes) {
  uintptr_t sb = reinterpret_cast<uintptr_t>(w.smem);
  return w.smem_size && addr >= sb && addr + bytes <= sb + w.smem_size;
}

inline void check_access(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                         uintptr_t addr, size_t bytes, bool store) {
  if (addr == 0) fail_at(c, w, warp, lane, i, std::string("a ") + (store ? "store" : "load") + " through a null pointer");
  if (w.async.active() && in_smem(w, addr, bytes)) {
    std::string race = w.async.check(warp.first_thread + unsigned(lane), addr, bytes, store);
    if (!race.empty()) fail_at(c, w, warp, lane, i, race);
  }
  if (store && w.wgmma_reads.active()) {
    std::string race = w.wgmma_reads.check_store(addr, bytes);
    if (!race.empty()) fail_at(c, w, warp, lane, i, race);
  }
  if ((bytes & (bytes - 1)) == 0 && (addr & (std::min<size_t>(bytes, 16) - 1)) != 0)
    bad_access(c, w, warp, lane, i, addr, bytes, store, true);
  // A shared-memory pointer must stay inside the block's shared memory, known or not to the launch.
  if (i.space == ir::AddrSpace::Smem) {
    if (in_smem(w, addr, bytes)) return;
    uintptr_t sb = reinterpret_cast<uintptr_t>(w.smem);
    std::string off = addr >= sb ? "offset " + std::to_string(addr - sb) : std::to_string(sb - addr) + " bytes before it";
    fail_at(c, w, warp, lane, i, std::string("out-of-bounds shared-memory ") + (store ? "store" : "load") + " of " +
                                     std::to_string(bytes) + " bytes at " + off + " of the block's " +
                                     std::to_string(w.smem_size) + " bytes of shared memory (" +
                                     std::to_string(c.prog->static_smem_bytes) + " static, " +
                                     std::to_string(c.req->smem) + " dynamic)");
  }
  // The thread's own local arrays.
  uintptr_t lb = reinterpret_cast<uintptr_t>(warp.local) + uintptr_t(lane) * c.local_stride;
  if (addr >= lb && addr + bytes <= lb + c.local_stride) return;
  if (!c.cfg->regions) return;
  for (const MemoryRegion& r : *c.cfg->regions)
    if (addr >= r.begin && addr + bytes <= r.end) return;
  if (in_smem(w, addr, bytes)) return;
  if (c.cfg->strict) bad_access(c, w, warp, lane, i, addr, bytes, store, false);
}

#define FOR_LANES(m) for (uint32_t mm_ = (m); mm_; mm_ &= mm_ - 1)
#define LANE __builtin_ctz(mm_)

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
        std::string e = run_wgmma(i, m, R, warp.first_thread / kWarp, reinterpret_cast<uintptr_t>(w.smem),
                                  w.smem_size, w.wgmma_reads);
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
          if (at(i.a, l).i) continue;
          unsigned t[3];
          thread_coords(c, warp.first_thread + unsigned(l), t);
          const ir::Op& op = *i.op;
          throw AssertionFailure("device assertion failed in kernel '" + *c.kernel + "', block " + dims3(w.block_idx) +
                                     " thread " + dims3(t) + ": " + op.str_attr + " (" + op.file + ":" +
                                     std::to_string(op.line) + ")",
                                 op.file, op.line);
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
        return;
    }
    warp.pc++;
  }
}

#undef FOR_LANES
#undef LANE

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

void run_block(const LaunchCtx& c, Worker& w, uint64_t linear_block) {
  const unsigned* g = c.req->grid;
  w.block_idx[0] = unsigned(linear_block % g[0]);
  w.block_idx[1] = unsigned((linear_block / g[0]) % g[1]);
  w.block_idx[2] = unsigned(linear_block / (uint64_t(g[0]) * g[1]));
  if (w.smem_size) std::memset(w.smem, 0, w.smem_size);
  w.async.reset(w.smem, w.smem_size, c.block_threads);
  w.wgmma_reads.reset(reinterpret_cast<uintptr_t>(w.smem), w.smem_size, (c.block_threads + kWarp - 1) / kWarp);
  for (int b = 0; b < kNamedBarriers; ++b) w.named_arrived[b] = w.named_count[b] = 0;
  for (Warp& warp : w.warps) {
    warp.pc = 0;
    warp.mask = warp.live;
    warp.state = WarpState::Running;
    warp.stack.clear();
  }
  for (;;) {
    int waiting = 0, done = 0, running = 0, named = 0;
    for (Warp& warp : w.warps)
      if (warp.state == WarpState::Running) run_warp(c, w, warp);
    for (const Warp& warp : w.warps) {
      if (warp.state == WarpState::AtBarrier) ++waiting;
      else if (warp.state == WarpState::AtNamedBarrier) ++named;
      else if (warp.state == WarpState::Running) ++running;  // released by a named barrier
      else ++done;
    }
    if (running) continue;
    if (named) {
      std::string stuck;
      for (const Warp& warp : w.warps)
        if (warp.state == WarpState::AtNamedBarrier)
          stuck += (stuck.empty() ? "" : ", ") + std::to_string(warp.index) + " at barrier " +
                   std::to_string(warp.barrier_id) + " (" + std::to_string(w.named_arrived[warp.barrier_id]) + " of " +
                   std::to_string(w.named_count[warp.barrier_id]) + " threads arrived)";
      throw ExecutionError("named barrier deadlock in kernel '" + *c.kernel + "', block " + dims3(w.block_idx) +
                           ": warp(s) " + stuck + " wait, and no other warp can arrive");
    }
    if (!waiting) return;
    if (done) {
      std::string finished, stuck;
      for (const Warp& warp : w.warps) {
        std::string& s = warp.state == WarpState::Done ? finished : stuck;
        s += (s.empty() ? "" : ",") + std::to_string(warp.index);
      }
      throw ExecutionError("sync_threads deadlock in kernel '" + *c.kernel + "', block " + dims3(w.block_idx) +
                           ": warp(s) " + finished + " finished while warp(s) " + stuck +
                           " wait at a barrier (a barrier inside divergent control flow?)");
    }
    w.async.barrier();
    for (Warp& warp : w.warps) warp.state = WarpState::Running;
  }
}

}  // namespace

void DeviceEmulator::launch(const LaunchRequest& r, const EmulatorConfig& cfg) const {
  for (int d = 0; d < 3; ++d)
    if (r.grid[d] == 0 || r.block[d] == 0)
      throw ExecutionError("kernel '" + kernel_.name + "' launched with an empty grid or block " + dims3(r.grid) +
                           " x " + dims3(r.block));
  uint64_t threads = uint64_t(r.block[0]) * r.block[1] * r.block[2];
  if (threads > 1024)
    throw ExecutionError("kernel '" + kernel_.name + "' launched with " + std::to_string(threads) +
                         " threads per block; at most 1024 are allowed");
  if (r.num_args != program_->arg_regs.size())
    throw ExecutionError("kernel '" + kernel_.name + "' expects " + std::to_string(program_->arg_regs.size()) +
                         " arguments, got " + std::to_string(r.num_args));
  LaunchCtx c;
  c.prog = program_.get();
  c.kernel = &kernel_.name;
  c.req = &r;
  c.cfg = &cfg;
  c.block_threads = unsigned(threads);
  c.num_warps = int((threads + kWarp - 1) / kWarp);
  c.local_stride = size_t((program_->local_bytes + 15) / 16 * 16);
  const uint64_t blocks = uint64_t(r.grid[0]) * r.grid[1] * r.grid[2];

  int nthreads = cfg.threads > 0 ? cfg.threads : default_emulator_threads();
  if (has_printf_) nthreads = 1;  // output in block order
  // A cooperative grid is co-resident on the GPU (the launch checked its size): blocks may wait
  // for each other, so each gets its own host thread and none waits for another to finish.
  if (r.cooperative) nthreads = int(blocks);
  nthreads = int(std::min<uint64_t>(uint64_t(nthreads), blocks));
  if (nthreads <= 1) {
    Worker w;
    prepare_worker(c, w);
    for (uint64_t b = 0; b < blocks; ++b) run_block(c, w, b);
    return;
  }
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex err_mu;
  std::exception_ptr first_error;
  uint64_t first_error_block = ~uint64_t(0);
  auto body = [&]() {
    Worker w;
    try {
      prepare_worker(c, w);
    } catch (...) {
      std::lock_guard<std::mutex> lock(err_mu);
      if (!first_error) first_error = std::current_exception();
      failed = true;
      return;
    }
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      uint64_t b = next.fetch_add(1, std::memory_order_relaxed);
      if (b >= blocks) return;
      try {
        run_block(c, w, b);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mu);
        // Report the lowest failing block seen, for stable messages.
        if (b < first_error_block) first_error_block = b, first_error = std::current_exception();
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
