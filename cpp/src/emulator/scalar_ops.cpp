// CPU semantics of the value instructions: integer and float arithmetic (with 32-bit fast paths),
// compares, selects, fma and math functions, moves and parallel copies, vector inserts and splats.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
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

// How an integer result is brought back to its type's width (ir::wrap_int, specialised).
enum class Wrap { S32, U32, W64 };

template <Wrap W>
inline int64_t wrap_to(int64_t v) {
  if constexpr (W == Wrap::S32) return int64_t(int32_t(uint32_t(uint64_t(v))));
  else if constexpr (W == Wrap::U32) return int64_t(uint32_t(uint64_t(v)));
  else return v;
}

template <Wrap W, class F>
inline void int_lanes(uint32_t m, Scalar* d, const Scalar* a, const Scalar* b, F f) {
  FOR_LANES(m) { int l = LANE; d[l].i = wrap_to<W>(f(a[l].i, b[l].i)); }
}

// ir::eval_binary on every active lane of one slot of a 32- or 64-bit integer op, with the op and
// the width chosen once: the same results. Returns false (the caller then takes the general path,
// which reports the lane) for a division by zero or INT64_MIN / -1, and for Pow.
template <Wrap W>
bool int_binary_lanes(OpCode code, uint32_t m, Scalar* d, const Scalar* a, const Scalar* b) {
  constexpr bool s = W != Wrap::U32;  // W64 serves both signednesses for the ops below but Div/Rem/Min/Max/Shr
  constexpr int width = W == Wrap::W64 ? 64 : 32;
  constexpr uint64_t mask = width >= 64 ? ~uint64_t(0) : ((uint64_t(1) << width) - 1);
  switch (code) {
    case OpCode::Add: int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return int64_t(uint64_t(x) + uint64_t(y)); }); return true;
    case OpCode::Sub: int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return int64_t(uint64_t(x) - uint64_t(y)); }); return true;
    case OpCode::Mul: int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return int64_t(uint64_t(x) * uint64_t(y)); }); return true;
    case OpCode::And: int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return x & y; }); return true;
    case OpCode::Or: int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return x | y; }); return true;
    case OpCode::Xor: int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return x ^ y; }); return true;
    case OpCode::Shl:
      int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return (y < 0 || y >= width) ? 0 : int64_t(uint64_t(x) << y); });
      return true;
    case OpCode::Div: case OpCode::FloorDiv: case OpCode::Rem: {
      FOR_LANES(m) {
        int l = LANE;
        if (b[l].i == 0 || (s && b[l].i == -1 && a[l].i == std::numeric_limits<int64_t>::min())) return false;
      }
      if constexpr (s) {
        if (code == OpCode::Rem) int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return x % y; });
        else if (code == OpCode::Div) int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return x / y; });
        else
          int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) {
            int64_t q = x / y, r = x % y;
            return (r != 0 && ((r < 0) != (y < 0))) ? q - 1 : q;
          });
      } else {
        if (code == OpCode::Rem) int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return int64_t((uint64_t(x) & mask) % (uint64_t(y) & mask)); });
        else int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return int64_t((uint64_t(x) & mask) / (uint64_t(y) & mask)); });
      }
      return true;
    }
    case OpCode::Min:
      if constexpr (s) int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return std::min(x, y); });
      else int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return int64_t(std::min(uint64_t(x), uint64_t(y))); });
      return true;
    case OpCode::Max:
      if constexpr (s) int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return std::max(x, y); });
      else int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return int64_t(std::max(uint64_t(x), uint64_t(y))); });
      return true;
    case OpCode::Shr:
      if constexpr (s)
        int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return (y < 0 || y >= width) ? (x < 0 ? -1 : 0) : (x >> y); });
      else
        int_lanes<W>(m, d, a, b, [](int64_t x, int64_t y) { return (y < 0 || y >= width) ? 0 : int64_t((uint64_t(x) & mask) >> y); });
      return true;
    default: return false;
  }
}

// The same for f32 and f64 (ir::round_float to f32 is a conversion through float).
template <bool F32, class F>
inline void float_lanes(uint32_t m, Scalar* d, const Scalar* a, const Scalar* b, F f) {
  if constexpr (F32) { FOR_LANES(m) { int l = LANE; d[l].f = double(float(f(a[l].f, b[l].f))); } }
  else { FOR_LANES(m) { int l = LANE; d[l].f = f(a[l].f, b[l].f); } }
}

template <bool F32>
bool float_binary_lanes(OpCode code, uint32_t m, Scalar* d, const Scalar* a, const Scalar* b) {
  switch (code) {
    case OpCode::Add: float_lanes<F32>(m, d, a, b, [](double x, double y) { return x + y; }); return true;
    case OpCode::Sub: float_lanes<F32>(m, d, a, b, [](double x, double y) { return x - y; }); return true;
    case OpCode::Mul: float_lanes<F32>(m, d, a, b, [](double x, double y) { return x * y; }); return true;
    case OpCode::Div: float_lanes<F32>(m, d, a, b, [](double x, double y) { return x / y; }); return true;
    case OpCode::Min: float_lanes<F32>(m, d, a, b, [](double x, double y) { return std::fmin(x, y); }); return true;
    case OpCode::Max: float_lanes<F32>(m, d, a, b, [](double x, double y) { return std::fmax(x, y); }); return true;
    default: return false;
  }
}

// One slot of a binary op through a fast path above, when the type has one.
bool binary_fast(const Inst& i, uint32_t m, Scalar* d, const Scalar* a, const Scalar* b) {
  const Type t = i.type;
  if (t->is_float()) {
    if (t->float_kind == ir::FloatKind::F32) return float_binary_lanes<true>(i.code, m, d, a, b);
    if (t->float_kind == ir::FloatKind::F64) return float_binary_lanes<false>(i.code, m, d, a, b);
    return false;
  }
  if (t->width == 32) return t->is_signed ? int_binary_lanes<Wrap::S32>(i.code, m, d, a, b) : int_binary_lanes<Wrap::U32>(i.code, m, d, a, b);
  if (t->width == 64 && t->is_signed) return int_binary_lanes<Wrap::W64>(i.code, m, d, a, b);
  return false;
}

Flow exec_binary(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  {
    int k = 0;
    while (k < i.width && binary_fast(i, m, &at(i.dst + k, 0), &at(i.a + k, 0), &at(i.b + k, 0))) ++k;
    if (k == i.width) return Flow::Next;
  }
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
  if ((i.math.id >= 0 || i.math.directed) && i.srcs.size() <= 3) {
    Scalar args[3];
    const size_t n = i.srcs.size();
    FOR_LANES(m) {
      int l = LANE;
      for (size_t k = 0; k < n; ++k) args[k] = at(i.srcs[k], l);
      at(i.dst, l) = ir::eval_math(i.math, i.type, args, n);
    }
    return Flow::Next;
  }
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
  // Slot by slot: the whole warp's slot is one contiguous copy (registers are SoA).
  for (int k = 0; k < i.width; ++k) {
    Scalar* d = &at(i.dst + k, 0);
    const Scalar* s = k == int(i.imm) ? &at(i.b, 0) : &at(i.a + k, 0);
    if (m == 0xffffffffu) std::memmove(d, s, sizeof(Scalar) * kWarp);
    else FOR_LANES(m) { int l = LANE; d[l] = s[l]; }
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
