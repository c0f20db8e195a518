// cute::TensorSSA: static folding, broadcasting, promotion, reductions, indexing and errors.
// Expected values are computed by hand (elements in colexicographic order, mode 0 fastest).
#include <gtest/gtest.h>

#include <functional>

#include "cute/tensor_ssa.h"
#include "dsl/tracer.h"
#include "ir/ir.h"

using namespace opencute;
using cute::TensorSSA;
using dsl::Num;
using layout::IntTuple;

namespace {

TensorSSA floats(IntTuple shape, std::vector<double> v, ir::Type t = ir::f32()) {
  std::vector<Num> nums;
  for (double x : v) nums.push_back(Num::of_float(t, x));
  return TensorSSA::from_values(std::move(shape), t, nums);
}

TensorSSA ints(IntTuple shape, std::vector<long long> v, ir::Type t = ir::i32()) {
  std::vector<Num> nums;
  for (long long x : v) nums.push_back(Num::of_int(t, x));
  return TensorSSA::from_values(std::move(shape), t, nums);
}

std::vector<double> as_doubles(const TensorSSA& t) {
  std::vector<double> out;
  for (auto& v : t.values) {
    EXPECT_TRUE(v.is_static);
    out.push_back(v.type->is_float() ? v.s.f : double(v.s.i));
  }
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cute::TensorSSAError& e) {
    return e.what();
  }
  return "<no TensorSSAError>";
}

// A trace with one host function whose arguments are dynamic values.
struct Trace {
  dsl::Tracer tracer;
  Trace() {
    tracer.activate();
    tracer.begin_function("host", ir::FunctionKind::Host);
  }
  ~Trace() { tracer.deactivate(); }
  Num arg(ir::Type t) { return Num::of_value(tracer.add_argument(t)); }
  int ops(ir::OpCode code) {
    int n = 0;
    for (auto& op : tracer.current_function()->body->ops) n += op->code == code;
    return n;
  }
};

}  // namespace

TEST(TensorSSA, StaticArithmeticFolds) {
  TensorSSA a = floats({2, 2}, {1, 2, 3, 4});
  TensorSSA r = cute::binary(dsl::BinOp::Mul, a, Num::of_float(ir::f32(), 0.5));
  EXPECT_EQ(r.element, ir::f32());
  EXPECT_EQ(as_doubles(r), (std::vector<double>{0.5, 1, 1.5, 2}));
  TensorSSA s = cute::binary(dsl::BinOp::Sub, Num::of_float(ir::f32(), 10), a);  // scalar on the left
  EXPECT_EQ(as_doubles(s), (std::vector<double>{9, 8, 7, 6}));
  EXPECT_EQ(as_doubles(cute::negate(a)), (std::vector<double>{-1, -2, -3, -4}));
  EXPECT_EQ(as_doubles(cute::invert(ints({3}, {0, 1, -1}))), (std::vector<double>{-1, -2, 0}));
}

TEST(TensorSSA, PromotionFollowsScalarRules) {
  TensorSSA i = ints({2}, {3, 4});
  EXPECT_EQ(cute::binary(dsl::BinOp::Add, i, Num::of_float(ir::f16(), 1)).element, ir::f32());
  EXPECT_EQ(cute::binary(dsl::BinOp::TrueDiv, i, Num::of_int(ir::i32(), 2)).element, ir::f32());
  EXPECT_EQ(cute::binary(dsl::BinOp::Add, i, Num::of_int(ir::int_type(32, false), 1)).element,
            ir::int_type(32, false));
  EXPECT_EQ(cute::compare(ir::CmpPredicate::Lt, i, Num::of_int(ir::i32(), 4)).element, ir::bool_type());
  // + on two Boolean tensors computes in Int32, then tests != 0.
  TensorSSA b1 = ints({3}, {1, 1, 0}, ir::bool_type()), b2 = ints({3}, {1, 0, 0}, ir::bool_type());
  TensorSSA sum = cute::binary(dsl::BinOp::Add, b1, b2);
  EXPECT_EQ(sum.element, ir::bool_type());
  EXPECT_EQ(as_doubles(sum), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(cute::binary(dsl::BinOp::Mul, b1, b2).element, ir::i32());
}

TEST(TensorSSA, BroadcastShapes) {
  auto S = [](const IntTuple& a, const IntTuple& b) { return cute::python_shape_string(cute::broadcast_shape(a, b)); };
  EXPECT_EQ(S({1, 3}, {4, 1}), "(4, 3)");
  EXPECT_EQ(S({3}, {3, 4}), "(3, 4)");  // right-padded with 1s, as CuTe's append
  EXPECT_EQ(S(IntTuple({IntTuple{2, 2}, 1}), {1, 3}), "((2, 2), 3)");
  EXPECT_EQ(S(8, 8), "8");
  std::string e = error_of([] { cute::broadcast_shape({3, 4}, {2, 4}); });
  EXPECT_NE(e.find("(3, 4)"), std::string::npos) << e;
  EXPECT_NE(e.find("(2, 4)"), std::string::npos) << e;
}

TEST(TensorSSA, BroadcastValues) {
  TensorSSA row = floats({1, 3}, {0, 1, 2});
  TensorSSA col = floats({4, 1}, {0, 10, 20, 30});
  TensorSSA sum = cute::binary(dsl::BinOp::Add, row, col);  // element (i,j) = 10 i + j
  EXPECT_EQ(cute::python_shape_string(sum.shape), "(4, 3)");
  EXPECT_EQ(as_doubles(sum), (std::vector<double>{0, 10, 20, 30, 1, 11, 21, 31, 2, 12, 22, 32}));
  TensorSSA b = cute::broadcast_to(row, {4, 3});
  EXPECT_EQ(as_doubles(b), (std::vector<double>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));
  std::string e = error_of([&] { cute::broadcast_to(col, {4, 3, 2}); });
  EXPECT_EQ(e, "<no TensorSSAError>");  // (4,1) pads to (4,1,1): allowed
}

TEST(TensorSSA, BroadcastToRejectsShrinking) {
  TensorSSA t = floats({2, 3}, {0, 1, 2, 3, 4, 5});
  std::string e = error_of([&] { cute::broadcast_to(t, {1, 3}); });
  EXPECT_NE(e.find("(2, 3)"), std::string::npos) << e;
  EXPECT_NE(e.find("(1, 3)"), std::string::npos) << e;
}

TEST(TensorSSA, ReductionProfiles) {
  // [[1,2,3],[4,5,6]] of shape (2,3) in colexicographic order.
  TensorSSA a = floats({2, 3}, {1, 4, 2, 5, 3, 6});
  Num zero = Num::of_float(ir::f32(), 0), one = Num::of_float(ir::f32(), 1);
  auto all = cute::reduce(a, cute::ReductionOp::Add, zero, IntTuple(0));
  EXPECT_EQ(std::get<Num>(all).s.f, 21.0);
  auto rows = std::get<TensorSSA>(cute::reduce(a, cute::ReductionOp::Add, zero, {IntTuple::underscore(), 1}));
  EXPECT_EQ(cute::python_shape_string(rows.shape), "(2,)");
  EXPECT_EQ(as_doubles(rows), (std::vector<double>{6, 15}));
  auto cols = std::get<TensorSSA>(cute::reduce(a, cute::ReductionOp::Add, one, {1, IntTuple::underscore()}));
  EXPECT_EQ(as_doubles(cols), (std::vector<double>{6, 8, 10}));  // init folded once per result
  auto mx = std::get<TensorSSA>(cute::reduce(a, cute::ReductionOp::Max, zero, {1, IntTuple::underscore()}));
  EXPECT_EQ(as_doubles(mx), (std::vector<double>{4, 5, 6}));
  auto mn = cute::reduce(a, cute::ReductionOp::Min, Num::of_float(ir::f32(), 100), IntTuple(0));
  EXPECT_EQ(std::get<Num>(mn).s.f, 1.0);
  auto prod = cute::reduce(a, cute::ReductionOp::Mul, one, IntTuple(0));
  EXPECT_EQ(std::get<Num>(prod).s.f, 720.0);
  auto same = std::get<TensorSSA>(cute::reduce(a, cute::ReductionOp::Add, zero, IntTuple::underscore()));
  EXPECT_EQ(as_doubles(same), as_doubles(a));
}

TEST(TensorSSA, NestedReductionProfile) {
  // Shape ((2,2),3): element k has coordinate ((k%2, k/2%2), k/4). Reduce the inner second mode.
  std::vector<double> v;
  for (int k = 0; k < 12; ++k) v.push_back(k);
  TensorSSA t = floats(IntTuple({IntTuple{2, 2}, 3}), v);
  IntTuple profile({IntTuple{IntTuple::underscore(), 1}, IntTuple::underscore()});
  auto r = std::get<TensorSSA>(cute::reduce(t, cute::ReductionOp::Add, Num::of_float(ir::f32(), 0), profile));
  EXPECT_EQ(cute::python_shape_string(r.shape), "(2, 3)");
  // (i, j): k = i + 4j and k = i + 2 + 4j.
  EXPECT_EQ(as_doubles(r), (std::vector<double>{2, 4, 10, 12, 18, 20}));
}

TEST(TensorSSA, ReductionProfileErrors) {
  TensorSSA a = floats({2, 3}, {1, 4, 2, 5, 3, 6});
  Num zero = Num::of_float(ir::f32(), 0);
  std::string e = error_of([&] { cute::reduce(a, cute::ReductionOp::Add, zero, {IntTuple::underscore(), 1, 1}); });
  EXPECT_NE(e.find("(None, 1, 1)"), std::string::npos) << e;
  EXPECT_NE(e.find("(2, 3)"), std::string::npos) << e;
}

TEST(TensorSSA, IndexingAndSlicing) {
  // (4,2,3) holding the row-major numbers of numpy's arange: element (i,j,k) = 6i + 3j + k.
  std::vector<double> v(24);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) v[size_t(i + 4 * j + 8 * k)] = 6 * i + 3 * j + k;
  TensorSSA t = floats({4, 2, 3}, v);
  EXPECT_EQ(cute::element_at(t, IntTuple(10)).s.f, 10.0);  // an integer counts row-major
  EXPECT_EQ(cute::element_at(t, IntTuple{3, 1, 2}).s.f, 23.0);
  TensorSSA nested = TensorSSA::from_values(IntTuple({4, IntTuple{2, 3}}), ir::f32(), t.values);
  EXPECT_EQ(cute::element_at(nested, IntTuple{1, 5}).s.f, 6 + 3 + 2.0);  // 5 indexes mode (2,3) colexicographically
  TensorSSA s = cute::slice(t, {IntTuple::underscore(), 1, IntTuple::underscore()});
  EXPECT_EQ(cute::python_shape_string(s.shape), "(4, 3)");
  EXPECT_EQ(as_doubles(s), (std::vector<double>{3, 9, 15, 21, 4, 10, 16, 22, 5, 11, 17, 23}));
  EXPECT_NE(error_of([&] { cute::element_at(t, IntTuple(24)); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { cute::element_at(t, IntTuple{4, 0, 0}); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { cute::element_at(t, IntTuple{1, 2, 0}); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { cute::element_at(t, IntTuple{0, 0, 0, 0}); }).find("does not match"), std::string::npos);
}

TEST(TensorSSA, WhereAndFull) {
  TensorSSA a = floats({4}, {-1, 2, -3, 4});
  TensorSSA pos = cute::compare(ir::CmpPredicate::Gt, a, Num::of_float(ir::f32(), 0));
  TensorSSA zero = TensorSSA::full({4}, Num::of_int(ir::i32(), 0), ir::f32());
  EXPECT_EQ(zero.element, ir::f32());
  EXPECT_EQ(as_doubles(cute::where(pos, a, zero)), (std::vector<double>{0, 2, 0, 4}));
  EXPECT_EQ(as_doubles(cute::where(pos, a, Num::of_float(ir::f32(), 9))), (std::vector<double>{9, 2, 9, 4}));
  std::string e = error_of([&] { cute::where(pos, a, Num::of_int(ir::i32(), 0)); });
  EXPECT_NE(e.find("Float32 and Int32"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { cute::where(a, a, a); }).find("cond must be Boolean"), std::string::npos);
  EXPECT_NE(error_of([&] { cute::where(pos, Num::of_float(ir::f32(), 1), Num::of_float(ir::f32(), 2)); })
                .find("must be a TensorSSA"),
            std::string::npos);
}

TEST(TensorSSA, ConstructionErrorsAndPrint) {
  EXPECT_NE(error_of([] { floats({2, 3}, {1, 2}); }).find("holds 6 elements, got 2"), std::string::npos);
  EXPECT_NE(error_of([] { floats({2, 0}, {}); }).find("positive"), std::string::npos);
  EXPECT_EQ(floats({3, 4}, std::vector<double>(12, 0)).str(), "tensor_value<vector<12xf32> o (3, 4)>");
  EXPECT_EQ(floats({3}, {1, 2, 3}).str(), "tensor_value<vector<3xf32> o (3,)>");
  TensorSSA c = cute::convert(floats({2}, {-1.7, 2.5}), ir::i32());
  EXPECT_EQ(as_doubles(c), (std::vector<double>{-1, 2}));  // float -> int truncates
}

TEST(TensorSSA, AnyAll) {
  EXPECT_EQ(cute::any(ints({3}, {0, 0, 2})).s.i, 1);
  EXPECT_EQ(cute::all(ints({3}, {0, 1, 2})).s.i, 0);
  EXPECT_EQ(cute::all(ints({2}, {3, 1})).s.i, 1);
}

TEST(TensorSSA, DynamicElementsBecomeIROnlyWhereNeeded) {
  Trace tr;
  Num x = tr.arg(ir::f32());
  TensorSSA t = TensorSSA::from_values({2}, ir::f32(), {x, Num::of_float(ir::f32(), 3)});
  TensorSSA r = cute::binary(dsl::BinOp::Mul, t, Num::of_float(ir::f32(), 2));
  EXPECT_FALSE(r.values[0].is_static);
  ASSERT_TRUE(r.values[1].is_static);  // the static element folded
  EXPECT_EQ(r.values[1].s.f, 6.0);
  EXPECT_EQ(tr.ops(ir::OpCode::Mul), 1);
  // A dynamic fill is one IR value shared by every element.
  TensorSSA f = TensorSSA::full({2, 2}, x, ir::f32());
  EXPECT_EQ(f.values[0].value, x.value);
  EXPECT_EQ(f.values[3].value, x.value);
}

TEST(TensorSSA, DynamicIndexSelectsAtRunTime) {
  Trace tr;
  Num i = tr.arg(ir::i32());
  TensorSSA t = floats({2, 2}, {1, 2, 3, 4});
  Num e = cute::element_at(t, IntTuple(layout::Int::dynamic(i.value)));
  EXPECT_FALSE(e.is_static);
  EXPECT_EQ(tr.ops(ir::OpCode::Select), 3);  // one choice per element but the last
}

TEST(TensorSSA, SliceNeedsStaticCoordinates) {
  Trace tr;
  Num i = tr.arg(ir::i32());
  TensorSSA t = floats({2, 2}, {1, 2, 3, 4});
  std::string e = error_of([&] { cute::slice(t, {IntTuple::underscore(), layout::Int::dynamic(i.value)}); });
  EXPECT_NE(e.find("static coordinates"), std::string::npos) << e;
  EXPECT_NE(e.find("(None, ?)"), std::string::npos) << e;
}

TEST(TensorSSA, DynamicShapeIsRejected) {
  Trace tr;
  Num n = tr.arg(ir::i32());
  std::string e = error_of([&] { TensorSSA::full({layout::Int::dynamic(n.value), 2}, Num::of_float(ir::f32(), 0), ir::f32()); });
  EXPECT_NE(e.find("static shape, got (?, 2)"), std::string::npos) << e;
}
