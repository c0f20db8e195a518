// IR types: integers with signedness, floats, fixed vectors and typed pointers.
// Types are interned, so two equal types are the same pointer and compare with ==.
#pragma once
#include <cstdint>
#include <string>

namespace opencute::ir {

enum class TypeKind : uint8_t { Void, Int, Float, Vector, Pointer };
// E4M3 / E5M2: the 8-bit floats Float8E4M3FN and Float8E5M2 (support/fp8.h).
// E2M1: the 4-bit float Float4E2M1FN (support/fp4.h), two to a byte, the first in the low nibble.
// TF32: tensor-float-32, stored as an f32 whose low 13 mantissa bits the tf32 MMAs ignore.
enum class FloatKind : uint8_t { F16, BF16, F32, F64, E4M3, E5M2, E2M1, TF32, E8M0, E2M3, E3M2 };
// Numeric values follow the CuTe DSL / NVVM address-space numbering. Param: a kernel parameter
// passed by value as a __grid_constant__ (a TMA descriptor), reached through its generic address;
// on the host, the pointer to the parameter's bytes.
// Tmem: Blackwell's tensor memory, addressed by 32-bit (lane << 16 | column) addresses; a pointer
// into it cannot be dereferenced (only tcgen05 instructions reach it).
enum class AddrSpace : uint8_t { Generic = 0, Gmem = 1, Smem = 3, Cmem = 4, Rmem = 5, Tmem = 6, Param = 101 };

struct TypeStorage;
using Type = const TypeStorage*;

struct TypeStorage {
  TypeKind kind = TypeKind::Void;
  int width = 0;  // bits of an int/float; lanes * element bits for a vector; 64 for pointers
  bool is_signed = false;
  FloatKind float_kind = FloatKind::F32;
  int lanes = 0;             // vector lane count
  Type element = nullptr;    // vector lane type, pointee type
  AddrSpace space = AddrSpace::Generic;
  int align = 0;             // pointer alignment in bytes

  bool is_int() const { return kind == TypeKind::Int; }
  bool is_bool() const { return kind == TypeKind::Int && width == 1; }
  bool is_float() const { return kind == TypeKind::Float; }
  bool is_vector() const { return kind == TypeKind::Vector; }
  bool is_pointer() const { return kind == TypeKind::Pointer; }
  bool is_scalar() const { return is_int() || is_float(); }
  bool is_float_kind(FloatKind k) const { return is_float() && float_kind == k; }
  bool is_f16() const { return is_float_kind(FloatKind::F16); }
  bool is_bf16() const { return is_float_kind(FloatKind::BF16); }
  bool is_f32() const { return is_float_kind(FloatKind::F32); }
  bool is_f64() const { return is_float_kind(FloatKind::F64); }
  // The 8-bit floats (E4M3, E5M2) and the 4-bit float (E2M1).
  bool is_fp8() const { return is_float_kind(FloatKind::E4M3) || is_float_kind(FloatKind::E5M2); }
  bool is_fp4() const { return is_float_kind(FloatKind::E2M1); }
  // The unsigned power-of-two scale factors of the MX formats (Float8E8M0FNU, support/e8m0.h).
  bool is_e8m0() const { return is_float_kind(FloatKind::E8M0); }
  // The 6-bit floats (Float6E2M3FN, Float6E3M2FN; support/fp6.h): no memory storage of their own yet.
  bool is_fp6() const { return is_float_kind(FloatKind::E2M3) || is_float_kind(FloatKind::E3M2); }
  // An 8-bit integer, signed or not (Int8, Uint8).
  bool is_int8() const { return is_int() && !is_bool() && width == 8; }
  // Narrower than a byte and packed in memory (booleans are not: each takes a byte).
  bool is_sub_byte() const {
    return (is_scalar() && width < 8 && !is_bool()) || (is_vector() && element->is_sub_byte());
  }
  // Size in memory; booleans occupy one byte. A sub-byte scalar, or a vector of them that does not
  // fill whole bytes, has no byte size: this throws (std::domain_error) rather than round, so a
  // caller that forgot the packed case fails loudly; such callers use bit_size() instead.
  int byte_size() const;
  // Bits in memory (booleans: 8).
  int bit_size() const;
  // The smallest alignment in bytes of an access to this type: 1 for packed sub-byte types.
  int min_align() const;
  // Bytes that `count` packed elements of this type occupy (rounded up to a whole byte).
  int64_t array_bytes(int64_t count) const { return (count * bit_size() + 7) / 8; }
};

Type void_type();
Type bool_type();
Type int_type(int width, bool is_signed = true);
Type float_type(FloatKind kind);
Type f16();
Type bf16();
Type f32();
Type tf32();
Type f64();
Type f8e4m3();
Type f8e5m2();
Type f4e2m1();
Type f8e8m0();
Type f6e2m3();
Type f6e3m2();
Type i32();
Type i64();
Type vector_type(Type element, int lanes);
Type pointer_type(Type element, AddrSpace space, int align);

// Scalar type of a scalar or vector type.
Type scalar_of(Type t);

std::string to_string(Type t);
std::string to_string(AddrSpace s);

}  // namespace opencute::ir
