#include "emulator/sm120_mma.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"
#include "ir/ir.h"
#include "ir/scalar_semantics.h"
#include "support/e8m0.h"
#include "support/fp4.h"
#include "support/fp8.h"

namespace opencute::emulator {

namespace {

using ir::BlockScaledFormat;

// The value of element `e` of a 32-bit register holding `per` values (4 bytes or 8 nibbles).
double element(uint32_t reg, int e, int per, BlockScaledFormat f) {
  if (per == 8) return support::e2m1_bits_to_float(uint8_t((reg >> (4 * e)) & 0xf));
  const uint8_t byte = uint8_t(reg >> (8 * e));
  switch (f) {
    case BlockScaledFormat::E2M1: return support::e2m1_bits_to_float(uint8_t((byte >> 2) & 0xf));
    case BlockScaledFormat::E4M3: return support::fp8_bits_to_float(byte, support::e4m3_format());
    default: return support::fp8_bits_to_float(byte, support::e5m2_format());
  }
}

double factor(uint8_t b, BlockScaledFormat f) {
  if (f == BlockScaledFormat::UE8M0) return support::e8m0_bits_to_float(b);
  return support::fp8_bits_to_float(uint8_t(b & 0x7f), support::e4m3_format());
}

}  // namespace

std::string run_mma_sync_block_scaled(const Inst& i, uint32_t active_mask, ir::Scalar* regs) {
  const ir::Op& op = *i.op;
  if (active_mask != 0xffffffffu) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", active_mask);
    return std::string("mma.sync .block_scale executed by a partial warp (active lanes ") + buf +
           "): the instruction needs all 32 lanes converged";
  }
  const int M = int(op.ints.at(0)), N = int(op.ints.at(1)), K = int(op.ints.at(2)), scale_vec = int(op.ints.at(3));
  const auto fa = BlockScaledFormat(op.ints.at(4)), fb = BlockScaledFormat(op.ints.at(5)),
             fs = BlockScaledFormat(op.ints.at(6));
  const int per = K == 64 ? 8 : 4;  // values a register holds
  const int na = M * K / 32 / per, nb = N * K / 32 / per, nc = M * N / 32;
  auto at = [regs](int reg, int lane) -> ir::Scalar& { return regs[size_t(reg) * kWarp + size_t(lane)]; };
  auto word = [&](int src, int lane) { return uint32_t(uint64_t(at(i.srcs[size_t(src)], lane).i)); };
  std::vector<double> A(size_t(M * K)), B(size_t(K * N)), C(size_t(M * N));
  for (int lane = 0; lane < kWarp; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    // A (M16 x K): register r holds row g + 8 (r & 1), columns per * t + e + 4 per (r >> 1).
    for (int r = 0; r < na; ++r)
      for (int e = 0; e < per; ++e)
        A[size_t((g + 8 * (r & 1)) * K + per * t + e + 4 * per * (r >> 1))] = element(word(r, lane), e, per, fa);
    // B (K x N8): register r holds column g, rows per * t + e + 4 per r.
    for (int r = 0; r < nb; ++r)
      for (int e = 0; e < per; ++e) B[size_t((per * t + e + 4 * per * r) * N + g)] = element(word(na + r, lane), e, per, fb);
    // C / D (M16 x N8): c0, c1 at (g, 2t + i); c2, c3 at (g + 8, 2t + i).
    for (int v = 0; v < nc; ++v) C[size_t((g + 8 * (v >> 1)) * N + 2 * t + (v & 1))] = at(i.srcs[size_t(na + nb + v)], lane).f;
  }
  const int block = K / scale_vec;
  auto sf = [&](int src, int lane, int j) { return factor(uint8_t(word(src, lane) >> (8 * j)), fs); };
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) A[size_t(m * K + k)] *= sf(na + nb + nc, 4 * (m % 8) + m / 8, k / block);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) B[size_t(k * N + n)] *= sf(na + nb + nc + 1, 4 * n, k / block);
  ir::Type dt = op.results[0]->type;
  for (int lane = 0; lane < kWarp; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    for (int v = 0; v < nc; ++v) {
      const int row = g + 8 * (v >> 1), col = 2 * t + (v & 1);
      double acc = C[size_t(row * N + col)];
      for (int k = 0; k < K; ++k) acc += A[size_t(row * K + k)] * B[size_t(k * N + col)];
      at(i.dsts[size_t(v)], lane).f = ir::round_float(dt, acc);
    }
  }
  return "";
}

// ---- the warp interpreter's handler ----------------------------------------------------------

namespace {

Flow exec_mma_sync_block_scaled(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  std::string e = run_mma_sync_block_scaled(i, m, warp.regs);
  if (!e.empty()) fail_at(c, w, warp, __builtin_ctz(m ? m : 1u), i, e);
  return Flow::Next;
}

}  // namespace

void register_sm120_mma_handlers(HandlerTable& t) {
  t.add(K::MmaSyncBlockScaled, exec_mma_sync_block_scaled);
}

}  // namespace opencute::emulator
