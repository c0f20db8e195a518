// Helpers the PTX instruction families share: register bits <-> typed values, and the decoding
// of the modifiers several families read (state spaces, rounding).
#pragma once
#include <cmath>
#include <cstring>
#include <mutex>

#include "emulator/ptx/ptx_thread_state.h"
#include "support/fp8.h"
#include "support/half.h"

namespace opencute::emulator::ptx {

inline uint64_t low_bits(uint64_t v, int bits) { return bits >= 64 ? v : v & ((uint64_t(1) << bits) - 1); }
inline int64_t sign_extend(uint64_t v, int bits) {
  if (bits >= 64) return int64_t(v);
  const uint64_t m = uint64_t(1) << (bits - 1);
  v = low_bits(v, bits);
  return int64_t((v ^ m) - m);
}
inline float f32_of(uint64_t v) { return support::bits_float(uint32_t(v)); }
inline uint64_t bits_of(float f) { return support::float_bits(f); }
inline double f64_of(uint64_t v) { double d; std::memcpy(&d, &v, 8); return d; }
inline uint64_t bits_of(double d) { uint64_t v; std::memcpy(&v, &d, 8); return v; }

// A 16-bit float's value (f16 or bf16 by `t`), and the nearest-even rounding back.
inline float half_value(uint16_t h, PType t) {
  return t == PType::BF16 || t == PType::BF16x2 ? support::bf16_bits_to_float(h) : support::half_bits_to_float(h);
}
inline uint16_t half_round(float f, PType t) {
  return t == PType::BF16 || t == PType::BF16x2 ? support::float_to_bf16_bits(f) : support::float_to_half_bits(f);
}
inline float fp8_value(uint8_t b, PType t) {
  return support::fp8_bits_to_float(b, t == PType::E5M2 || t == PType::E5M2x2 ? support::e5m2_format() : support::e4m3_format());
}

// The value of a scalar of float type `t` held in `v`'s low bits, as a double.
inline double float_value(uint64_t v, PType t) {
  switch (t) {
    case PType::F16: case PType::BF16: return half_value(uint16_t(v), t);
    case PType::F32: case PType::TF32: return f32_of(v);
    case PType::F64: return f64_of(v);
    case PType::E4M3: case PType::E5M2: return fp8_value(uint8_t(v), t);
    default: return 0;
  }
}

// The state space a modifier list names (ld.shared::cta ...), Generic when none.
inline Space space_of(const Inst& i) {
  for (const std::string& m : i.mods) {
    if (m == "global") return Space::Global;
    if (m == "shared" || m == "shared::cta") return Space::Shared;
    if (m == "shared::cluster") return Space::SharedCluster;
    if (m == "local") return Space::Local;
    if (m == "param" || m == "param::entry" || m == "param::func") return Space::Param;
    if (m == "const") return Space::Const;
  }
  return Space::Generic;
}

// The first / last modifier naming a type.
inline PType first_type(const Inst& i, int skip = 0) {
  for (const std::string& m : i.mods) {
    PType t = ptype_from_name(m);
    if (t != PType::None && skip-- == 0) return t;
  }
  return PType::None;
}
inline PType last_type(const Inst& i) {
  for (auto it = i.mods.rbegin(); it != i.mods.rend(); ++it) {
    PType t = ptype_from_name(*it);
    if (t != PType::None) return t;
  }
  return PType::None;
}

[[noreturn]] inline void unsupported(const Inst& i, const std::string& why = "") {
  throw PtxError("the PTX executor does not support '" + i.opcode + "'" + (why.empty() ? "" : ": " + why));
}

// Read-modify-write operations of atom / red and the reducing bulk copies (ptx_memory.cpp).
enum AtomOp : int32_t { AAdd, AMin, AMax, AInc, ADec, AAnd, AOr, AXor, AExch, ACas };
// The new value of a cell holding `old` after `op` with operands b (and c for cas).
uint64_t atom_apply(int32_t op, PType ty, uint64_t old, uint64_t b, uint64_t c);
// The lock every read-modify-write of memory holds (atom, red, the reducing bulk copies): the
// clusters of a grid run on different host threads (ptx_memory.cpp).
std::mutex& atomic_mutex();
// The operation a modifier list names (.add, .min ...), -1 when none.
int32_t atom_op_of(const Inst& i);

inline Step run_collective_outside_group(const Inst& i, ThreadCtx& t) { t.fail(i.opcode + " ran outside its group"); }

// Marks `i` a collective of `scope` (its threads arrive, then `fn` runs once for all of them);
// `mask_operand`: the index of a membermask operand, -1 when the whole warp takes part.
inline void as_collective(Inst& i, CollectiveFn fn, Scope scope, int mask_operand = -1) {
  i.collective = fn;
  i.run = run_collective_outside_group;
  i.scope = scope;
  i.member_mask_operand = mask_operand;
}

}  // namespace opencute::emulator::ptx
