// Layout algebra: golden examples from the CuTe docs and the DSL reference, print formats,
// and error messages.
#include <gtest/gtest.h>

#include "layout/layout.h"
#include "layout/print.h"

using namespace opencute::layout;

namespace {
Layout L(IntTuple s, IntTuple d) { return make_layout(s, d); }
std::string S(const Layout& l) { return to_string(l); }
std::string S(const IntTuple& t) { return to_string(t); }
const IntTuple _ = IntTuple::underscore();

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const LayoutError& e) {
    return e.what();
  }
  return "<no error>";
}
}  // namespace

TEST(LayoutPrint, Formats) {
  EXPECT_EQ(S(L({4, 8}, {1, 4})), "(4,8):(1,4)");
  EXPECT_EQ(S(L({{2, 2}, 4}, {{1, 4}, 2})), "((2,2),4):((1,4),2)");
  EXPECT_EQ(S(L(4, 2)), "4:2");
  EXPECT_EQ(S(IntTuple{3, 8}), "(3,8)");
  EXPECT_EQ(S(IntTuple{_, 2}), "(_,2)");
  EXPECT_EQ(S(IntTuple(ScaledBasis{1, {0}})), "1@0");
  EXPECT_EQ(S(IntTuple(ScaledBasis{1, {2, 0, 0}})), "1@0@0@2");
  EXPECT_EQ(to_string(make_swizzle(3, 4, 3)), "S<3,4,3>");
  EXPECT_EQ(to_string(make_swizzle(0, 1, 2)), "S<0,4,3>");
  EXPECT_EQ(to_string(make_composed_layout(make_swizzle(3, 4, 3), 0, L({8, 64}, {64, 1}))),
            "S<3,4,3> o 0 o (8,64):(64,1)");
  EXPECT_EQ(S(make_identity_layout(IntTuple{4, 8})), "(4,8):(1@0,1@1)");
  EXPECT_EQ(S(make_layout(IntTuple{4, {2, 3}})), "(4,(2,3)):(1,(4,8))");
  EXPECT_EQ(to_string(Tiler::from_shape(IntTuple{8, 128})), "[8:1;128:1]");
}

TEST(LayoutAlgebra, DocumentedGoldens) {
  EXPECT_EQ(S(composition(L({6, 2}, {8, 2}), L({4, 3}, {3, 1}))), "((2,2),3):((24,2),8)");
  EXPECT_EQ(S(logical_divide(L({4, 2, 3}, {2, 1, 8}), Tiler(L(4, 2)))), "((2,2),(2,3)):((4,1),(2,8))");
  EXPECT_EQ(S(logical_product(L({2, 2}, {4, 1}), Tiler(L(6, 1)))), "((2,2),(2,3)):((4,1),(2,8))");
  EXPECT_EQ(S(blocked_product(L({2, 5}, {5, 1}), L({3, 4}, {1, 3}))), "((2,3),(5,4)):((5,10),(1,30))");
  EXPECT_EQ(S(raked_product(L({2, 5}, {5, 1}), L({3, 4}, {1, 3}))), "((3,2),(4,5)):((10,5),(30,1))");
  auto [tiler, tv] = make_layout_tv(L({2, 3}, {3, 1}), L({2, 2}, {2, 1}));
  EXPECT_EQ(S(tiler), "(4,6)");
  EXPECT_EQ(S(tv), "((3,2),(2,2)):((8,2),(4,1))");
  EXPECT_EQ(S(make_ordered_layout(IntTuple{32, 16, 8}, IntTuple{2, 0, 1})), "(32,16,8):(128,1,16)");
  EXPECT_EQ(S(make_ordered_layout(IntTuple{4, 4}, IntTuple{1, 0})), "(4,4):(4,1)");
  EXPECT_EQ(S(coalesce(L({2, {1, 6}}, {1, {6, 2}}), IntTuple{1, 1})), "(2,6):(1,2)");
  EXPECT_EQ(S(select(L({4, 8, 16}, {32, 4, 1}), {0, 2})), "(4,16):(32,1)");
  EXPECT_EQ(S(ceil_div(IntTuple{10, 6}, IntTuple{3, 4})), "(4,2)");
}

// CuTe's compact strides give a static size-1 mode stride 0 (it is never stepped along); the
// divides of the elementwise_add notebook print the same: (1,8) tiles of a (2048,2048):(2048,1)
// tensor are ((1,8),(2048,256)):((0,1),(2048,8)).
TEST(LayoutAlgebra, CompactStridesOfSizeOneModesAreZero) {
  EXPECT_EQ(S(make_layout(IntTuple{4, 1})), "(4,1):(1,0)");
  EXPECT_EQ(S(make_layout(IntTuple{1, {1, 8}})), "(1,(1,8)):(0,(0,1))");
  EXPECT_EQ(S(make_layout(IntTuple(1))), "1:0");
  EXPECT_EQ(S(make_ordered_layout(IntTuple{1, 4, 2}, IntTuple{2, 1, 0})), "(1,4,2):(0,2,1)");
  EXPECT_EQ(to_string(Tiler::from_shape(IntTuple{1, 8})), "[1:0;8:1]");
  EXPECT_EQ(S(zipped_divide(L({2048, 2048}, {2048, 1}), Tiler::from_shape(IntTuple{1, 8}))),
            "((1,8),(2048,256)):((0,1),(2048,8))");
  EXPECT_EQ(S(logical_divide(L(64, 512), Tiler::from_shape(IntTuple(1)))), "(1,64):(0,512)");
}

// Worked examples of CuTe's 02_layout_algebra.md.
TEST(LayoutAlgebra, CuteDocExamples) {
  // coalesce
  EXPECT_EQ(S(coalesce(L({2, {1, 6}}, {1, {6, 2}}))), "12:1");
  EXPECT_EQ(S(coalesce(L({2, {1, 6}}, {1, {6, 2}}), IntTuple{1, 1})), "(2,6):(1,2)");
  // composition
  EXPECT_EQ(S(composition(L(20, 2), L({5, 4}, {4, 1}))), "(5,4):(8,2)");
  EXPECT_EQ(S(composition(L({10, 2}, {16, 4}), L({5, 4}, {1, 5}))), "(5,(2,2)):(16,(80,4))");
  EXPECT_EQ(S(composition(L({12, {4, 8}}, {59, {13, 1}}), Tiler::from_shape(IntTuple{3, 8}))),
            "(3,(4,2)):(59,(13,1))");
  EXPECT_EQ(S(composition(L({12, {4, 8}}, {59, {13, 1}}), Tiler({Tiler(L(3, 4)), Tiler(L(8, 2))}))),
            "(3,(2,4)):(236,(26,1))");
  // complement
  EXPECT_EQ(S(complement(L(4, 1), 24)), "6:4");
  EXPECT_EQ(S(complement(L(6, 4), 24)), "4:1");
  EXPECT_EQ(S(complement(L({4, 6}, {1, 4}), 24)), "1:0");
  EXPECT_EQ(S(complement(L(4, 2), 24)), "(2,3):(1,8)");
  EXPECT_EQ(S(complement(L({2, 4}, {1, 6}), 24)), "3:2");
  EXPECT_EQ(S(complement(L({2, 2}, {1, 6}), 24)), "(3,2):(2,12)");
  // logical_divide of a 2-D layout by a by-mode tiler
  EXPECT_EQ(S(logical_divide(L({9, {4, 8}}, {59, {13, 1}}), Tiler({Tiler(L(3, 3)), Tiler(L({2, 4}, {1, 8}))}))),
            "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))");
  // zipped / tiled / flat divide
  Layout a = L({9, {4, 8}}, {59, {13, 1}});
  Tiler t({Tiler(L(3, 3)), Tiler(L({2, 4}, {1, 8}))});
  EXPECT_EQ(S(zipped_divide(a, t)), "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))");
  EXPECT_EQ(S(tiled_divide(a, t)), "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))");
  EXPECT_EQ(S(flat_divide(a, t)), "(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))");
  // logical_product
  EXPECT_EQ(S(logical_product(L({2, 2}, {4, 1}), Tiler(L(6, 1)))), "((2,2),(2,3)):((4,1),(2,8))");
  EXPECT_EQ(S(logical_product(L({2, 2}, {4, 1}), Tiler(L({4, 2}, {2, 1})))), "((2,2),(4,2)):((4,1),(8,2))");
  EXPECT_EQ(S(logical_product(L({2, 5}, {5, 1}), Tiler({Tiler(L(3, 5)), Tiler(L(4, 6))}))),
            "((2,3),(5,4)):((5,10),(1,30))");
}

TEST(LayoutAlgebra, QueriesAndUtilities) {
  Layout l = L({{2, 2}, 4}, {{1, 4}, 2});
  EXPECT_EQ(size(l).value(), 16);
  EXPECT_EQ(size(l, {0}).value(), 4);
  EXPECT_EQ(cosize(L({4, 8}, {1, 4})).value(), 32);
  EXPECT_EQ(cosize(L({2, 4}, {1, 6})).value(), 20);
  EXPECT_EQ(rank(l), 2);
  EXPECT_EQ(depth(l), 2);
  EXPECT_EQ(depth(IntTuple(3)), 0);
  EXPECT_EQ(depth(IntTuple()), 1);
  EXPECT_EQ(S(get(l, {0, 1})), "2:4");
  EXPECT_EQ(S(group_modes(L({2, 3, 4}, {1, 2, 6}), 0, 2)), "((2,3),4):((1,2),6)");
  EXPECT_EQ(S(slice(IntTuple{_, 2}, L({4, 8}, {1, 4}))), "(4):(1)");
  EXPECT_EQ(S(dice(IntTuple{_, 2}, L({4, 8}, {1, 4}))), "(8):(4)");
  auto so = slice_and_offset(IntTuple{_, 2}, L({4, 8}, {1, 4}));
  EXPECT_EQ(S(so.second), "8");
  EXPECT_EQ(S(append(IntTuple{4, 4}, 2)), "(4,4,2)");
  EXPECT_EQ(S(prepend(L(4, 1), L(1, 0), 3)), "(1,1,4):(0,0,1)");
  EXPECT_EQ(S(flatten(l)), "(2,2,4):(1,4,2)");
  EXPECT_EQ(S(filter(L({4, 2, 8}, {1, 0, 4}))), "32:1");
  EXPECT_EQ(S(filter_zeros(L({4, 2}, {1, 0}))), "(4,1):(1,0)");
  EXPECT_EQ(S(product_each(IntTuple{{2, 2}, 4})), "(4,4)");
  EXPECT_EQ(product(IntTuple{{2, 2}, 4}).value(), 16);
  EXPECT_EQ(inner_product(IntTuple{2, 3}, IntTuple{4, 5}).value(), 23);
  EXPECT_EQ(S(shape_div(IntTuple{3, 4}, 6)), "(1,2)");
  EXPECT_EQ(S(shape_div(IntTuple{4, 6}, IntTuple{2, 3})), "(2,2)");
  EXPECT_EQ(S(ceil_div(IntTuple{10, 6}, 4)), "(3,6)");
  EXPECT_EQ(elem_less(IntTuple{1, 2}, IntTuple{2, 3}).value(), 1);
  EXPECT_EQ(elem_less(IntTuple{1, 3}, IntTuple{2, 3}).value(), 0);
  // crd2idx / idx2crd, 1-D index on a multi-mode layout
  Layout m = L({4, 8}, {8, 1});
  EXPECT_EQ(S(m(IntTuple{1, 2})), "10");
  EXPECT_EQ(S(m(IntTuple(5))), "9");
  EXPECT_EQ(S(idx2crd(IntTuple(13), IntTuple{4, {2, 4}})), "(1,(1,1))");
  EXPECT_EQ(S(crd2idx(IntTuple{1, {1, 1}}, IntTuple{4, {2, 4}})), "13");
  EXPECT_EQ(S(make_identity_layout(IntTuple{4, 8})(IntTuple{2, 3})), "(2,3)");
  EXPECT_EQ(S(make_identity_layout(IntTuple{4, 8})(IntTuple(9))), "(1,2)");
  // tile_to_shape, recast, max_common
  EXPECT_EQ(S(tile_to_shape(L({8, 8}, {8, 1}), IntTuple{32, 32})), "(32,(8,4)):(8,(1,256))");
  EXPECT_EQ(S(tile_to_shape(L({8, 8}, {8, 1}), IntTuple{32, 32}, IntTuple{1, 0})), "((8,4),(8,4)):((8,256),(1,64))");
  EXPECT_EQ(S(recast_layout(16, 8, L({8, 4}, {1, 8}))), "(4,4):(1,4)");
  EXPECT_EQ(S(recast_layout(8, 16, L({4, 4}, {1, 4}))), "(8,4):(1,8)");
  EXPECT_EQ(S(recast_layout(32, 16, L({4, 8}, {8, 1}))), "(4,4):(4,1)");
  EXPECT_EQ(S(max_common_layout(L({4, 8}, {1, 4}), L({4, 8}, {1, 4}))), "32:1");
  EXPECT_EQ(max_common_vector(L({4, 8}, {1, 4}), L({4, 8}, {1, 4})).value(), 32);
  EXPECT_EQ(max_common_vector(L({4, 8}, {1, 4}), L({4, 8}, {8, 1})).value(), 1);
  EXPECT_EQ(max_common_vector(L({4, 8}, {1, 4}), L({4, 8}, {1, 8})).value(), 4);
  EXPECT_EQ(S(right_inverse(L({4, 8}, {8, 1}))), "(8,4):(4,1)");
  EXPECT_EQ(S(left_inverse(L({4, 8}, {8, 1}))), "(8,4):(4,1)");
}

TEST(LayoutAlgebra, ScaledBasisStrides) {
  Layout id = make_identity_layout(IntTuple{8, 16});
  Layout z = zipped_divide(id, Tiler::from_shape(IntTuple{4, 8}));
  EXPECT_EQ(S(z), "((4,8),(2,2)):((1@0,1@1),(4@0,8@1))");
  EXPECT_EQ(S(z(IntTuple{IntTuple{3, 5}, IntTuple{1, 1}})), "(7,13)");
  EXPECT_EQ(S(make_identity_layout(IntTuple{{2, 2}, 4})), "((2,2),4):((1@0@0,1@1@0),1@1)");
  EXPECT_EQ(S(coalesce(make_identity_layout(IntTuple{{2, 2}, 4}))), "(2,2,4):(1@0@0,1@1@0,1@1)");
  EXPECT_EQ(S(composition(make_identity_layout(IntTuple{4, 8}), make_layout(IntTuple{2, 2}, IntTuple{ScaledBasis{1, {1}}, ScaledBasis{2, {0}}}))),
            "(2,2):(1@1,2@0)");
  EXPECT_EQ(S(stride_scale(3, IntTuple(ScaledBasis{2, {1}}))), "6@1");
}

TEST(Swizzle, AppliesXor) {
  Swizzle sw = make_swizzle(3, 4, 3);
  // bits [7,10) are XOR-ed into bits [4,7)
  EXPECT_EQ(sw(0), 0);
  EXPECT_EQ(sw(1 << 7), (1 << 7) | (1 << 4));
  EXPECT_EQ(sw(0x3F0), 0x3F0 ^ 0x70);
  for (int64_t i = 0; i < 1024; ++i) EXPECT_EQ(sw(sw(i)), i);
  ComposedLayout c = make_composed_layout(sw, 0, L({8, 64}, {64, 1}));
  EXPECT_EQ(S(c(IntTuple{1, 0})), "64");
  EXPECT_EQ(S(c(IntTuple{2, 1})), "145");  // 129: bit 7 set -> XOR bit 4
  EXPECT_EQ(to_string(composition(c, Tiler::from_shape(IntTuple{8, 8}))), "S<3,4,3> o 0 o (8,8):(64,1)");
  // recast: 16-bit elements viewed as 32-bit ones halve the contiguous mode and lower M by one
  EXPECT_EQ(to_string(recast_layout(32, 16, c)), "S<3,3,3> o 0 o (8,32):(32,1)");
  EXPECT_EQ(to_string(recast_layout(8, 16, c)), "S<3,5,3> o 0 o (8,128):(128,1)");
  EXPECT_EQ(to_string(upcast(make_swizzle(3, 1, 3), 4)), "S<2,0,3>");
  EXPECT_EQ(max_common_vector(c, L({8, 64}, {64, 1})).value(), 16);
  EXPECT_EQ(max_common_vector(c, c).value(), 512);
}

TEST(LayoutErrors, NameTheirFunction) {
  auto starts = [](const std::string& msg, const std::string& fn) { return msg.rfind(fn + ":", 0) == 0; };
  EXPECT_TRUE(starts(error_of([] { make_layout(IntTuple{4, 8}, IntTuple(1)); }), "make_layout"));
  EXPECT_TRUE(starts(error_of([] { logical_divide(L(4, 1), Tiler::from_shape(IntTuple{2, 2})); }), "logical_divide"));
  EXPECT_TRUE(starts(error_of([] { composition(L({4, 3}, {1, 8}), L(2, 3)); }), "composition"));
  EXPECT_TRUE(starts(error_of([] { composition(L(4, 1), Tiler::from_shape(IntTuple{2, 2})); }), "composition"));
  EXPECT_TRUE(starts(error_of([] { complement(L({2, 2}, {1, 1}), 8); }), "complement"));
  EXPECT_TRUE(starts(error_of([] { tile_to_shape(L(3, 1), IntTuple(8)); }), "tile_to_shape"));
  EXPECT_TRUE(starts(error_of([] { make_swizzle(3, 4, 2); }), "make_swizzle"));
  EXPECT_TRUE(starts(error_of([] { select(L({4, 8}, {1, 4}), {2}); }), "select"));
  EXPECT_TRUE(starts(error_of([] { group_modes(IntTuple{4, 8}, 1, 1); }), "group_modes"));
  EXPECT_TRUE(starts(error_of([] { coalesce(L(4, 1), IntTuple{1, 1}); }), "coalesce"));
  EXPECT_TRUE(starts(error_of([] { logical_product(L(4, 1), Tiler::from_shape(IntTuple{2, 2})); }), "logical_product"));
  EXPECT_TRUE(starts(error_of([] { shape_div(Int(3), Int(2)); }), "shape_div"));
  EXPECT_NE(error_of([] { logical_divide(L(4, 1), Tiler::from_shape(IntTuple{2, 2})); }).find("4:1"), std::string::npos);
}
