// Dynamic leaves: IR emitted once, static parts folded, divisibility tracked and printed.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "layout/layout.h"
#include "layout/print.h"

using namespace opencute;
using namespace opencute::layout;

namespace {
struct Fixture {
  ir::Module m;
  ir::Function* f = m.add_function("host", ir::FunctionKind::Host);
  ir::Builder b{f->body.get()};
  BuilderScope scope{&b};
  Int arg(int64_t div = 1, ir::Type t = ir::i32()) { return Int::dynamic(f->body->add_arg(t), div); }
  // Non-constant ops in the function body.
  int ops() const {
    int n = 0;
    for (auto& op : f->body->ops)
      if (!op->is_constant()) ++n;
    return n;
  }
};
[[maybe_unused]] std::string S(const IntTuple& t) { return to_string(t); }
std::string S(const Layout& l) { return to_string(l); }
}  // namespace

TEST(IntTupleDynamic, IdentitiesAndFoldingEmitNothing) {
  Fixture fx;
  Int a = fx.arg();
  EXPECT_TRUE((a * 1).same(a));
  EXPECT_TRUE((1 * a).same(a));
  EXPECT_TRUE((a + 0).same(a));
  EXPECT_TRUE((a * 0).is_static_value(0));
  EXPECT_TRUE((a / 1).same(a));
  EXPECT_TRUE((a % 1).is_static_value(0));
  EXPECT_EQ((Int(6) * Int(7)).value(), 42);
  EXPECT_EQ(ceil_div(Int(10), Int(3)).value(), 4);
  EXPECT_EQ(fx.ops(), 0);
  Int p = a * fx.arg();
  EXPECT_TRUE(p.is_dynamic());
  EXPECT_EQ(fx.ops(), 1);
}

TEST(IntTupleDynamic, DivisibilityPropagates) {
  Fixture fx;
  Int a = fx.arg(16), b = fx.arg(3);
  EXPECT_EQ((a * b).divisibility(), 48);
  EXPECT_EQ((a * 4).divisibility(), 64);
  EXPECT_EQ((a + b).divisibility(), 1);
  EXPECT_EQ((a + 8).divisibility(), 8);
  EXPECT_EQ((a / 4).divisibility(), 4);
  EXPECT_EQ((a / 3).divisibility(), 1);
  EXPECT_TRUE((a % 8).is_static_value(0));  // known divisible: folds
  EXPECT_EQ(to_string(a), "?{div=16}");
  EXPECT_EQ(to_string(fx.arg()), "?");
  EXPECT_EQ(to_string(fx.arg(1, ir::i64())), "?{i64}");
  EXPECT_EQ(to_string(fx.arg(16, ir::i64())), "?{i64 div=16}");
  // ceil_div by a static divisor of the divisibility is one division
  int before = fx.ops();
  Int c = ceil_div(a, Int(8));
  EXPECT_EQ(c.divisibility(), 2);
  EXPECT_EQ(fx.ops() - before, 1);
  // otherwise add + div
  before = fx.ops();
  ceil_div(b, Int(8));
  EXPECT_EQ(fx.ops() - before, 2);
}

TEST(IntTupleDynamic, MixedWidthsPromote) {
  Fixture fx;
  Int a = fx.arg(1, ir::i32()), b = fx.arg(1, ir::i64());
  Int c = a * b;
  EXPECT_EQ(c.width(), 64);
  EXPECT_EQ(fx.ops(), 2);  // cast + mul
}

TEST(LayoutDynamic, PrintsDynamicLeaves) {
  Fixture fx;
  Layout l = make_layout(IntTuple{fx.arg(), 2}, IntTuple{1, fx.arg()});
  EXPECT_EQ(S(l), "(?,2):(1,?)");
  Layout m = make_layout(IntTuple{fx.arg(), fx.arg()}, IntTuple{fx.arg(1, ir::i64()), 1});
  EXPECT_EQ(S(m), "(?,?):(?{i64},1)");
}

TEST(LayoutDynamic, SizeCrd2IdxIdx2CrdEmitMinimalIr) {
  Fixture fx;
  Int m = fx.arg(), n = fx.arg(), ld = fx.arg();
  Layout l = make_layout(IntTuple{m, n}, IntTuple{1, ld});
  int before = fx.ops();
  Int s = size(l);
  EXPECT_TRUE(s.is_dynamic());
  EXPECT_EQ(fx.ops() - before, 1);  // one multiply
  before = fx.ops();
  IntTuple idx = l(IntTuple{fx.arg(), fx.arg()});
  EXPECT_TRUE(idx.as_int().is_dynamic());
  EXPECT_EQ(fx.ops() - before, 2);  // i*1 folds; j*ld, +
  // static layout, dynamic coordinate: (4,8):(8,1) at (i, j) -> i*8 + j
  before = fx.ops();
  make_layout(IntTuple{4, 8}, IntTuple{8, 1})(IntTuple{fx.arg(), fx.arg()});
  EXPECT_EQ(fx.ops() - before, 2);
  // idx2crd of a dynamic index into (4,8): i % 4, i / 4 % 8
  before = fx.ops();
  IntTuple crd = idx2crd(IntTuple(fx.arg()), IntTuple{4, 8});
  EXPECT_EQ(crd.rank(), 2);
  EXPECT_EQ(fx.ops() - before, 3);
  // static everything: no IR
  before = fx.ops();
  EXPECT_EQ(make_layout(IntTuple{4, 8}, IntTuple{8, 1})(IntTuple{3, 5}).as_int().value(), 29);
  EXPECT_EQ(fx.ops(), before);
}

TEST(LayoutDynamic, TilingADynamicTensorCostsOnlyCeilDivsAndMultiplies) {
  Fixture fx;
  Int m = fx.arg(), n = fx.arg(), ld = fx.arg();
  Layout l = make_layout(IntTuple{m, n}, IntTuple{ld, 1});
  int before = fx.ops();
  Layout z = zipped_divide(l, Tiler::from_shape(IntTuple{128, 64}));
  // two ceil_divs (add + div each) and 128*ld for the rest stride of mode 0
  EXPECT_EQ(fx.ops() - before, 5);
  EXPECT_EQ(S(z), "((128,64),(?,?)):((?,1),(?{div=128},64))");
  EXPECT_TRUE(z.shape[0].is_static());
  // With divisibility the ceil_divs are single divisions.
  Fixture fy;
  Layout l2 = make_layout(IntTuple{fy.arg(128), fy.arg(64)}, IntTuple{fy.arg(8), 1});
  Layout z2 = zipped_divide(l2, Tiler::from_shape(IntTuple{128, 64}));
  EXPECT_EQ(fy.ops(), 3);
  EXPECT_EQ(S(z2), "((128,64),(?,?)):((?{div=8},1),(?{div=1024},64))");
  // local_tile-like slicing at a dynamic tile coordinate: offset = bx*128*ld + by*64
  IntTuple off = crd2idx(IntTuple{IntTuple{0, 0}, IntTuple{fy.arg(), fy.arg()}}, z2);
  EXPECT_TRUE(off.as_int().is_dynamic());
  EXPECT_EQ(fy.ops(), 6);
}

TEST(LayoutDynamic, SwizzleEmitsBitOps) {
  Fixture fx;
  Int x = fx.arg();
  Int y = make_swizzle(3, 4, 3)(x);
  EXPECT_TRUE(y.is_dynamic());
  EXPECT_EQ(fx.ops(), 3);  // and, shr, xor
  EXPECT_EQ(make_swizzle(0, 4, 3)(x).same(x), true);
}

TEST(LayoutErrors, DynamicWithoutBuilderAndStaticRequired) {
  ir::Module mod;
  ir::Function* f = mod.add_function("h", ir::FunctionKind::Host);
  Int a = Int::dynamic(f->body->add_arg(ir::i32()));
  try {
    (void)(a * Int::dynamic(f->body->add_arg(ir::i32())));
    FAIL() << "expected LayoutError";
  } catch (const LayoutError& e) {
    EXPECT_NE(std::string(e.what()).find("no IR builder"), std::string::npos);
  }
  ir::Builder b(f->body.get());
  BuilderScope scope(&b);
  Layout dyn = make_layout(IntTuple{a, 4});
  try {
    complement(dyn, 64);
    FAIL();
  } catch (const LayoutError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("complement:", 0), 0u) << e.what();
  }
  try {
    right_inverse(dyn);
    FAIL();
  } catch (const LayoutError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("right_inverse:", 0), 0u) << e.what();
  }
  try {
    a.value();
    FAIL();
  } catch (const LayoutError& e) {
    EXPECT_NE(std::string(e.what()).find("static value required"), std::string::npos);
  }
}

// The IR emitted for dynamic leaves computes what the static algebra computes: divide a layout
// whose shapes and strides are all dynamic, evaluate the result at every 1-D index, run the
// emitted host function, and compare with the same algebra on static values.
#include <random>

#include "emulator/host_interpreter.h"

TEST(LayoutDynamic, EmittedIrMatchesStaticAlgebra) {
  std::mt19937 rng(11);
  auto pick = [&](std::vector<int64_t> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  for (int n = 0; n < 40; ++n) {
    int64_t m0 = pick({4, 6, 8, 10, 12, 16}), m1 = pick({2, 3, 4, 6, 8}), ld = m0 * pick({1, 2});
    Layout stat = make_layout(IntTuple{m0, m1}, IntTuple{1, ld});
    Tiler tiler = Tiler::from_shape(IntTuple{pick({2, 4}), pick({2, 4})});
    Layout expect = zipped_divide(stat, tiler);

    ir::Module mod;
    ir::Function* f = mod.add_function("h", ir::FunctionKind::Host);
    ir::Builder b(f->body.get());
    BuilderScope scope(&b);
    Int a0 = Int::dynamic(f->body->add_arg(ir::i32()));
    Int a1 = Int::dynamic(f->body->add_arg(ir::i32()));
    Int a2 = Int::dynamic(f->body->add_arg(ir::i32()));
    Layout dyn = make_layout(IntTuple{a0, a1}, IntTuple{1, a2});
    Layout got = zipped_divide(dyn, tiler);
    ASSERT_TRUE(congruent(got.shape, expect.shape)) << to_string(got) << " vs " << to_string(expect);
    int64_t total = size(expect).value();
    std::vector<ir::Value*> outs;
    outs.push_back(size(got).materialize(ir::i32()));
    for (int64_t i = 0; i < total; ++i) outs.push_back(got(IntTuple(i)).as_int().materialize(ir::i32()));
    for (size_t k = 0; k < outs.size(); ++k) f->result_types.push_back(ir::i32());
    b.ret(outs);
    opencute::emulator::HostInterpreter interp(*f);
    auto r = interp.run({ir::Scalar::of_int(m0), ir::Scalar::of_int(m1), ir::Scalar::of_int(ld)}, nullptr);
    ASSERT_EQ(r.size(), outs.size());
    EXPECT_EQ(r[0].i, total);
    for (int64_t i = 0; i < total; ++i)
      ASSERT_EQ(r[size_t(i) + 1].i, expect(IntTuple(i)).as_int().value())
          << to_string(stat) << " / " << to_string(tiler) << " = " << to_string(expect) << " vs " << to_string(got)
          << " at " << i;
  }
}

TEST(LayoutDynamic, CompositionWithRuntimeStridesMatchesStatic) {
  // A (m0,m1):(s0,s1) composed with B (n0,n1):(1,n0), every leaf a run-time value; the IR the
  // general algorithm emits must map each index of B's domain as the static composition does.
  std::mt19937 rng(5);
  auto pick = [&](std::vector<int64_t> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  int checked = 0;
  for (int n = 0; n < 60; ++n) {
    int64_t m0 = pick({2, 4, 6, 8, 10}), m1 = pick({2, 3, 4}), s0 = pick({1, 3, 16}), s1 = pick({4, 5, 64});
    int64_t n0 = pick({1, 2, 5, m0}), n1 = pick({1, 2, 4});
    if (m0 % n0 != 0 || n0 * n1 > m0 * m1 || (n0 * n1 > m0 && (n0 * n1) % m0 != 0)) continue;  // admissible only
    Layout a_stat = make_layout(IntTuple{m0, m1}, IntTuple{s0, s1});
    Layout b_stat = make_layout(IntTuple{n0, n1}, IntTuple{1, n0});

    ir::Module mod;
    ir::Function* f = mod.add_function("h", ir::FunctionKind::Host);
    ir::Builder b(f->body.get());
    BuilderScope scope(&b);
    std::vector<Int> v;
    for (int k = 0; k < 6; ++k) v.push_back(Int::dynamic(f->body->add_arg(ir::i32())));
    Layout a = make_layout(IntTuple{v[0], v[1]}, IntTuple{v[2], v[3]});
    Layout bl = make_layout(IntTuple{v[4], v[5]}, IntTuple{1, v[4]});
    Layout got = composition(a, bl);
    int64_t total = n0 * n1;
    std::vector<ir::Value*> outs;
    for (int64_t i = 0; i < total; ++i) outs.push_back(got(IntTuple(i)).as_int().materialize(ir::i32()));
    for (size_t k = 0; k < outs.size(); ++k) f->result_types.push_back(ir::i32());
    b.ret(outs);
    opencute::emulator::HostInterpreter interp(*f);
    std::vector<ir::Scalar> args;
    for (int64_t x : {m0, m1, s0, s1, n0, n1}) args.push_back(ir::Scalar::of_int(x));
    auto r = interp.run(args, nullptr);
    for (int64_t i = 0; i < total; ++i) {
      int64_t expect = a_stat(b_stat(IntTuple(i))).as_int().value();
      ASSERT_EQ(r[size_t(i)].i, expect) << to_string(a_stat) << " o " << to_string(b_stat) << " at " << i << ": "
                                          << to_string(got);
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}
