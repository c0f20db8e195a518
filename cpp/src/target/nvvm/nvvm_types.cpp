#include "target/nvvm/nvvm_types.h"

#include "support/e8m0.h"
#include "support/fp6.h"
#include <cctype>
#include <cstdio>
#include <cstring>

#include "support/fp4.h"
#include "support/half.h"

namespace opencute::target {

using ir::AddrSpace;
using ir::FloatKind;
using ir::Type;
using ir::TypeKind;

const support::Fp8Format& fp8_format(Type t) {
  return t->float_kind == FloatKind::E4M3 ? support::e4m3_format() : support::e5m2_format();
}

int llvm_addrspace(AddrSpace s) {
  switch (s) {
    case AddrSpace::Generic: return 0;
    case AddrSpace::Gmem: return 1;
    case AddrSpace::Smem: return 3;
    case AddrSpace::Cmem: return 4;
    case AddrSpace::Tmem: return 6;
    case AddrSpace::Rmem: return 0;  // allocas are reached through generic pointers
    case AddrSpace::Param: return 0;  // a grid-constant parameter is reached through its generic address
  }
  return 0;
}

// How a value is held in memory: booleans take a byte there. A scalar f16 is held as i16 (read
// and written through a bitcast): libNVVM (CUDA 13.0) merges five or more adjacent,
// 16-byte-aligned scalar `half` accesses into one it then refuses ("unsupported operation"),
// while the same accesses as i16 are merged into vector loads and stores it accepts. Explicit
// `<N x half>` vectors are fine (and stay 128-bit accesses).
std::string mem_type(Type t) {
  if (t->kind == TypeKind::Void) return "i8";
  if (t->is_bool()) return "i8";
  if (t->is_sub_byte() && !t->is_vector()) return "i8";  // pointers to packed elements address bytes
  // Packed vectors are accessed as one integer of their bits (element 0 in the low bits, as a
  // bitcast to <N x i4> reads them): LLVM's in-memory layout of <N x i4> is not relied on.
  if (t->is_vector() && t->element->is_sub_byte()) return "i" + std::to_string(t->bit_size());
  if (t->is_vector() && t->element->is_bool()) return "<" + std::to_string(t->lanes) + " x i8>";
  if (t->is_float() && t->float_kind == FloatKind::F16) return "i16";
  return llvm_type(t);
}

std::string pointer_text(Type element, AddrSpace space) {
  int as = llvm_addrspace(space);
  return mem_type(element) + (as ? " addrspace(" + std::to_string(as) + ")*" : "*");
}

std::string llvm_type(Type t) {
  switch (t->kind) {
    case TypeKind::Void: return "void";
    case TypeKind::Int: return "i" + std::to_string(t->width);
    case TypeKind::Float:
      switch (t->float_kind) {
        case FloatKind::F16: return "half";
        case FloatKind::BF16: return "i16";  // LLVM 7 has no bfloat
        case FloatKind::E4M3:
        case FloatKind::E5M2:
        case FloatKind::E8M0: return "i8";   // nor 8-bit floats
        case FloatKind::E2M1: return "i4";   // nor 4-bit ones: the code in the low bits
        case FloatKind::E2M3:
        case FloatKind::E3M2: return "i6";
        case FloatKind::F32: case FloatKind::TF32: return "float";
        case FloatKind::F64: return "double";
      }
      break;
    case TypeKind::Vector: return "<" + std::to_string(t->lanes) + " x " + llvm_type(t->element) + ">";
    case TypeKind::Pointer:
      // A tensor-memory address is a 32-bit value that only tcgen05 instructions take.
      if (t->space == AddrSpace::Tmem) return "i32";
      return pointer_text(t->element, t->space);
  }
  return "void";
}

// True when LLVM's allocation size of the memory type equals the IR's byte_size, so typed
// getelementptr strides agree with the IR; odd widths and non-power-of-two vectors get padded
// by LLVM and are addressed in bytes instead.
bool natural_layout(Type t) {
  if (t->is_int()) return t->width == 1 || t->width == 8 || t->width == 16 || t->width == 32 || t->width == 64;
  if (t->is_sub_byte()) return false;
  if (t->is_float() || t->is_pointer()) return true;
  if (t->is_vector()) return (t->lanes & (t->lanes - 1)) == 0 && natural_layout(t->element);
  return false;
}

int pow2_align(int align) {
  if (align <= 0) return 1;
  return align & -align;
}

int64_t sign_wrap(int width, int64_t v) {
  if (width >= 64) return v;
  uint64_t mask = (uint64_t(1) << width) - 1;
  uint64_t u = uint64_t(v) & mask;
  if ((u >> (width - 1)) & 1) u |= ~mask;
  return int64_t(u);
}

// Integer literals are printed as the signed value of their bit pattern, which LLVM's parser
// accepts for every width.
std::string int_literal(int width, int64_t v) {
  if (width == 1) return (v & 1) ? "true" : "false";
  return std::to_string(sign_wrap(width, v));
}

std::string hex_double(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llX", (unsigned long long)u);
  return buf;
}

std::string float_literal(Type t, double d) {
  switch (t->float_kind) {
    case FloatKind::F64: return hex_double(d);
    case FloatKind::F32: case FloatKind::TF32: return hex_double(double(float(d)));  // LLVM wants the double spelling
    case FloatKind::F16: {
      char buf[16];
      std::snprintf(buf, sizeof buf, "0xH%04X", unsigned(support::float_to_half_bits(float(d))));
      return buf;
    }
    case FloatKind::BF16: return int_literal(16, support::float_to_bf16_bits(float(d)));
    case FloatKind::E4M3:
    case FloatKind::E5M2: return int_literal(8, support::float_to_fp8_bits(float(d), fp8_format(t)));
    case FloatKind::E2M1: return int_literal(4, support::float_to_e2m1_bits(float(d)));
    case FloatKind::E8M0: return int_literal(8, support::float_to_e8m0_bits(float(d)));
    case FloatKind::E2M3: return int_literal(6, support::float_to_fp6_bits(float(d), support::e2m3_format()));
    case FloatKind::E3M2: return int_literal(6, support::float_to_fp6_bits(float(d), support::e3m2_format()));
  }
  return "0";
}

std::string global_ref(const std::string& name) {
  bool plain = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$')) plain = false;
  if (plain) return "@" + name;
  std::string out = "@\"";
  for (unsigned char c : name) {
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "\\%02X", unsigned(c));
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

std::string c_string_literal(const std::string& s) {
  std::string out = "c\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "\\%02X", unsigned(c));
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\\00\"";
}

}  // namespace opencute::target
