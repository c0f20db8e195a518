// NVVM lowering of the ops the Ampere examples add besides tensor cores: named barriers,
// the rcp / ex2 approximations and FP8 conversions. Each kernel is lowered, compiled by libNVVM
// for sm_80 and sm_90a and linked by nvJitLink (or ptxas); compilation skips without libNVVM.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "ir/builder.h"
#include "ir/scalar_semantics.h"
#include "ir/verifier.h"
#include "support/cuda_paths.h"
#include "support/fp8.h"
#include "target/nvvm/lower_to_nvvm.h"
#include "target/nvvm/nvvm_compiler.h"

namespace {

using namespace opencute;
using nvvm_test::compile_for;
using nvvm_test::contains;
using nvvm_test::have_libnvvm;
using ir::AddrSpace;
using ir::OpCode;
using ir::Type;
using ir::Value;

struct Kernel : nvvm_test::KernelUnderTest {
  using KernelUnderTest::KernelUnderTest;
  target::NvvmModuleText lower() {
    b.set_block(f->body.get());
    b.ret({});
    ir::verify_or_throw(m);
    return target::lower_kernels_to_nvvm(m);
  }
};

Type gptr(Type t) { return ir::pointer_type(t, AddrSpace::Gmem, 0); }

TEST(LowerCfOps, NamedBarrierSyncAndArrive) {
  Kernel k("named");
  Value* id = k.arg(ir::i32());
  k.b.named_barrier(k.c32(1), k.c32(128), ir::NamedBarrierKind::Sync);
  k.b.named_barrier(id, k.c32(64), ir::NamedBarrierKind::Arrive);
  auto t = k.lower();
  EXPECT_TRUE(contains(t.text, "asm sideeffect \"bar.sync $0, $1;\", \"r,r,~{memory}\"(i32 1, i32 128)"));
  EXPECT_TRUE(contains(t.text, "asm sideeffect \"bar.arrive $0, $1;\""));
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  auto ptx = compile_for(t);
  for (auto& [arch, text] : ptx) {
    EXPECT_TRUE(contains(text, "bar.sync ")) << arch << text;
    EXPECT_TRUE(contains(text, "bar.arrive")) << arch;
  }
}

TEST(LowerCfOps, NamedBarrierVerifierRejectsHostUse) {
  ir::Module m;
  ir::Function* f = m.add_function("host", ir::FunctionKind::Host);
  ir::Builder b(f->body.get());
  b.named_barrier(b.const_int(ir::i32(), 1), b.const_int(ir::i32(), 64), ir::NamedBarrierKind::Sync);
  b.ret({});
  EXPECT_THROW(ir::verify_or_throw(m), std::exception);
}

TEST(LowerCfOps, RcpAndEx2Approximations) {
  Kernel k("approx");
  Value* in = k.arg(gptr(ir::f32()));
  Value* out = k.arg(gptr(ir::f32()));
  Value* x = k.b.load(in, ir::f32());
  Value* r = k.b.math("rcp_approx", {x});
  Value* e = k.b.math("exp2_approx", {r});
  k.b.store(e, out);
  auto t = k.lower();
  EXPECT_TRUE(contains(t.text, "rcp.approx.ftz.f32 $0, $1;"));
  EXPECT_TRUE(contains(t.text, "ex2.approx.ftz.f32 $0, $1;"));
  EXPECT_FALSE(t.needs_libdevice);
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  auto ptx = compile_for(t);
  for (auto& [arch, text] : ptx) {
    EXPECT_TRUE(contains(text, "rcp.approx.ftz.f32")) << arch;
    EXPECT_TRUE(contains(text, "ex2.approx.ftz.f32")) << arch;
  }
}

TEST(LowerCfOps, Fp8ConversionsCompileForSm80AndSm90a) {
  for (Type f8 : {ir::f8e4m3(), ir::f8e5m2()}) {
    Kernel k("fp8");
    Value* in = k.arg(gptr(ir::f32()));
    Value* codes = k.arg(gptr(f8));
    Value* out = k.arg(gptr(ir::f32()));
    Value* x = k.b.load(in, ir::f32());
    Value* q = k.b.cast(x, f8);
    k.b.store(q, codes);
    Value* neg = k.b.unary(OpCode::Neg, q);
    k.b.store(k.b.cast(neg, ir::f32()), out);
    auto t = k.lower();
    EXPECT_TRUE(contains(t.text, "define internal i8 @__opencute_")) << t.text;
    EXPECT_TRUE(contains(t.text, "store i8")) << t.text;
    if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
    auto ptx = compile_for(t);
    const std::string cvt = f8 == ir::f8e4m3() ? "cvt.rn.satfinite.e4m3x2.f32" : "cvt.rn.satfinite.e5m2x2.f32";
    EXPECT_TRUE(contains(ptx["sm_90a"], cvt)) << ptx["sm_90a"];  // the hardware conversion on sm_89+
    EXPECT_FALSE(contains(ptx["sm_80"], cvt)) << ptx["sm_80"];   // the integer algorithm before
    const std::string back = f8 == ir::f8e4m3() ? "cvt.rn.f16x2.e4m3x2" : "cvt.rn.f16x2.e5m2x2";
    EXPECT_TRUE(contains(ptx["sm_90a"], back)) << ptx["sm_90a"];
    EXPECT_FALSE(contains(ptx["sm_80"], back)) << ptx["sm_80"];
    // Unoptimised builds fold the architecture test too (sm_80 would reject the instruction).
    for (int opt : {0, 1}) {
      target::PtxResult p = target::compile_nvvm_ir_to_ptx(t.text, "sm_80", opt, false, false);
      EXPECT_FALSE(contains(p.ptx, cvt) || contains(p.ptx, back)) << "opt " << opt;
      try {
        target::link_ptx_to_cubin(p.ptx, "sm_80", opt, "");
      } catch (const support::CudaNotFoundError&) {
      }
    }
  }
}

TEST(Fp8Semantics, ScalarRoundingMatchesTheFormats) {
  const auto& e4 = support::e4m3_format();
  const auto& e5 = support::e5m2_format();
  EXPECT_EQ(support::float_to_fp8_bits(448.0f, e4), 0x7E);
  EXPECT_EQ(support::float_to_fp8_bits(1e9f, e4), 0x7E);        // satfinite
  EXPECT_EQ(support::float_to_fp8_bits(-INFINITY, e4), 0xFE);
  EXPECT_EQ(support::float_to_fp8_bits(NAN, e4), 0x7F);
  EXPECT_EQ(support::float_to_fp8_bits(1.0f, e4), 0x38);        // exponent 7, mantissa 0
  EXPECT_EQ(support::float_to_fp8_bits(1.0625f, e4), 0x38);     // halfway 1 .. 1.125: even code
  EXPECT_EQ(support::float_to_fp8_bits(1.1875f, e4), 0x3A);     // halfway 1.125 .. 1.25: even code
  EXPECT_EQ(support::float_to_fp8_bits(std::ldexp(1.0f, -9), e4), 0x01);    // smallest subnormal
  EXPECT_EQ(support::float_to_fp8_bits(std::ldexp(1.0f, -10), e4), 0x00);   // halfway to 0: even
  EXPECT_EQ(support::float_to_fp8_bits(57344.0f, e5), 0x7B);
  EXPECT_EQ(support::float_to_fp8_bits(INFINITY, e5), 0x7B);
  EXPECT_EQ(support::fp8_bits_to_float(0x7C, e5), INFINITY);
  EXPECT_TRUE(std::isnan(support::fp8_bits_to_float(0x7F, e4)));
  EXPECT_EQ(support::fp8_bits_to_float(0x7E, e4), 448.0f);
  EXPECT_EQ(support::fp8_bits_to_float(0x80, e4), -0.0f);
  // every code decodes and re-encodes to itself (NaNs to the canonical NaN)
  for (int c = 0; c < 256; ++c) {
    for (const auto* f : {&e4, &e5}) {
      float v = support::fp8_bits_to_float(uint8_t(c), *f);
      uint8_t back = support::float_to_fp8_bits(v, *f);
      if (std::isnan(v)) EXPECT_EQ(back, 0x7F);
      else if (std::isinf(v)) EXPECT_EQ(back, v > 0 ? f->max_code : 0x80 | f->max_code);
      else EXPECT_EQ(back, c) << c;
    }
  }
}

}  // namespace
