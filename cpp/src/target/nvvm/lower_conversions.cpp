// NVVM lowering of the conversions: Cast (value-preserving, as ir/scalar_semantics.h converts)
// and Bitcast (the same bits in another type, pointers included).
//   * Float -> int uses the saturating cvt.rzi intrinsics with NaN -> 0, clamped further for
//     destinations narrower than 32 bits; float -> bool is `!= 0`.
//   * Int -> float converts through double above 53 bits, as scalar_semantics does; every
//     float narrowing rounds through f32 first.
//   * Pointer bitcasts across address spaces are addrspacecasts (cvta).
//   * A 32-bit `x & (1 << k)` to bool keeps the and + setp.ne that ptxas makes R2P of.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "target/nvvm/narrow_floats.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

using ir::Op;
using ir::OpCode;
using ir::Type;

namespace {

// `x & (1 << k)` converted to Boolean, for a 32-bit x: the test as `and.b32` + `setp.ne`, the form
// ptxas folds into R2P (seven bits at once) or one LOP3.P. LLVM rewrites the test of bit 0 into a
// trunc to i1 (and + setp.eq 1) and that of bit 15 into a sign test of an i16 (cvt + setp.lt.s16),
// each two SASS instructions; an opaque and.b32 keeps them in the first form (FA4's mask_r2p tests
// 24 bits per row of a tile, two of them mangled so). Empty when the operand is no such and.
std::string single_bit_test(KernelLowering& k, const Op& op) {
  const ir::Value* x = op.operands[0];
  const Op* a = x->def;
  if (x->type->is_vector() || !x->type->is_int() || x->type->width != 32 || !a || a->code != OpCode::And ||
      a->operands.size() != 2)
    return "";
  for (int c = 0; c < 2; ++c) {
    const ir::Value* bit = a->operands[c];
    if (bit->type->is_vector() || !ir::is_constant(bit)) continue;
    const uint32_t b = uint32_t(ir::constant_int(bit));
    if (b == 0 || (b & (b - 1)) != 0) continue;
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", b);
    std::string masked = k.emit_def("call i32 asm \"and.b32 $0, $1, " + std::string(hex) + ";\", \"=r,r\"(i32 " +
                                    k.operand(a->operands[1 - c]) + ")");
    return k.emit_def("icmp ne i32 " + masked + ", 0");
  }
  return "";
}

std::string cast(KernelLowering& k, const Op& op, Type from, Type to, const std::string& v) {
  if (from == to) return v;
  const std::string F = llvm_type(from), T = llvm_type(to);
  if (from->is_int() && to->is_int()) {
    if (to->is_bool()) {
      std::string bit_test = single_bit_test(k, op);
      if (!bit_test.empty()) return bit_test;
      return k.emit_def("icmp ne " + F + " " + v + ", " + int_literal(from->width, 0));
    }
    if (to->width == from->width) return v;
    if (to->width < from->width) return k.emit_def("trunc " + F + " " + v + " to " + T);
    return k.emit_def(std::string(from->is_signed ? "sext " : "zext ") + F + " " + v + " to " + T);
  }
  if (from->is_int() && to->is_float()) {
    std::string conv = from->is_signed ? "sitofp " : "uitofp ";
    if (to->is_f64()) return k.emit_def(conv + F + " " + v + " to double");
    // scalar_semantics converts through double; only above 53 bits does that round first.
    std::string f = from->width > 53
                        ? k.emit_def("fptrunc double " + k.emit_def(conv + F + " " + v + " to double") + " to float")
                        : k.emit_def(conv + F + " " + v + " to float");
    return narrow(k, to, f);
  }
  if (from->is_float() && to->is_int()) {
    Type c = compute_type(from);
    std::string ct = llvm_type(c);
    std::string x = widen(k, from, v);
    if (to->is_bool()) return k.emit_def("fcmp une " + ct + " " + x + ", " + hex_double(0.0));
    if (to->width > 64) k.error(op, "float to integer wider than 64 bits");
    // cvt.rzi saturates to the destination range and maps NaN to 0, as scalar_semantics does;
    // narrower destinations clamp the 32-bit result further.
    const bool sgn = to->is_signed;
    const int base = to->width <= 32 ? 32 : 64;
    std::string name = std::string("llvm.nvvm.") + (c->is_f64() ? "d" : "f") + "2" +
                       (base == 32 ? (sgn ? "i" : "ui") : (sgn ? "ll" : "ull")) + ".rz";
    std::string B = "i" + std::to_string(base);
    std::string r = k.call_intrinsic(B, name, {ct + " " + x}, ct);
    // The 64-bit and f64-source conversions do not all map NaN to 0; select it explicitly.
    std::string is_nan = k.emit_def("fcmp uno " + ct + " " + x + ", " + x);
    r = k.emit_def("select i1 " + is_nan + ", " + B + " 0, " + B + " " + r);
    if (to->width < base) {
      auto sel = [&](const std::string& c2, const std::string& a, const std::string& b) {
        return k.emit_def("select i1 " + c2 + ", " + B + " " + a + ", " + B + " " + b);
      };
      if (sgn) {
        int64_t lo = -(int64_t(1) << (to->width - 1)), hi = (int64_t(1) << (to->width - 1)) - 1;
        r = sel(k.emit_def("icmp slt " + B + " " + r + ", " + std::to_string(lo)), std::to_string(lo), r);
        r = sel(k.emit_def("icmp sgt " + B + " " + r + ", " + std::to_string(hi)), std::to_string(hi), r);
      } else {
        std::string hi = int_literal(base, int64_t((uint64_t(1) << to->width) - 1));
        r = sel(k.emit_def("icmp ugt " + B + " " + r + ", " + hi), hi, r);
      }
      r = k.emit_def("trunc " + B + " " + r + " to " + T);
    }
    return r;
  }
  if (from->is_float() && to->is_float()) {
    if (to->is_f64()) return k.emit_def("fpext float " + (from->is_f32() ? v : widen(k, from, v)) + " to double");
    // scalar_semantics rounds every narrowing through f32 first.
    std::string f = from->is_f64() ? k.emit_def("fptrunc double " + v + " to float") : widen(k, from, v);
    return to->is_f32() ? f : narrow(k, to, f);
  }
  k.error(op, "cannot cast " + ir::to_string(from) + " to " + ir::to_string(to));
}

// A tensor-memory address is an i32 (its lane and column): to and from other integers it only
// changes width (cute.make_ptr(dtype, 0, AddressSpace.tmem) in FlashAttention-4's SM100 forward).
std::string resize_i32(KernelLowering& k, const std::string& v, const std::string& from, const std::string& to) {
  if (from == to) return v;
  auto bits = [](const std::string& t) { return std::stoi(t.substr(1)); };
  return k.emit_def((bits(from) > bits(to) ? "trunc " : "zext ") + from + " " + v + " to " + to);
}

std::string bitcast(KernelLowering& k, const Op& op, Type from, Type to, const std::string& v) {
  const std::string F = llvm_type(from), T = llvm_type(to);
  const bool from_tmem = from->is_pointer() && from->space == ir::AddrSpace::Tmem;
  const bool to_tmem = to->is_pointer() && to->space == ir::AddrSpace::Tmem;
  if ((from_tmem || to_tmem) && !(from->is_pointer() && to->is_pointer()) && F[0] == 'i' && T[0] == 'i')
    return resize_i32(k, v, F, T);
  if (from->is_pointer() && to->is_pointer()) {
    if (F == T) return v;
    int fa = llvm_addrspace(from->space), ta = llvm_addrspace(to->space);
    if (fa == ta) return k.emit_def("bitcast " + F + " " + v + " to " + T);
    std::string same_space = pointer_text(to->element, from->space);
    std::string p = same_space == F ? v : k.emit_def("bitcast " + F + " " + v + " to " + same_space);
    return k.emit_def("addrspacecast " + same_space + " " + p + " to " + T);
  }
  if (from->is_pointer()) {
    std::string i = k.emit_def("ptrtoint " + F + " " + v + " to i64");
    return T == "i64" ? i : k.emit_def("bitcast i64 " + i + " to " + T);
  }
  if (to->is_pointer()) {
    std::string i = F == "i64" ? v : k.emit_def("bitcast " + F + " " + v + " to i64");
    return k.emit_def("inttoptr i64 " + i + " to " + T);
  }
  if (F == T) return v;
  return k.emit_def("bitcast " + F + " " + v + " to " + T);
}

void lower_cast(const Op& op, KernelLowering& k) {
  Type from = ir::scalar_of(op.operands[0]->type), to = ir::scalar_of(op.result()->type);
  k.define(op, 0, k.lanewise(op, [&](const std::vector<std::string>& s) { return cast(k, op, from, to, s[0]); }));
}

void lower_bitcast(const Op& op, KernelLowering& k) {
  k.define(op, 0, bitcast(k, op, op.operands[0]->type, op.result()->type, k.operand(op.operands[0])));
}

}  // namespace

void register_conversion_lowerings(LoweringTable& t) {
  t.add(OpCode::Cast, lower_cast);
  t.add(OpCode::Bitcast, lower_bitcast);
}

}  // namespace opencute::target
