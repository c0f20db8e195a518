#include "ir/types.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <memory>
#include <mutex>
#include <tuple>

namespace opencute::ir {
namespace {

using Key = std::tuple<int, int, bool, int, int, const void*, int, int>;

Type intern(const TypeStorage& proto) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<TypeStorage>> table;
  Key key{int(proto.kind), proto.width, proto.is_signed, int(proto.float_kind), proto.lanes,
          proto.element, int(proto.space), proto.align};
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = table[key];
  if (!slot) slot = std::make_unique<TypeStorage>(proto);
  return slot.get();
}

}  // namespace

int TypeStorage::byte_size() const {
  if (is_sub_byte() && width % 8 != 0)
    throw std::domain_error(to_string(this) + " is narrower than a byte (" + std::to_string(width) +
                            " bits) and has no byte size");
  switch (kind) {
    case TypeKind::Void: return 0;
    case TypeKind::Int: return width == 1 ? 1 : (width + 7) / 8;
    case TypeKind::Float: return width / 8;
    case TypeKind::Vector: return element->is_sub_byte() ? width / 8 : lanes * element->byte_size();
    case TypeKind::Pointer: return 8;
  }
  return 0;
}

int TypeStorage::bit_size() const {
  if (kind == TypeKind::Vector) return lanes * element->bit_size();
  if (is_sub_byte()) return width;
  return byte_size() * 8;
}

int TypeStorage::min_align() const { return is_sub_byte() ? 1 : std::max(1, byte_size()); }

Type void_type() { return intern(TypeStorage{}); }

Type int_type(int width, bool is_signed) {
  TypeStorage t;
  t.kind = TypeKind::Int;
  t.width = width;
  t.is_signed = width == 1 ? false : is_signed;
  return intern(t);
}

Type bool_type() { return int_type(1, false); }
Type i32() { return int_type(32, true); }
Type i64() { return int_type(64, true); }

Type float_type(FloatKind kind) {
  TypeStorage t;
  t.kind = TypeKind::Float;
  t.float_kind = kind;
  t.width = kind == FloatKind::F64 ? 64 : (kind == FloatKind::F32 || kind == FloatKind::TF32) ? 32
          : (kind == FloatKind::E4M3 || kind == FloatKind::E5M2 || kind == FloatKind::E8M0) ? 8 : kind == FloatKind::E2M1 ? 4
          : (kind == FloatKind::E2M3 || kind == FloatKind::E3M2) ? 6 : 16;
  return intern(t);
}

Type f16() { return float_type(FloatKind::F16); }
Type bf16() { return float_type(FloatKind::BF16); }
Type f32() { return float_type(FloatKind::F32); }
Type tf32() { return float_type(FloatKind::TF32); }
Type f64() { return float_type(FloatKind::F64); }
Type f8e4m3() { return float_type(FloatKind::E4M3); }
Type f8e5m2() { return float_type(FloatKind::E5M2); }
Type f4e2m1() { return float_type(FloatKind::E2M1); }
Type f8e8m0() { return float_type(FloatKind::E8M0); }
Type f6e2m3() { return float_type(FloatKind::E2M3); }
Type f6e3m2() { return float_type(FloatKind::E3M2); }

Type vector_type(Type element, int lanes) {
  TypeStorage t;
  t.kind = TypeKind::Vector;
  t.element = element;
  t.lanes = lanes;
  t.width = element->width * lanes;
  return intern(t);
}

Type pointer_type(Type element, AddrSpace space, int align) {
  TypeStorage t;
  t.kind = TypeKind::Pointer;
  t.element = element;
  t.space = space;
  t.align = align > 0 ? align : element->min_align();
  t.width = 64;
  return intern(t);
}

Type scalar_of(Type t) { return t->is_vector() ? t->element : t; }

std::string to_string(AddrSpace s) {
  switch (s) {
    case AddrSpace::Generic: return "generic";
    case AddrSpace::Gmem: return "gmem";
    case AddrSpace::Smem: return "smem";
    case AddrSpace::Cmem: return "cmem";
    case AddrSpace::Tmem: return "tmem";
    case AddrSpace::Rmem: return "rmem";
    case AddrSpace::Param: return "param";
  }
  return "?";
}

std::string to_string(Type t) {
  switch (t->kind) {
    case TypeKind::Void: return "void";
    case TypeKind::Int:
      if (t->width == 1) return "i1";
      return (t->is_signed ? "i" : "u") + std::to_string(t->width);
    case TypeKind::Float:
      switch (t->float_kind) {
        case FloatKind::F16: return "f16";
        case FloatKind::BF16: return "bf16";
        case FloatKind::E4M3: return "f8E4M3FN";
        case FloatKind::E5M2: return "f8E5M2";
        case FloatKind::E2M1: return "f4E2M1FN";
        case FloatKind::E8M0: return "f8E8M0FNU";
        case FloatKind::E2M3: return "f6E2M3FN";
        case FloatKind::E3M2: return "f6E3M2FN";
        case FloatKind::F32: return "f32";
        case FloatKind::TF32: return "tf32";
        case FloatKind::F64: return "f64";
      }
      return "f?";
    case TypeKind::Vector: return "vector<" + std::to_string(t->lanes) + "x" + to_string(t->element) + ">";
    case TypeKind::Pointer:
      return "!ptr<" + to_string(t->element) + ", " + to_string(t->space) + ", align<" + std::to_string(t->align) + ">>";
  }
  return "?";
}

}  // namespace opencute::ir
