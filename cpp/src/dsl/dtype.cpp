#include "dsl/dtype.h"

#include <stdexcept>
#include <utility>

namespace opencute::dsl {
namespace {

struct DTypeRow {
  const char* name;            // the CuTe DSL's name
  ir::Type type;
  const char* framework_name;  // numpy's / torch's spelling
  uint8_t dlpack_code;         // DLPack's DLDataTypeCode
};

// DLPack type codes (dlpack.h, DLDataTypeCode).
constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6, kDLFloat8_e4m3fn = 10,
                  kDLFloat8_e5m2 = 12, kDLFloat4_e2m1fn = 17, kDLFloat8_e8m0fnu = 14, kDLFloat6_e2m3fn = 15,
                  kDLFloat6_e3m2fn = 16;

const std::vector<DTypeRow>& rows() {
  static const std::vector<DTypeRow> t = {
      {"Boolean", ir::bool_type(), "bool", kDLBool},
      {"Int8", ir::int_type(8, true), "int8", kDLInt},
      {"Int16", ir::int_type(16, true), "int16", kDLInt},
      {"Int32", ir::int_type(32, true), "int32", kDLInt},
      {"Int64", ir::int_type(64, true), "int64", kDLInt},
      {"Uint8", ir::int_type(8, false), "uint8", kDLUInt},
      // Packed two to a byte, the first in the low nibble (no framework has the type; storage is
      // int8/uint8 bytes viewed as Int4, which doubles the extent of the stride-1 mode).
      {"Int4", ir::int_type(4, true), "int4", kDLInt},
      {"Uint16", ir::int_type(16, false), "uint16", kDLUInt},
      {"Uint32", ir::int_type(32, false), "uint32", kDLUInt},
      {"Uint64", ir::int_type(64, false), "uint64", kDLUInt},
      {"Float16", ir::f16(), "float16", kDLFloat},
      {"BFloat16", ir::bf16(), "bfloat16", kDLBfloat},
      {"Float32", ir::f32(), "float32", kDLFloat},
      {"Float64", ir::f64(), "float64", kDLFloat},
      // After Float32, so float32 storage and DLPack tensors read back as Float32.
      {"TFloat32", ir::tf32(), "float32", kDLFloat},
      {"Float8E4M3FN", ir::f8e4m3(), "float8_e4m3fn", kDLFloat8_e4m3fn},
      {"Float8E5M2", ir::f8e5m2(), "float8_e5m2", kDLFloat8_e5m2},
      // torch has only the packed pair type; DLPack describes it as bits 4, lanes 2.
      {"Float4E2M1FN", ir::f4e2m1(), "float4_e2m1fn_x2", kDLFloat4_e2m1fn},
      {"Float8E8M0FNU", ir::f8e8m0(), "float8_e8m0fnu", kDLFloat8_e8m0fnu},
      {"Float6E2M3FN", ir::f6e2m3(), "float6_e2m3fn", kDLFloat6_e2m3fn},
      {"Float6E3M2FN", ir::f6e3m2(), "float6_e3m2fn", kDLFloat6_e3m2fn},
  };
  return t;
}

int float_rank(ir::Type t) {
  switch (t->float_kind) {
    case ir::FloatKind::F64: return 3;
    case ir::FloatKind::F32: return 2;
    case ir::FloatKind::TF32: return 2;
    case ir::FloatKind::F16: return 1;
    case ir::FloatKind::BF16: return 0;
    case ir::FloatKind::E4M3: return -1;  // the 8-bit floats promote to any wider float
    case ir::FloatKind::E5M2: return -2;
    case ir::FloatKind::E2M1: return -3;
    case ir::FloatKind::E8M0: return -4;
    case ir::FloatKind::E2M3: return -5;
    case ir::FloatKind::E3M2: return -6;
  }
  return 0;
}

ir::Type float_of_width(int width) {
  if (width <= 16) return ir::f16();
  if (width <= 32) return ir::f32();
  return ir::f64();
}

}  // namespace

ir::Type dtype_from_name(const std::string& name) {
  for (auto& r : rows())
    if (r.name == name) return r.type;
  throw std::invalid_argument("can't interpret '" + name + "' as data type");
}

std::string dtype_name(ir::Type t) {
  if (t->is_pointer()) return "Pointer";
  for (auto& r : rows())
    if (r.type == t) return r.name;
  return ir::to_string(t);
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (auto& r : rows()) names.push_back(r.name);
  return names;
}

ir::Type dtype_from_framework_name(std::string name) {
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  if (name == "float") name = "float32";
  if (name == "half") name = "float16";
  if (name == "double") name = "float64";
  for (auto& r : rows())
    if (r.framework_name == name) return r.type;
  return nullptr;
}

std::string framework_dtype_name(ir::Type t) {
  for (auto& r : rows())
    if (r.type == t) return r.framework_name;
  return ir::to_string(t);
}

ir::Type dtype_from_dlpack(uint8_t code, uint8_t bits) {
  // A table by (code, bits): every call of a compiled function asks this for each tensor.
  constexpr int kCodes = 32, kBits = 65;
  struct Table {
    ir::Type type[kCodes][kBits] = {};
  };
  static const Table* table = [] {
    auto* t = new Table();
    for (auto& r : rows()) {
      int width = r.type->is_bool() ? 8 : r.type->width;
      // The first row of a (code, bits) wins: float32 data is Float32, not TFloat32.
      if (r.dlpack_code < kCodes && width < kBits && !t->type[r.dlpack_code][width])
        t->type[r.dlpack_code][width] = r.type;
    }
    return t;
  }();
  return code < kCodes && bits < kBits ? table->type[code][bits] : nullptr;
}

ir::Type promote(ir::Type a, ir::Type b) {
  if (a == b) return a;
  if (!a->is_scalar() || !b->is_scalar())
    throw std::invalid_argument("cannot combine " + dtype_name(a) + " and " + dtype_name(b));
  if (a->is_float() || b->is_float()) {
    if (a->is_float() && b->is_float()) {
      if (a->width != b->width) return a->width > b->width ? a : b;
      return float_rank(a) >= float_rank(b) ? a : b;
    }
    ir::Type f = a->is_float() ? a : b;
    ir::Type i = a->is_float() ? b : a;
    int width = std::max(f->width, i->width);
    if (width == f->width) return f;  // keeps bf16 + Int8 as BFloat16
    return float_of_width(width);
  }
  bool sa = a->is_signed, sb = b->is_signed;
  if (sa == sb) return a->width >= b->width ? a : b;
  ir::Type u = sa ? b : a;
  ir::Type s = sa ? a : b;
  return u->width >= s->width ? u : s;
}

ir::Type type_of_python_int(long long v) {
  return (v >= -2147483648LL && v <= 2147483647LL) ? ir::i32() : ir::i64();
}

}  // namespace opencute::dsl
