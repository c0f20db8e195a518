#include "emulator/sm80_mma.h"

#include <cstdio>
#include <vector>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"
#include "ir/scalar_semantics.h"

namespace opencute::emulator {

namespace {

// Where value `i` of lane `lane` sits in its operand matrix, per the PTX ISA fragment figures.
// groupID = lane / 4 and threadID_in_group = lane % 4; `per` values share a 32-bit register
// (2 for 16-bit types, 4 for 8-bit ones).
struct RowCol {
  int row, col;
};

// A (M16 x K): registers alternate rows g / g+8, then continue at column +4*per.
//   m16n8k8  (16-bit): a0,a1: (g, 2t+i);  a2,a3: (g+8, 2t+i)
//   m16n8k16 (16-bit): as k8 for a0..a3; a4..a7 at columns +8
//   m16n8k32 (8-bit):  a0..a3: (g, 4t+i); a4..a7: (g+8, ...); a8..a15 at columns +16
RowCol a_position(int lane, int i, int per) {
  int g = lane >> 2, t = lane & 3, r = i / per, e = i % per;
  return {g + 8 * (r & 1), per * t + e + 4 * per * (r >> 1)};
}

// B (K x N8), row = k: b0,b1 (16-bit) at k = 2t+i, n = g; further registers at k + 4*per.
RowCol b_position(int lane, int i, int per) {
  int g = lane >> 2, t = lane & 3, r = i / per, e = i % per;
  return {per * t + e + 4 * per * r, g};
}

// C/D (M16 x N8): c0,c1: (g, 2t+i); c2,c3: (g+8, 2t+i).
RowCol c_position(int lane, int i) {
  int g = lane >> 2, t = lane & 3;
  return {g + 8 * (i >> 1), 2 * t + (i & 1)};
}

}  // namespace

std::string run_mma_sync(const Inst& i, uint32_t active_mask, ir::Scalar* regs) {
  const ir::Op& op = *i.op;
  const int M = int(op.ints.at(0)), N = int(op.ints.at(1)), K = int(op.ints.at(2));
  if (active_mask != 0xffffffffu) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", active_mask);
    return std::string("mma.sync executed by a partial warp (active lanes ") + buf +
           "): the instruction needs all 32 lanes converged";
  }
  const int na = M * K / 32, nb = N * K / 32, nc = M * N / 32;
  const int per_a = 32 / op.operands[0]->type->width, per_b = 32 / op.operands[size_t(na)]->type->width;
  auto at = [regs](int reg, int lane) -> ir::Scalar& { return regs[size_t(reg) * kWarp + size_t(lane)]; };
  std::vector<double> A(size_t(M * K)), B(size_t(K * N)), C(size_t(M * N));
  for (int lane = 0; lane < kWarp; ++lane) {
    for (int v = 0; v < na; ++v) {
      RowCol p = a_position(lane, v, per_a);
      A[size_t(p.row * K + p.col)] = at(i.srcs[size_t(v)], lane).f;
    }
    for (int v = 0; v < nb; ++v) {
      RowCol p = b_position(lane, v, per_b);
      B[size_t(p.row * N + p.col)] = at(i.srcs[size_t(na + v)], lane).f;
    }
    for (int v = 0; v < nc; ++v) {
      RowCol p = c_position(lane, v);
      C[size_t(p.row * N + p.col)] = at(i.srcs[size_t(na + nb + v)], lane).f;
    }
  }
  ir::Type dt = op.results[0]->type;
  for (int lane = 0; lane < kWarp; ++lane) {
    for (int v = 0; v < nc; ++v) {
      RowCol p = c_position(lane, v);
      double acc = C[size_t(p.row * N + p.col)];
      for (int k = 0; k < K; ++k) acc += A[size_t(p.row * K + k)] * B[size_t(k * N + p.col)];
      at(i.dsts[size_t(v)], lane).f = ir::round_float(dt, acc);
    }
  }
  return "";
}

// ---- the warp interpreter's handler ----------------------------------------------------------

namespace {

Flow exec_mma_sync(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  std::string e = run_mma_sync(i, m, warp.regs);
  if (!e.empty()) fail_at(c, w, warp, __builtin_ctz(m ? m : 1u), i, e);
  return Flow::Next;
}

}  // namespace

void register_sm80_mma_handlers(HandlerTable& t) {
  t.add(K::MmaSync, exec_mma_sync);
}

}  // namespace opencute::emulator
