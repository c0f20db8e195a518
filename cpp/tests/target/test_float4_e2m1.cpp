// Float4E2M1FN (f4E2M1FN): the host model of the format against its definition, packed storage
// (two codes a byte, the first in the low nibble), sub-byte sizes refusing to round, pointer
// offsets in whole bytes, and the NVVM lowering of the conversions: one comparison sequence that
// ptxas accepts on every target (sm_100a's cvt.rn.satfinite.e2m1x2.f32 is refused on plain
// sm_100, and the lowering cannot tell the two apart).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "ir/builder.h"
#include "ir/scalar_semantics.h"
#include "ir/verifier.h"
#include "nvvm_test_support.h"
#include "support/fp4.h"
#include "target/nvvm/lower_to_nvvm.h"

namespace {

using namespace opencute;

// The value of a code from the format's definition: bias 1, subnormal step 0.5.
double e2m1_reference(int code) {
  const int s = code >> 3, e = (code >> 1) & 3, m = code & 1;
  const double v = e == 0 ? m * 0.5 : (1 + m * 0.5) * std::ldexp(1.0, e - 1);
  return s ? -v : v;
}

TEST(Float4E2M1, EveryCodeDecodesAndEncodesBack) {
  for (int code = 0; code < 16; ++code) {
    const float v = support::e2m1_bits_to_float(uint8_t(code));
    EXPECT_EQ(double(v), e2m1_reference(code)) << code;
    EXPECT_EQ(std::signbit(v), bool(code & 8)) << code;
    EXPECT_EQ(int(support::float_to_e2m1_bits(v)), code) << code;
  }
}

TEST(Float4E2M1, RoundsToNearestEvenAndSaturates) {
  // each midpoint goes to the even code of its two neighbours
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const int even[] = {0, 2, 2, 4, 4, 6, 6};
  for (int k = 0; k < 7; ++k) {
    EXPECT_EQ(int(support::float_to_e2m1_bits(ties[k])), even[k]) << ties[k];
    EXPECT_EQ(int(support::float_to_e2m1_bits(-ties[k])), 8 | even[k]) << ties[k];
  }
  EXPECT_EQ(int(support::float_to_e2m1_bits(0.2501f)), 1);
  EXPECT_EQ(int(support::float_to_e2m1_bits(5.001f)), 7);
  EXPECT_EQ(int(support::float_to_e2m1_bits(1e30f)), 7);
  EXPECT_EQ(int(support::float_to_e2m1_bits(-INFINITY)), 15);
  EXPECT_EQ(int(support::float_to_e2m1_bits(NAN)), 7);
  EXPECT_EQ(int(support::float_to_e2m1_bits(-0.0f)), 8);
}

TEST(Float4E2M1, TypeIsFourBitsWithNoByteSize) {
  ir::Type f4 = ir::f4e2m1();
  EXPECT_EQ(f4->width, 4);
  EXPECT_TRUE(f4->is_sub_byte());
  EXPECT_EQ(f4->bit_size(), 4);
  EXPECT_EQ(f4->min_align(), 1);
  EXPECT_EQ(ir::to_string(f4), "f4E2M1FN");
  EXPECT_THROW(f4->byte_size(), std::domain_error);  // no rounding to 0 or 1 byte
  EXPECT_EQ(ir::vector_type(f4, 8)->byte_size(), 4);  // whole bytes are fine
  EXPECT_THROW(ir::vector_type(f4, 3)->byte_size(), std::domain_error);
  EXPECT_EQ(ir::pointer_type(f4, ir::AddrSpace::Gmem, 0)->align, 1);
  EXPECT_FALSE(ir::f8e4m3()->is_sub_byte());
  EXPECT_FALSE(ir::bool_type()->is_sub_byte());  // a boolean takes a byte in memory
}

TEST(Float4E2M1, PackedStorageUsesLowNibbleFirst) {
  uint8_t bytes[2] = {0xAA, 0xAA};
  ir::Type f4 = ir::f4e2m1();
  ir::store_packed_scalar(f4, ir::Scalar::of_float(1.5), bytes, 0);   // code 3
  ir::store_packed_scalar(f4, ir::Scalar::of_float(-6.0), bytes, 1);  // code 15
  ir::store_packed_scalar(f4, ir::Scalar::of_float(2.7), bytes, 3);   // rounds to 3.0, code 5
  EXPECT_EQ(bytes[0], 0xF3);
  EXPECT_EQ(bytes[1], 0x5A);  // element 2 (low nibble of byte 1) kept
  EXPECT_EQ(ir::load_packed_scalar(f4, bytes, 1).f, -6.0);
  EXPECT_EQ(ir::load_packed_scalar(f4, bytes, 2).f, e2m1_reference(0xA));
  EXPECT_EQ(ir::load_packed_scalar(f4, bytes, 3).f, 3.0);
  EXPECT_EQ(ir::round_float(f4, 2.7), 3.0);
}

TEST(Float4E2M1, PointerOffsetsAreWholeBytes) {
  ir::Module m;
  ir::Function* f = m.add_function("k", ir::FunctionKind::Kernel);
  ir::Builder b(f->body.get());
  ir::Value* p = f->body->add_arg(ir::pointer_type(ir::f4e2m1(), ir::AddrSpace::Gmem, 16));
  ir::Value* q = b.ptr_add(p, b.const_int(ir::i64(), 32));  // 16 bytes: the alignment survives
  EXPECT_EQ(q->type->align, 16);
  EXPECT_EQ(b.ptr_add(p, b.const_int(ir::i64(), 2))->type->align, 1);
  EXPECT_ANY_THROW(b.ptr_add(p, b.const_int(ir::i64(), 3)));  // half a byte in
}

// A kernel converting f32 -> e2m1 -> f32 and bytes' low nibbles -> f32.
target::NvvmModuleText conversion_kernel() {
  ir::Module m;
  ir::Function* f = m.add_function("e2m1_convert", ir::FunctionKind::Kernel);
  ir::Builder b(f->body.get());
  auto gptr = [](ir::Type t) { return ir::pointer_type(t, ir::AddrSpace::Gmem, 0); };
  ir::Value* in = f->body->add_arg(gptr(ir::f32()));
  ir::Value* codes = f->body->add_arg(gptr(ir::int_type(8, false)));
  ir::Value* out = f->body->add_arg(gptr(ir::f32()));
  ir::Value* tid = b.special(ir::OpCode::ThreadIdx);
  ir::Value* x = b.load(b.ptr_add(in, tid), ir::f32());
  ir::Value* q = b.cast(x, ir::f4e2m1());
  b.store(b.cast(b.unary(ir::OpCode::Neg, q), ir::f32()), b.ptr_add(out, tid));
  ir::Value* byte = b.load(b.ptr_add(codes, tid), ir::int_type(8, false));
  ir::Value* nibble = b.bitcast(b.cast(byte, ir::int_type(4, false)), ir::f4e2m1());
  ir::Value* tid2 = b.binary(ir::OpCode::Add, tid, b.const_int(ir::i32(), 64));
  b.store(b.cast(nibble, ir::f32()), b.ptr_add(out, tid2));
  b.ret({});
  ir::verify_or_throw(m);
  return target::lower_kernels_to_nvvm(m);
}

TEST(Float4E2M1, ConversionsLowerToPtxForEachArchitecture) {
  target::NvvmModuleText t = conversion_kernel();
  EXPECT_NE(t.text.find("fcmp ugt float %m, 0x3FD0000000000000"), std::string::npos) << t.text;  // 0.25
  EXPECT_NE(t.text.find("xor i4"), std::string::npos) << t.text;  // negation flips the sign bit
  if (!nvvm_test::have_libnvvm()) GTEST_SKIP() << "libNVVM/libdevice not found";
  auto ptx = nvvm_test::compile_for(t, {"sm_80", "sm_90a", "sm_100a", "sm_100", "sm_120"});
  ASSERT_EQ(ptx.size(), 5u);
  for (auto& [arch, text] : ptx) EXPECT_EQ(text.find("e2m1x2"), std::string::npos) << arch;
}

}  // namespace
