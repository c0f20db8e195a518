// TensorSpec: the examples and error messages of the CuTe DSL's "Integration with Frameworks"
// page (mark_layout_dynamic, mark_compact_shape_dynamic), and pointer alignment.
#include <gtest/gtest.h>

#include <climits>
#include <functional>

#include "runtime/alignment.h"
#include "runtime/tensor_spec.h"

using opencute::runtime::TensorSpec;
using opencute::runtime::TensorSpecError;

namespace {

// The page's tensors: a = (8,4,16,2):(2,16,64,1); b = (1,4,1,32,1):(1,1,1,4,1) (torch's
// DLPack export gives size-1 modes stride 1); c = (2,2):(8,2); d = (3,4,2,5):(5,0,0,1).
TensorSpec a() { return TensorSpec({8, 4, 16, 2}, {2, 16, 64, 1}, false); }
TensorSpec b() { return TensorSpec({1, 4, 1, 32, 1}, {1, 1, 1, 4, 1}, false); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TensorSpecError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(TensorSpec, StartsStatic) {
  TensorSpec s({30, 20}, {20, 1}, false);
  EXPECT_EQ(s.layout_string(), "(30,20):(20,1)");
  EXPECT_EQ(s.value_string(), "(30, 20):(20, 1)");
  EXPECT_EQ(TensorSpec({7}, {1}, false).value_string(), "(7,):(1,)");
}

TEST(TensorSpec, MarkLayoutDynamicPageExamples) {
  TensorSpec t0 = a();
  t0.mark_layout_dynamic(std::nullopt);
  EXPECT_EQ(t0.layout_string(), "(?,?,?,?):(?,?,?,1)");
  TensorSpec t1 = b();
  t1.mark_layout_dynamic(0);
  EXPECT_EQ(t1.layout_string(), "(?,?,?,?,?):(1,?,?,?,?)");
  TensorSpec t2 = b();
  t2.mark_layout_dynamic(2);
  EXPECT_EQ(t2.layout_string(), "(?,?,?,?,?):(?,?,1,?,?)");
  TensorSpec t3({2, 2}, {8, 2}, false);
  t3.mark_layout_dynamic(std::nullopt);
  EXPECT_EQ(t3.layout_string(), "(?,?):(?,?)");
  TensorSpec t4({3, 4, 2, 5}, {5, 0, 0, 1}, false);
  t4.mark_layout_dynamic(std::nullopt);
  EXPECT_EQ(t4.layout_string(), "(?,?,?,?):(?,0,0,1)");
  // Several unit strides, exactly one of them on a mode longer than 1: that one leads.
  TensorSpec t5 = b();
  t5.mark_layout_dynamic(std::nullopt);
  EXPECT_EQ(t5.layout_string(), "(?,?,?,?,?):(?,1,?,?,?)");
  TensorSpec neg({2, 2, 3, 4}, {2, 1, 4, 12}, false);
  EXPECT_EQ(error_of([&] { neg.mark_layout_dynamic(-1); }), "Expected strides[leading_dim] == 1, but got 12");
  TensorSpec neg_ok({2, 2, 3, 4}, {12, 4, 2, 1}, false);
  neg_ok.mark_layout_dynamic(-1);
  EXPECT_EQ(neg_ok.layout_string(), "(?,?,?,?):(?,?,?,1)");
}

TEST(TensorSpec, MarkLayoutDynamicWidths) {
  TensorSpec s = a();
  s.mark_layout_dynamic(std::nullopt);
  EXPECT_EQ(s.stride()[0].width, 64);
  EXPECT_EQ(s.shape()[0].width, 32);
  TensorSpec s32({8, 4}, {4, 1}, true);
  s32.mark_layout_dynamic(std::nullopt);
  EXPECT_EQ(s32.stride()[0].width, 32);
}

TEST(TensorSpec, MarkLayoutDynamicErrors) {
  TensorSpec ones({1, 1, 1}, {1, 1, 1}, false);
  EXPECT_EQ(error_of([&] { ones.mark_layout_dynamic(std::nullopt); }),
            "Can't deduce the leading dimension from layout (multiple dimensions have stride 1 but none has size > 1), "
            "please specify the leading_dim explicitly.");
  TensorSpec t6 = a();
  EXPECT_EQ(error_of([&] { t6.mark_layout_dynamic(1); }), "Expected strides[leading_dim] == 1, but got 16");
  TensorSpec t7 = b();
  EXPECT_EQ(error_of([&] { t7.mark_layout_dynamic(3); }), "Expected strides[leading_dim] == 1, but got 4");
  EXPECT_EQ(error_of([&] { t7.mark_layout_dynamic(5); }), "Expected leading_dim to be in range [-5, 5), but got 5");
  TensorSpec t8({1000000000, 1000000000}, {1000000000, 1}, true);
  EXPECT_EQ(error_of([&] { t8.mark_layout_dynamic(std::nullopt); }),
            "Layout in DLTensorWrapper has int32 overflow risk. Please set use_32bit_stride to False.");
  // A failed call changes nothing.
  EXPECT_EQ(t6.layout_string(), "(8,4,16,2):(2,16,64,1)");
}

TEST(TensorSpec, MarkCompactShapeDynamicPageExamples) {
  TensorSpec t0 = a();
  t0.mark_compact_shape_dynamic(0, std::nullopt, 2);
  EXPECT_EQ(t0.layout_string(), "(?{div=2},4,16,2):(2,?{div=4},?{div=16},1)");
  TensorSpec t1 = a();
  t1.mark_compact_shape_dynamic(1, std::nullopt, 2);
  EXPECT_EQ(t1.layout_string(), "(8,?{div=2},16,2):(2,16,?{div=32},1)");
  TensorSpec t2 = a();
  t2.mark_compact_shape_dynamic(1, std::nullopt, 2);
  t2.mark_compact_shape_dynamic(3, std::nullopt, 2);
  EXPECT_EQ(t2.layout_string(), "(8,?{div=2},16,?{div=2}):(?{div=2},?{div=16},?{div=32},1)");
  TensorSpec t3 = b();
  t3.mark_compact_shape_dynamic(2, std::vector<int>{3, 0, 2, 4, 1}, 1);
  EXPECT_EQ(t3.layout_string(), "(1,4,?,32,1):(0,1,4,?{div=4},0)");
  TensorSpec t4 = b();
  t4.mark_compact_shape_dynamic(2, std::vector<int>{2, 3, 4, 0, 1}, 1);
  EXPECT_EQ(t4.layout_string(), "(1,4,?,32,1):(0,1,128,4,0)");
}

TEST(TensorSpec, MarkCompactShapeDynamicErrors) {
  TensorSpec t2 = a();
  t2.mark_compact_shape_dynamic(1, std::nullopt, 2);
  t2.mark_compact_shape_dynamic(3, std::nullopt, 2);
  EXPECT_EQ(error_of([&] { t2.mark_compact_shape_dynamic(3, std::vector<int>{0, 1, 2, 3}, 5); }),
            "The stride_order is not consistent with the last stride_order");
  TensorSpec t6 = a();
  EXPECT_EQ(error_of([&] { t6.mark_compact_shape_dynamic(3, std::vector<int>{0, 1, 2, 3}, 5); }),
            "The stride_order is not consistent with the deduced stride_order");
  TensorSpec t = b();
  EXPECT_EQ(error_of([&] { t.mark_compact_shape_dynamic(0, std::nullopt, 4); }),
            "The layout could not be deduced, please specify the stride_order explicitly");
  EXPECT_EQ(error_of([&] { t.mark_compact_shape_dynamic(30, std::vector<int>{3, 0, 2, 4, 1}, 5); }),
            "Expected mode value to be in range [0, 5), but got 30");
  EXPECT_EQ(error_of([&] { t.mark_compact_shape_dynamic(3, std::vector<int>{2, 1, 2, 3, 4}, 5); }),
            "Expected stride_order to contain all the dimensions of the tensor, but it doesn't contain 0.");
  EXPECT_EQ(error_of([&] { t.mark_compact_shape_dynamic(3, std::vector<int>{0, 1, 2, 3, 4, 5}, 5); }),
            "Expected stride_order to have 5 elements, but got 6.");
  EXPECT_EQ(error_of([&] { t.mark_compact_shape_dynamic(0, std::vector<int>{3, 2, 4, 0, 1}, 4); }),
            "The shape(1) of mode(0) is not divisible by the divisibility(4)");
  EXPECT_EQ(error_of([&] { t.mark_compact_shape_dynamic(0, std::vector<int>{2, 1, 3, 0, 4}, 1); }),
            "The stride_order is not consistent with the layout");
  TensorSpec t13({1000000000, 1000000000}, {1000000000, 1}, true);
  EXPECT_EQ(error_of([&] { t13.mark_compact_shape_dynamic(0, std::nullopt, 1); }),
            "Layout in DLTensorWrapper has int32 overflow risk. Please set use_32bit_stride to False.");
  TensorSpec gapped({2, 2}, {8, 2}, false);
  EXPECT_NE(error_of([&] { gapped.mark_compact_shape_dynamic(0, std::nullopt, 1); }).find("not compact"),
            std::string::npos);
  EXPECT_EQ(t.layout_string(), "(1,4,1,32,1):(1,1,1,4,1)");  // failed calls changed nothing
}

TEST(TensorSpec, CompactAfterLayoutDynamicKeepsDynamicEntries) {
  // tensorop_gemm's pattern: (m,k,l):(k,1,m*k) marked dynamic on mode 1, then mode 1 gets a
  // divisibility; the strides outside it inherit it.
  TensorSpec s({64, 32, 3}, {32, 1, 2048}, false);
  s.mark_layout_dynamic(1);
  s.mark_compact_shape_dynamic(1, std::vector<int>{2, 0, 1}, 8);
  EXPECT_EQ(s.layout_string(), "(?,?{div=8},?):(?{div=8},1,?{div=8})");
}

TEST(TensorSpec, Cosize) {
  EXPECT_EQ(opencute::runtime::cosize({8, 4}, {4, 1}), 32);
  EXPECT_EQ(opencute::runtime::cosize({3, 4}, {0, 1}), 4);
  EXPECT_EQ(opencute::runtime::cosize({0, 4}, {4, 1}), 0);
  EXPECT_EQ(opencute::runtime::cosize({INT64_MAX / 2, 4}, {4, 1}), INT64_MAX);  // saturates
}

TEST(Alignment, ResolvesAndChecks) {
  using namespace opencute::runtime;
  EXPECT_EQ(resolve_alignment(std::nullopt, 4), 4);
  EXPECT_EQ(resolve_alignment(16, 2), 16);
  EXPECT_THROW(resolve_alignment(12, 4), TensorSpecError);
  EXPECT_THROW(resolve_alignment(0, 4), TensorSpecError);
  EXPECT_NO_THROW(check_address_alignment(0x1000, 32, "ptr"));
  try {
    check_address_alignment(0x1008, 16, "The tensor's data pointer");
    FAIL();
  } catch (const TensorSpecError& e) {
    EXPECT_STREQ(e.what(), "The tensor's data pointer 0x0000000000001008 is not aligned to assumed_align=16 bytes");
  }
  EXPECT_EQ(alignment_after_offset(32, 0), 32);
  EXPECT_EQ(alignment_after_offset(32, 8), 8);
  EXPECT_EQ(alignment_after_offset(32, 64), 32);
  EXPECT_EQ(alignment_after_offset(16, -6), 2);
}
