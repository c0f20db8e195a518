// Float8E8M0FNU (f8E8M0FNU), the MX formats' scale factors: the host model against the format's
// definition (2^(bits - 127), 0xFF NaN; f32 -> e8m0 toward zero), the IR type, and the NVVM
// lowering of the conversions (inline integer operations that libNVVM compiles for sm_100a).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "ir/builder.h"
#include "ir/scalar_semantics.h"
#include "ir/verifier.h"
#include "nvvm_test_support.h"
#include "support/e8m0.h"
#include "target/nvvm/lower_to_nvvm.h"

namespace {

using namespace opencute;

TEST(Float8E8M0, EveryCodeIsAPowerOfTwoAndEncodesBack) {
  for (int code = 0; code < 255; ++code) {
    const float v = support::e8m0_bits_to_float(uint8_t(code));
    EXPECT_EQ(double(v), std::ldexp(1.0, code - 127)) << code;
    EXPECT_EQ(int(support::float_to_e8m0_bits(v)), code) << code;
  }
  EXPECT_TRUE(std::isnan(support::e8m0_bits_to_float(0xFF)));
}

TEST(Float8E8M0, RoundsTowardZeroAndSaturates) {
  EXPECT_EQ(int(support::float_to_e8m0_bits(3.0f)), 128);    // 2 <= 3 < 4: 2^1
  EXPECT_EQ(int(support::float_to_e8m0_bits(0.74f)), 126);   // 2^-1
  EXPECT_EQ(int(support::float_to_e8m0_bits(0.0f)), 0);      // no zero: the smallest, 2^-127
  EXPECT_EQ(int(support::float_to_e8m0_bits(-4.0f)), 0);     // no sign
  EXPECT_EQ(int(support::float_to_e8m0_bits(INFINITY)), 0xFE);
  EXPECT_EQ(int(support::float_to_e8m0_bits(NAN)), 0xFF);
}

TEST(Float8E8M0, TypeIsAnEightBitFloatNamedAsMlirDoes) {
  ir::Type t = ir::f8e8m0();
  EXPECT_EQ(t->width, 8);
  EXPECT_TRUE(t->is_e8m0());
  EXPECT_FALSE(t->is_fp8());  // not an MMA operand type
  EXPECT_EQ(ir::to_string(t), "f8E8M0FNU");
  uint8_t byte = 0;
  ir::store_scalar(t, ir::Scalar::of_float(5.0), &byte);
  EXPECT_EQ(byte, 129);
  EXPECT_EQ(ir::load_scalar(t, &byte).f, 4.0);
}

TEST(Float8E8M0, ConversionsLowerToInlineIntegerCode) {
  ir::Module m;
  ir::Function* f = m.add_function("e8m0_convert", ir::FunctionKind::Kernel);
  ir::Builder b(f->body.get());
  auto gptr = [](ir::Type t) { return ir::pointer_type(t, ir::AddrSpace::Gmem, 0); };
  ir::Value* in = f->body->add_arg(gptr(ir::f32()));
  ir::Value* out = f->body->add_arg(gptr(ir::f32()));
  ir::Value* tid = b.special(ir::OpCode::ThreadIdx);
  ir::Value* x = b.load(b.ptr_add(in, tid), ir::f32());
  b.store(b.cast(b.cast(x, ir::f8e8m0()), ir::f32()), b.ptr_add(out, tid));
  b.ret({});
  ir::verify_or_throw(m);
  target::NvvmModuleText t = target::lower_kernels_to_nvvm(m);
  EXPECT_NE(t.text.find("lshr i32"), std::string::npos) << t.text;        // the exponent field
  EXPECT_NE(t.text.find("i32 4194304"), std::string::npos) << t.text;     // 0x00 -> 2^-127
  EXPECT_NE(t.text.find("i32 2143289344"), std::string::npos) << t.text;  // 0xFF -> NaN
  if (!nvvm_test::have_libnvvm()) GTEST_SKIP() << "libNVVM/libdevice not found";
  auto ptx = nvvm_test::compile_for(t, {"sm_100a"});
  ASSERT_EQ(ptx.size(), 1u);
}

}  // namespace
