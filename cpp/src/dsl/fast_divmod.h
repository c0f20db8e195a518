// cute.FastDivmodDivisor's arithmetic: a positive run-time 32-bit divisor d prepared once in the
// host program as a multiplier and a shift (Granlund and Montgomery's round-up method), so that
// each floor division by it in a kernel is a multiply-high, an add and a shift instead of the
// GPU's division sequence (a float reciprocal, two conversions and corrections: about 35 SASS
// instructions and a long dependent chain; FA4's causal tile scheduler does three per CTA before
// its first TMA load).
//
// The prepared divisor is one UInt64 value (d in the low 32 bits, the multiplier in the high 32)
// because code that takes scheduler parameters apart counts one value per FastDivmodDivisor; the
// shift, ceil(log2 d), is recomputed from d where the divisor is used (five compare-and-shift
// steps, shared by the divisions of a kernel). A divisor made in a kernel, or a static one, stays
// a plain Int32: preparing it there costs more than the divisions it would save, and a constant
// divisor already compiles to a multiply.
#pragma once
#include <optional>

#include "dsl/num.h"

namespace opencute::dsl {

// The prepared form of the Int32 `divisor`, or nothing where it stays plain (static, or in a
// kernel). The divisor must be positive; the quotients by one that is not are unspecified.
std::optional<Num> fast_divisor_prepare(const Num& divisor);
// The divisor (Int32) that a prepared value holds.
Num fast_divisor_value(const Num& prepared);
// floor(x / d) for every Int32 x, d being the prepared divisor's: Python's `//`, also for
// negative dividends (through the one's complement, whose quotient is the complement of x's).
Num fast_floordiv(const Num& x, const Num& prepared);

}  // namespace opencute::dsl
