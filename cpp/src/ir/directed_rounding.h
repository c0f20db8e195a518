// f32 add / mul / fma rounded toward zero, -inf or +inf (PTX add/mul/fma.{rz,rm,rp}[.ftz].f32,
// and the packed .f32x2 forms lane by lane). They are Math functions named
// "<op>_<mode>[_ftz]" ("fma_rz_ftz"): the emulator and the host fold them with the exact result
// rounded once in the named direction; the NVVM lowering emits the PTX instruction.
#pragma once
#include <string>

namespace opencute::ir {

struct DirectedRounding {
  enum class Arith { Add, Mul, Fma } arith = Arith::Add;
  enum class Mode { TowardZero, Down, Up } mode = Mode::TowardZero;
  bool ftz = false;  // subnormal inputs and results become zero of the same sign

  int arity() const { return arith == Arith::Fma ? 3 : 2; }
  // "fma.rz.ftz.f32"
  std::string ptx_instruction() const;
};

// The operation a Math function name stands for, or false when it is not one of these.
bool parse_directed_rounding(const std::string& fn, DirectedRounding* out);

// The operation's f32 result (c is read by fma only).
float eval_directed_rounding(const DirectedRounding& r, float a, float b, float c);

}  // namespace opencute::ir
