// dsl::python_literal_*: the type a Python int/float operand gets next to a DSL value
// (dsl::common_type), and the values binary ops compute with it. Expected values by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "dsl/dtype.h"
#include "dsl/num.h"
#include "ir/scalar_semantics.h"

using namespace opencute;
using dsl::Num;

namespace {

ir::Type type(const char* name) { return dsl::dtype_from_name(name); }
Num value(const char* dtype, double v) {
  ir::Type t = type(dtype);
  return t->is_float() ? Num::of_float(t, v) : Num::of_int(t, (long long)v);
}
std::string common(const Num& a, const Num& b) { return dsl::dtype_name(dsl::common_type({a, b})); }

}  // namespace

TEST(PythonLiterals, TakeTheTypeOfTheirKind) {
  EXPECT_EQ(common(value("Float16", 1), dsl::python_literal_float(0.5)), "Float16");
  EXPECT_EQ(common(dsl::python_literal_float(0.5), value("BFloat16", 1)), "BFloat16");
  EXPECT_EQ(common(value("Float64", 1), dsl::python_literal_float(0.1)), "Float64");
  EXPECT_EQ(common(value("Int8", 1), dsl::python_literal_int(127)), "Int8");
  EXPECT_EQ(common(value("Uint8", 1), dsl::python_literal_int(255)), "Uint8");
  EXPECT_EQ(common(value("Float16", 1), dsl::python_literal_int(3)), "Float16");  // int with a float
}

TEST(PythonLiterals, OtherwiseTheirDefaultTypePromotes) {
  EXPECT_EQ(common(value("Int32", 1), dsl::python_literal_float(0.5)), "Float32");
  EXPECT_EQ(common(value("Int64", 1), dsl::python_literal_float(0.5)), "Float64");
  EXPECT_EQ(common(value("Int8", 1), dsl::python_literal_int(128)), "Int32");      // does not fit Int8
  EXPECT_EQ(common(value("Uint8", 1), dsl::python_literal_int(-1)), "Int32");
  EXPECT_EQ(common(value("Int32", 1), dsl::python_literal_int(1LL << 40)), "Int64");
  EXPECT_EQ(common(value("Float16", 1), dsl::python_literal_float(1e5)), "Float32");  // overflows Float16
  EXPECT_EQ(common(value("Float16", 1), dsl::python_literal_int(70000)), "Float32");
  EXPECT_EQ(common(value("Boolean", 1), dsl::python_literal_int(1)), "Int32");
  // Infinity stays infinity in any float type, so it takes the type.
  EXPECT_EQ(common(value("Float16", 1), dsl::python_literal_float(INFINITY)), "Float16");
}

TEST(PythonLiterals, ComputeInTheTakenType) {
  Num r = dsl::binary(dsl::BinOp::Mul, value("Float16", 0.1), dsl::python_literal_float(0.1));
  // f16(0.1) = 0.0999755859375; times f16(0.1) rounds to the f16 nearest 0.0099951...
  EXPECT_EQ(dsl::dtype_name(r.type), "Float16");
  EXPECT_EQ(r.s.f, ir::round_float(ir::f16(), 0.0999755859375 * 0.0999755859375));
  Num d = dsl::binary(dsl::BinOp::Add, value("Float64", 1.0), dsl::python_literal_float(0.1));
  EXPECT_EQ(d.s.f, 1.0 + 0.1);
  Num i = dsl::binary(dsl::BinOp::Add, value("Int8", 100), dsl::python_literal_int(27));
  EXPECT_EQ(dsl::dtype_name(i.type), "Int8");
  EXPECT_EQ(i.s.i, 127);
  Num c = dsl::compare(ir::CmpPredicate::Ge, value("Float16", 0.1), dsl::python_literal_float(0.1));
  EXPECT_EQ(c.s.i, 1);  // compared in Float16: f16(0.1) >= f16(0.1)
}

TEST(PythonLiterals, ResultsAndConversionsAreNoLiterals) {
  Num r = dsl::binary(dsl::BinOp::Add, value("Float16", 1), dsl::python_literal_float(0.5));
  EXPECT_FALSE(r.python_literal);
  EXPECT_FALSE(dsl::convert(dsl::python_literal_float(0.5), ir::f64()).python_literal);
  EXPECT_EQ(dsl::dtype_name(dsl::literal_default_type(dsl::python_literal_float(0.5))), "Float32");
  EXPECT_EQ(dsl::dtype_name(dsl::literal_default_type(dsl::python_literal_int(1LL << 33))), "Int64");
}
