// CPU semantics of the value instructions: integer and float arithmetic (with 32-bit fast paths),
// compares, selects, fma and math functions, moves and parallel copies, vector inserts and splats.
#include <cstring>
#include <string>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

namespace {

Flow exec_add_i32(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
  if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) + uint32_t(b[l].i)); } }
  else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(a[l].i) + uint32_t(b[l].i); } }
  return Flow::Next;
}

Flow exec_sub_i32(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
  if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) - uint32_t(b[l].i)); } }
  else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(uint32_t(a[l].i) - uint32_t(b[l].i)); } }
  return Flow::Next;
}

Flow exec_mul_i32(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
  if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) * uint32_t(b[l].i)); } }
  else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(a[l].i) * uint32_t(b[l].i); } }
  return Flow::Next;
}

Flow exec_add_f32(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
  FOR_LANES(m) { int l = LANE; d[l].f = double(float(a[l].f + b[l].f)); }
  return Flow::Next;
}

Flow exec_mul_f32(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
  FOR_LANES(m) { int l = LANE; d[l].f = double(float(a[l].f * b[l].f)); }
  return Flow::Next;
}

Flow exec_binary(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  std::string err;
  for (int k = 0; k < i.width; ++k) {
    FOR_LANES(m) {
      int l = LANE;
      if (!ir::eval_binary(i.code, i.type, at(i.a + k, l), at(i.b + k, l), &at(i.dst + k, l), &err))
        fail_at(c, w, warp, l, i, err);
    }
  }
  return Flow::Next;
}

Flow exec_unary(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = ir::eval_unary(i.code, i.type, at(i.a + k, l)); }
  return Flow::Next;
}

Flow exec_cmp_i32(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
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
  return Flow::Next;
}

Flow exec_cmp(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  for (int k = 0; k < i.width; ++k)
    FOR_LANES(m) { int l = LANE; at(i.dst + k, l).i = ir::eval_cmp(ir::CmpPredicate(i.imm), i.in_type, at(i.a + k, l), at(i.b + k, l)); }
  return Flow::Next;
}

Flow exec_select(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a, l).i ? at(i.b + k, l) : at(i.c + k, l); }
  return Flow::Next;
}

Flow exec_fma(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  for (int k = 0; k < i.width; ++k)
    FOR_LANES(m) {
      int l = LANE;
      at(i.dst + k, l) = Scalar::of_float(ir::round_float(i.type, at(i.a + k, l).f * at(i.b + k, l).f + at(i.c + k, l).f));
    }
  return Flow::Next;
}

Flow exec_math(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  FOR_LANES(m) {
    int l = LANE;
    w.math_args.resize(i.srcs.size());
    for (size_t k = 0; k < i.srcs.size(); ++k) w.math_args[k] = at(i.srcs[k], l);
    if (!ir::eval_math(i.op->str_attr, i.type, w.math_args, &at(i.dst, l)))
      fail_at(c, w, warp, l, i, "unknown math function " + i.op->str_attr);
  }
  return Flow::Next;
}

Flow exec_move(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a + k, l); }
  return Flow::Next;
}

Flow exec_pmove(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  const size_t n = i.srcs.size();
  w.scratch.resize(n * kWarp);
  for (size_t k = 0; k < n; ++k) std::memcpy(&w.scratch[k * kWarp], &at(i.srcs[k], 0), sizeof(Scalar) * kWarp);
  for (size_t k = 0; k < n; ++k) {
    Scalar* d = &at(i.dsts[k], 0);
    const Scalar* s = &w.scratch[k * kWarp];
    if (m == 0xffffffffu) std::memcpy(d, s, sizeof(Scalar) * kWarp);
    else FOR_LANES(m) { int l = LANE; d[l] = s[l]; }
  }
  return Flow::Next;
}

Flow exec_vec_insert(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  FOR_LANES(m) {
    int l = LANE;
    for (int k = 0; k < i.width; ++k) at(i.dst + k, l) = at(i.a + k, l);
    at(i.dst + int(i.imm), l) = at(i.b, l);
  }
  return Flow::Next;
}

Flow exec_vec_splat(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a, l); }
  return Flow::Next;
}

}  // namespace

void register_scalar_handlers(HandlerTable& t) {
  t.add(K::AddI32, exec_add_i32);
  t.add(K::SubI32, exec_sub_i32);
  t.add(K::MulI32, exec_mul_i32);
  t.add(K::AddF32, exec_add_f32);
  t.add(K::MulF32, exec_mul_f32);
  t.add(K::Binary, exec_binary);
  t.add(K::Unary, exec_unary);
  t.add(K::CmpI32, exec_cmp_i32);
  t.add(K::Cmp, exec_cmp);
  t.add(K::Select, exec_select);
  t.add(K::Fma, exec_fma);
  t.add(K::Math, exec_math);
  t.add(K::Move, exec_move);
  t.add(K::PMove, exec_pmove);
  t.add(K::VecInsert, exec_vec_insert);
  t.add(K::VecSplat, exec_vec_splat);
}

}  // namespace opencute::emulator
