// Float6E2M3FN / Float6E3M2FN (f6E2M3FN, f6E3M2FN): the host model against the formats' definitions
// (OCP MX: E2M3 bias 1, E3M2 bias 3, subnormals, no infinity or NaN), round to nearest even with
// saturation, and the IR types (6 bits, no storage of their own yet).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "ir/builder.h"
#include "ir/scalar_semantics.h"
#include "ir/types.h"
#include "ir/verifier.h"
#include "nvvm_test_support.h"
#include "support/fp6.h"
#include "target/nvvm/lower_to_nvvm.h"

namespace {

using namespace opencute;

double reference(int code, int mbits, int bias) {
  const int s = code >> 5, e = (code >> mbits) & ((1 << (5 - mbits)) - 1), m = code & ((1 << mbits) - 1);
  const double v = e == 0 ? std::ldexp(double(m), 1 - bias - mbits) : std::ldexp(1.0 + std::ldexp(m, -mbits), e - bias);
  return s ? -v : v;
}

TEST(Float6, EveryCodeDecodesAndEncodesBack) {
  for (int code = 0; code < 64; ++code) {
    EXPECT_EQ(double(support::fp6_bits_to_float(uint8_t(code), support::e2m3_format())), reference(code, 3, 1)) << code;
    EXPECT_EQ(double(support::fp6_bits_to_float(uint8_t(code), support::e3m2_format())), reference(code, 2, 3)) << code;
    if (code == 32) continue;  // -0 encodes back as itself only by sign
    EXPECT_EQ(int(support::float_to_fp6_bits(support::fp6_bits_to_float(uint8_t(code), support::e2m3_format()),
                                             support::e2m3_format())), code);
  }
  EXPECT_EQ(double(support::fp6_bits_to_float(31, support::e2m3_format())), 7.5);
  EXPECT_EQ(double(support::fp6_bits_to_float(31, support::e3m2_format())), 28.0);
}

TEST(Float6, RoundsToNearestEvenAndSaturates) {
  const auto& f = support::e2m3_format();
  // 1.0625 lies halfway between 1.0 (code 8) and 1.125 (code 9): the even code.
  EXPECT_EQ(int(support::float_to_fp6_bits(1.0625f, f)), 8);
  EXPECT_EQ(int(support::float_to_fp6_bits(1.1875f, f)), 10);  // between 9 and 10: 10
  EXPECT_EQ(int(support::float_to_fp6_bits(100.0f, f)), 31);
  EXPECT_EQ(int(support::float_to_fp6_bits(-INFINITY, f)), 63);
  EXPECT_EQ(int(support::float_to_fp6_bits(NAN, support::e3m2_format())), 31);
}

TEST(Float6, TypesAreSixBitFloatsWithoutStorage) {
  for (ir::Type t : {ir::f6e2m3(), ir::f6e3m2()}) {
    EXPECT_EQ(t->width, 6);
    EXPECT_TRUE(t->is_fp6());
    EXPECT_TRUE(t->is_sub_byte());
    uint8_t byte = 0;
    EXPECT_THROW(ir::store_packed_scalar(t, ir::Scalar::of_float(1.0), &byte, 0), std::domain_error);
  }
  EXPECT_EQ(ir::to_string(ir::f6e2m3()), "f6E2M3FN");
  EXPECT_EQ(ir::to_string(ir::f6e3m2()), "f6E3M2FN");
  EXPECT_EQ(ir::round_float(ir::f6e3m2(), 27.0), 28.0);
}

TEST(Float6, ConversionsLowerToHelpersThatCompileForSm100a) {
  ir::Module m;
  ir::Function* f = m.add_function("fp6_convert", ir::FunctionKind::Kernel);
  ir::Builder b(f->body.get());
  auto gptr = [](ir::Type t) { return ir::pointer_type(t, ir::AddrSpace::Gmem, 0); };
  ir::Value* in = f->body->add_arg(gptr(ir::f32()));
  ir::Value* out = f->body->add_arg(gptr(ir::f32()));
  ir::Value* tid = b.special(ir::OpCode::ThreadIdx);
  ir::Value* x = b.load(b.ptr_add(in, tid), ir::f32());
  ir::Value* y = b.cast(b.cast(x, ir::f6e3m2()), ir::f32());
  b.store(b.binary(ir::OpCode::Add, y, b.cast(b.cast(x, ir::f6e2m3()), ir::f32())), b.ptr_add(out, tid));
  b.ret({});
  ir::verify_or_throw(m);
  target::NvvmModuleText t = target::lower_kernels_to_nvvm(m);
  EXPECT_NE(t.text.find("@__opencute_e3m2_from_f32"), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("@__opencute_e2m3_to_f32"), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("%c30 = fcmp ugt float %m, 0x403A000000000000"), std::string::npos) << t.text;  // 26 (24 | 28)
  if (!nvvm_test::have_libnvvm()) GTEST_SKIP() << "libNVVM/libdevice not found";
  auto ptx = nvvm_test::compile_for(t, {"sm_100a", "sm_90a"});
  ASSERT_EQ(ptx.size(), 2u);
}

}  // namespace
