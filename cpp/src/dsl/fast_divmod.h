// cute.FastDivmodDivisor's arithmetic: a positive run-time 32-bit divisor d prepared once as a
// multiplier and a shift (Granlund and Montgomery's round-up method; FA4 and NVIDIA's schedulers
// prepare theirs in the host program), so that each floor division by it in a kernel is a
// multiply-high, an add and a shift instead of the GPU's division sequence (a float reciprocal,
// two conversions and corrections: about 35 SASS instructions and a long dependent chain; FA4's
// causal tile scheduler does three per CTA before its first TMA load).
//
// A FastDivmodDivisor is always one UInt64 value (d in the low 32 bits, the multiplier in the
// high 32): code that takes scheduler parameters apart counts one value per divisor, and FA4
// replaces a divisor made in the host program by one made in the kernel inside its tile loop, so
// both must have one type. The shift, ceil(log2 d), is recomputed from d where the divisor is
// used (a conversion, a shift, an add and a max, shared by the divisions of a kernel). Prepared
// in a kernel, the multiplier costs a 64-bit division once; a static divisor folds while tracing.
#pragma once
#include "dsl/num.h"

namespace opencute::dsl {

// The prepared form (UInt64) of the Int32 `divisor`. The divisor must be positive; the
// quotients by one that is not are unspecified.
Num fast_divisor_prepare(const Num& divisor);
// The divisor (Int32) that a prepared value holds.
Num fast_divisor_value(const Num& prepared);
// floor(x / d) for every Int32 x, d being the prepared divisor's: Python's `//`, also for
// negative dividends (through the one's complement, whose quotient is the complement of x's).
Num fast_floordiv(const Num& x, const Num& prepared);

}  // namespace opencute::dsl
