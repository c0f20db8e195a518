#include "dsl/fast_divmod.h"


namespace opencute::dsl {

namespace {

ir::Type u32() { return ir::int_type(32, false); }
ir::Type u64() { return ir::int_type(64, false); }
Num lit(ir::Type t, long long v) { return Num::of_int(t, v); }

// ceil(log2 d) for 1 <= d < 2^31: the bit length of d - 1, read off the exponent of d - 1
// converted to f64, which is exact for every 32-bit integer (the IR has no count-leading-zeros;
// on the GPU this is a conversion, a shift, an add and a max).
Num ceil_log2(const Num& d_u32) {
  Num v = convert(binary(BinOp::Sub, d_u32, lit(u32(), 1)), ir::f64());
  Num exponent = binary(BinOp::Shr, bitcast(v, ir::i64()), lit(ir::i64(), 52));  // biased: 1023 + floor(log2 v)
  Num bits = binary(BinOp::Sub, convert(exponent, ir::i32()), lit(ir::i32(), 1022));
  return convert(binary(BinOp::Max, bits, lit(ir::i32(), 0)), u32());  // v = 0 (d = 1): 0
}

}  // namespace

Num fast_divisor_prepare(const Num& divisor) {
  // A divisor below 1 (unspecified quotients) is prepared as 1, so that the preparation never
  // divides by zero.
  Num d = convert(binary(BinOp::Max, convert(divisor, ir::i32()), lit(ir::i32(), 1)), u32());
  Num l = convert(ceil_log2(d), u64());
  Num d64 = convert(d, u64());
  // m = floor(2^32 (2^l - d) / d) + 1 < 2^32, the multiplier's part above 2^32.
  Num excess = binary(BinOp::Sub, binary(BinOp::Shl, lit(u64(), 1), l), d64);
  Num m = binary(BinOp::Add, binary(BinOp::FloorDiv, binary(BinOp::Shl, excess, lit(u64(), 32)), d64), lit(u64(), 1));
  return binary(BinOp::Or, binary(BinOp::Shl, m, lit(u64(), 32)), d64);
}

Num fast_divisor_value(const Num& prepared) {
  return convert(convert(binary(BinOp::And, prepared, lit(u64(), 0xffffffffLL)), u32()), ir::i32());
}

Num fast_floordiv(const Num& x0, const Num& prepared) {
  Num x = convert(x0, ir::i32());
  Num d = convert(binary(BinOp::And, prepared, lit(u64(), 0xffffffffLL)), u32());
  // Below 2^32, as is u: ptxas makes their 64-bit product one IMAD.WIDE.U32.
  Num m = convert(convert(binary(BinOp::Shr, prepared, lit(u64(), 32)), u32()), u64());
  Num l = ceil_log2(d);
  // x < 0: floor(x / d) = ~(~x / d), ~x >= 0; sign is 0 or all ones.
  Num sign = binary(BinOp::Shr, x, lit(ir::i32(), 31));
  Num u = convert(binary(BinOp::Xor, x, sign), u32());  // < 2^31
  // floor(u / d) = (u + mulhi(u, m)) >> l (exact for u < 2^31; the sum stays below 2^32).
  Num high = convert(binary(BinOp::Shr, binary(BinOp::Mul, convert(u, u64()), m), lit(u64(), 32)), u32());
  Num q = binary(BinOp::Shr, binary(BinOp::Add, high, u), l);
  return binary(BinOp::Xor, convert(q, ir::i32()), sign);
}

}  // namespace opencute::dsl
