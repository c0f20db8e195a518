#include "dsl/dtype.h"

#include <stdexcept>
#include <utility>

namespace opencute::dsl {
namespace {

const std::vector<std::pair<std::string, ir::Type>>& table() {
  static const std::vector<std::pair<std::string, ir::Type>> t = {
      {"Boolean", ir::bool_type()},         {"Int8", ir::int_type(8, true)},
      {"Int16", ir::int_type(16, true)},    {"Int32", ir::int_type(32, true)},
      {"Int64", ir::int_type(64, true)},    {"Uint8", ir::int_type(8, false)},
      {"Uint16", ir::int_type(16, false)},  {"Uint32", ir::int_type(32, false)},
      {"Uint64", ir::int_type(64, false)},  {"Float16", ir::f16()},
      {"BFloat16", ir::bf16()},             {"Float32", ir::f32()},
      {"Float64", ir::f64()},               {"Float8E4M3FN", ir::f8e4m3()},
      {"Float8E5M2", ir::f8e5m2()},
  };
  return t;
}

int float_rank(ir::Type t) {
  switch (t->float_kind) {
    case ir::FloatKind::F64: return 3;
    case ir::FloatKind::F32: return 2;
    case ir::FloatKind::F16: return 1;
    case ir::FloatKind::BF16: return 0;
    case ir::FloatKind::E4M3: return -1;  // the 8-bit floats promote to any wider float
    case ir::FloatKind::E5M2: return -2;
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
  for (auto& [n, t] : table())
    if (n == name) return t;
  throw std::invalid_argument("can't interpret '" + name + "' as data type");
}

std::string dtype_name(ir::Type t) {
  if (t->is_pointer()) return "Pointer";
  for (auto& [n, ty] : table())
    if (ty == t) return n;
  return ir::to_string(t);
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (auto& [n, t] : table()) names.push_back(n);
  return names;
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
