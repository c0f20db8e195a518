#include "emulator/sm90_mma.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"
#include "ir/scalar_semantics.h"
#include "ir/wgmma_element.h"
#include "support/fp8.h"
#include "support/half.h"

namespace opencute::emulator {

namespace {

// Swizzle bits (0: none, 1: 32 B, 2: 64 B, 3: 128 B) of a descriptor's layout type field.
int swizzle_bits(uint64_t desc) {
  switch (desc >> 62) {
    case 1: return 3;
    case 2: return 2;
    case 3: return 1;
    default: return 0;
  }
}

double read_element(int64_t code, uintptr_t addr) {
  const void* p = reinterpret_cast<const void*>(addr);
  if (code == ir::kWgmmaElementS8) return double(*static_cast<const int8_t*>(p));
  if (code == ir::kWgmmaElementU8) return double(*static_cast<const uint8_t*>(p));
  switch (ir::FloatKind(code)) {
    case ir::FloatKind::F16: { uint16_t h; std::memcpy(&h, p, 2); return support::half_bits_to_float(h); }
    case ir::FloatKind::BF16: { uint16_t h; std::memcpy(&h, p, 2); return support::bf16_bits_to_float(h); }
    case ir::FloatKind::E4M3: return support::fp8_bits_to_float(*static_cast<const uint8_t*>(p), support::e4m3_format());
    case ir::FloatKind::E5M2: return support::fp8_bits_to_float(*static_cast<const uint8_t*>(p), support::e5m2_format());
    default: return 0;
  }
}

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

uintptr_t wgmma_operand_address(uint64_t desc, bool mn_major, int element_bits, int64_t mn, int64_t k,
                                uintptr_t smem, size_t smem_size) {
  const uint64_t start = (desc & 0x3FFF) << 4, lbo = ((desc >> 16) & 0x3FFF) << 4, sbo = ((desc >> 32) & 0x3FFF) << 4;
  const int b = swizzle_bits(desc);
  const uint64_t row = uint64_t(16) << b;  // bytes of a swizzle row (16 without swizzle)
  const uint64_t eb = uint64_t(element_bits) / 8;
  uint64_t off;
  if (!mn_major) {
    // K-major: 8 rows of `row` bytes form a core block, 8-row groups SBO apart; the 16-byte
    // chunks of K follow each other inside a swizzle row, or LBO apart without swizzle.
    const uint64_t kb = uint64_t(k) * eb;
    off = uint64_t(mn % 8) * row + uint64_t(mn / 8) * sbo + kb % 16 + (kb / 16) * (b ? 16 : lbo);
  } else if (b) {
    // MN-major, swizzled: `row` bytes of MN per K row, MN atoms LBO apart, 8-row groups of K SBO apart.
    const uint64_t mb = uint64_t(mn) * eb;
    off = mb % row + (mb / row) * lbo + uint64_t(k % 8) * row + uint64_t(k / 8) * sbo;
  } else {
    // MN-major, not swizzled: 16-byte MN chunks SBO apart, K rows 16 bytes apart, 8-row groups LBO apart.
    const uint64_t mb = uint64_t(mn) * eb;
    off = mb % 16 + (mb / 16) * sbo + uint64_t(k % 8) * 16 + uint64_t(k / 8) * lbo;
  }
  // The descriptor keeps address bits [4, 18): find the address inside the block's shared memory.
  uintptr_t base = (smem & ~uintptr_t(0x3FFFF)) | uintptr_t(start);
  if (base < smem) base += 0x40000;
  uintptr_t addr = base + uintptr_t(off);
  // The swizzle XORs address bits [7, 7+b) into [4, 4+b) (Swizzle<b,4,3> on the byte address).
  addr ^= (addr >> 3) & (((uintptr_t(1) << b) - 1) << 4);
  if (addr < smem || addr + eb > smem + smem_size) return 0;
  return addr;
}

void WgmmaReadTracker::reset(uintptr_t smem, size_t smem_size, unsigned warps) {
  active_ = false;
  smem_ = smem;
  readers_.assign(smem_size, 0);
  line_.assign(smem_size, 0);
  groups_.assign(warps, {});
}

void WgmmaReadTracker::issue(unsigned warp, const std::vector<uintptr_t>& addrs, int bytes, int line) {
  active_ = true;
  auto& gs = groups_.at(warp);
  if (gs.empty() || gs.back().committed) gs.emplace_back();
  Group& g = gs.back();
  for (uintptr_t a : addrs)
    for (int b = 0; b < bytes; ++b) {
      uint32_t off = uint32_t(a - smem_) + uint32_t(b);
      g.offsets.push_back(off);
      ++readers_[off];
      line_[off] = line;
    }
}

void WgmmaReadTracker::commit(unsigned warp) {
  auto& gs = groups_.at(warp);
  if (!gs.empty() && !gs.back().committed) gs.back().committed = true;
}

void WgmmaReadTracker::release(Group& g) {
  for (uint32_t off : g.offsets) --readers_[off];
  g.offsets.clear();
}

void WgmmaReadTracker::wait(unsigned warp, int64_t pending_allowed) {
  auto& gs = groups_.at(warp);
  int64_t committed = 0;
  for (const Group& g : gs) committed += g.committed;
  while (committed > pending_allowed && !gs.empty() && gs.front().committed) {
    release(gs.front());
    gs.erase(gs.begin());
    --committed;
  }
}

std::string WgmmaReadTracker::check_store(uintptr_t addr, size_t bytes) const {
  if (addr < smem_ || addr + bytes > smem_ + readers_.size()) return "";
  for (size_t b = 0; b < bytes; ++b) {
    size_t off = size_t(addr - smem_) + b;
    if (readers_[off])
      return "a store to shared memory at offset " + std::to_string(off) + " that a wgmma" +
             (line_[off] ? " (line " + std::to_string(line_[off]) + ")" : std::string()) +
             " may still be reading: its group has not been retired by warpgroup.wait_group";
  }
  return "";
}

std::string run_wgmma(const Inst& i, uint32_t mask, ir::Scalar* regs, unsigned warp, uintptr_t smem,
                      size_t smem_size, WgmmaReadTracker& reads,
                      const std::function<std::string(uintptr_t addr, size_t bytes)>& check_read) {
  if (i.code == ir::OpCode::WgmmaCommit) reads.commit(warp);
  if (i.code == ir::OpCode::WgmmaWait) reads.wait(warp, i.imm);
  if (i.code != ir::OpCode::Wgmma) return "";
  const int warp_in_group = int(warp % 4);
  if (mask != 0xffffffffu) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", mask);
    return std::string("wgmma.mma_async executed by a partial warp (active lanes ") + buf +
           "): the four warps of the warpgroup must all execute it, converged";
  }
  const ir::Op& op = *i.op;
  const int M = int(op.ints.at(0)), N = int(op.ints.at(1)), K = int(op.ints.at(2));
  const int64_t a_kind = op.ints.at(3), b_kind = op.ints.at(4);
  const bool a_mn = op.ints.at(5) != 0, b_mn = op.ints.at(6) != 0, a_regs = op.ints.at(7) != 0;
  const int a_bits = ir::wgmma_element_type(a_kind)->width, b_bits = ir::wgmma_element_type(b_kind)->width;
  const size_t na = a_regs ? size_t(M * K / 128) : 1, nc = i.dsts.size();
  auto at = [regs](int reg, int lane) -> ir::Scalar& { return regs[size_t(reg) * kWarp + size_t(lane)]; };
  auto uniform = [&](int reg, const char* what, uint64_t* out) -> std::string {
    uint64_t v = uint64_t(at(reg, 0).i);
    for (int l = 1; l < kWarp; ++l)
      if (uint64_t(at(reg, l).i) != v)
        return std::string("wgmma.mma_async: the ") + what + " differs between lanes 0 and " + std::to_string(l) +
               " (" + hex64(v) + " vs " + hex64(uint64_t(at(reg, l).i)) + "); it must be warpgroup-uniform";
    *out = v;
    return "";
  };
  const int row0 = 16 * warp_in_group;
  // The warp's 16 rows of A (16 x K) and all of B (N x K), row-major.
  std::vector<double> A(size_t(16 * K)), B(size_t(N * K));
  std::vector<uintptr_t> a_addrs, b_addrs;
  if (a_regs) {
    // The register fragment: ((4,8,4),(2,2,2)) : ((128,1,16),(64,8,512)) for 16-bit values,
    // ((4,8,4),(4,2,2)) : ((256,1,16),(64,8,1024)) for 8-bit ones (lane % 4 picks the K pair / quad).
    const int per = a_bits == 16 ? 2 : 4;
    for (int l = 0; l < kWarp; ++l)
      for (size_t v = 0; v < na; ++v) {
        int vi = int(v);
        int r = l / 4 + 8 * ((vi / per) % 2), k = per * (l % 4) + vi % per + 4 * per * (vi / (2 * per));
        A[size_t(r * K + k)] = a_kind >= ir::kWgmmaElementS8 ? double(at(i.srcs[v], l).i) : at(i.srcs[v], l).f;
      }
  } else {
    uint64_t desc = 0;
    std::string e = uniform(i.srcs[0], "A descriptor", &desc);
    if (!e.empty()) return e;
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < K; ++k) {
        uintptr_t p = wgmma_operand_address(desc, a_mn, a_bits, row0 + r, k, smem, smem_size);
        if (!p)
          return "wgmma.mma_async: the A descriptor " + hex64(desc) + " reaches outside the block's shared memory at (" +
                 std::to_string(row0 + r) + "," + std::to_string(k) + ")";
        A[size_t(r * K + k)] = read_element(a_kind, p);
        a_addrs.push_back(p);
      }
  }
  uint64_t bdesc = 0;
  std::string e = uniform(i.srcs[na], "B descriptor", &bdesc);
  if (!e.empty()) return e;
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) {
      uintptr_t p = wgmma_operand_address(bdesc, b_mn, b_bits, n, k, smem, smem_size);
      if (!p)
        return "wgmma.mma_async: the B descriptor " + hex64(bdesc) + " reaches outside the block's shared memory at (" +
               std::to_string(n) + "," + std::to_string(k) + ")";
      B[size_t(n * K + k)] = read_element(b_kind, p);
      b_addrs.push_back(p);
    }
  if (check_read) {
    for (uintptr_t p : a_addrs) {
      std::string e = check_read(p, size_t(a_bits / 8));
      if (!e.empty()) return "wgmma.mma_async reads its A operand: " + e;
    }
    for (uintptr_t p : b_addrs) {
      std::string e = check_read(p, size_t(b_bits / 8));
      if (!e.empty()) return "wgmma.mma_async reads its B operand: " + e;
    }
  }
  const int line = op.line;
  reads.issue(warp, a_addrs, a_bits / 8, line);
  reads.issue(warp, b_addrs, b_bits / 8, line);
  const ir::Type dt = op.results.at(0)->type;
  const bool int_acc = dt->is_int();
  const int scale_reg = i.srcs[na + 1];
  // C/D fragment: ((4,8,4),(2,2,N/8)) : ((128,1,16),(64,8,512)).
  std::vector<double> D(nc * kWarp);
  for (int l = 0; l < kWarp; ++l) {
    const bool add_c = at(scale_reg, l).i != 0;
    for (size_t v = 0; v < nc; ++v) {
      int vi = int(v);
      int r = l / 4 + 8 * ((vi / 2) % 2), c = 2 * (l % 4) + vi % 2 + 8 * (vi / 4);
      if (int_acc) {  // s32: exact products and sums, wrapping as the hardware's (no .satfinite)
        int64_t acc = add_c ? int64_t(int32_t(at(i.srcs[na + 2 + v], l).i)) : 0;
        for (int k = 0; k < K; ++k) acc += int64_t(A[size_t(r * K + k)]) * int64_t(B[size_t(c * K + k)]);
        D[v * kWarp + size_t(l)] = double(int32_t(uint32_t(uint64_t(acc))));
        continue;
      }
      double acc = add_c ? at(i.srcs[na + 2 + v], l).f : 0.0;
      for (int k = 0; k < K; ++k) acc += A[size_t(r * K + k)] * B[size_t(c * K + k)];
      D[v * kWarp + size_t(l)] = ir::round_float(dt, acc);
    }
  }
  // Written after all reads: D may share registers with C.
  for (int l = 0; l < kWarp; ++l)
    for (size_t v = 0; v < nc; ++v) {
      if (int_acc) at(i.dsts[v], l).i = int64_t(D[v * kWarp + size_t(l)]);
      else at(i.dsts[v], l).f = D[v * kWarp + size_t(l)];
    }
  return "";
}

bool lower_sm90_mma(DeviceEmulator::Program& p, const ir::Op& op) {
  if (op.code != OpCode::Wgmma && op.code != OpCode::WgmmaFence && op.code != OpCode::WgmmaCommit &&
      op.code != OpCode::WgmmaWait)
    return false;
  Inst i(K::Wgmma);
  i.op = &op;
  i.code = op.code;
  i.imm = op.int_attr;
  for (const ir::Value* v : op.operands) i.srcs.push_back(p.reg(v));
  for (auto& r : op.results) i.dsts.push_back(p.reg(r.get()));
  p.emit(std::move(i));
  return true;
}

// ---- the warp interpreter's handler ----------------------------------------------------------

namespace {

Flow exec_wgmma(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  // Operands still being filled by a TMA load (their mbarrier phase not waited for) are a race.
  std::function<std::string(uintptr_t, size_t)> filling;
  if (w.mbarriers.any_filling())
    filling = [&](uintptr_t addr, size_t bytes) { return w.mbarriers.check_filling(addr, bytes, w.smem); };
  std::string e = run_wgmma(i, m, warp.regs, warp.first_thread / kWarp, reinterpret_cast<uintptr_t>(w.smem),
                            w.smem_size, w.wgmma_reads, filling);
  if (!e.empty()) fail_at(c, w, warp, __builtin_ctz(m ? m : 1u), i, e);
  return Flow::Next;
}

}  // namespace

void register_sm90_mma_handlers(HandlerTable& t) {
  t.add(K::Wgmma, exec_wgmma);
}

}  // namespace opencute::emulator
