// Tests for the IR -> NVVM IR lowering. Every kernel is lowered, then compiled to PTX for
// sm_80 and sm_90a by libNVVM and linked to a cubin, so a lowering that libNVVM or ptxas
// rejects fails here; golden checks pin the pieces of text whose exact spelling matters.
// Compilation steps skip when libNVVM is not installed. OPENCUTE_DUMP_NVVM=1 prints each
// module before compiling it.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/verifier.h"
#include "support/cuda_paths.h"
#include "target/nvvm/lower_to_nvvm.h"
#include "target/nvvm/nvvm_compiler.h"

namespace {

using namespace opencute;
using nvvm_test::compile_for;
using nvvm_test::contains;
using nvvm_test::have_libnvvm;
using ir::AddrSpace;
using ir::CmpPredicate;
using ir::OpCode;
using ir::Type;
using ir::Value;
using target::NvvmModuleText;

#define COMPILE_OR_SKIP(text_var, ptx_var)                                  \
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM/libdevice not found";      \
  auto ptx_var = compile_for(text_var);                                     \
  if (HasFailure()) return

// A module with one kernel under construction.
struct Kernel {
  ir::Module m;
  ir::Function* f;
  ir::Builder b;
  explicit Kernel(const std::string& name)
      : f(m.add_function(name, ir::FunctionKind::Kernel)), b(f->body.get()) {}
  Value* arg(Type t) { return f->body->add_arg(t); }
  Value* c32(int64_t v) { return b.const_int(ir::i32(), v); }
  Value* global_id() {
    Value* base = b.binary(OpCode::Mul, b.special(OpCode::BlockIdx), b.special(OpCode::BlockDim));
    return b.binary(OpCode::Add, base, b.special(OpCode::ThreadIdx));
  }
  Value* at(Value* ptr, Value* index) { return b.ptr_add(ptr, index); }
  NvvmModuleText lower() {
    b.set_block(f->body.get());
    b.ret({});
    ir::verify_or_throw(m);
    return target::lower_kernels_to_nvvm(m);
  }
};

Type gptr(Type t, int align = 0) { return ir::pointer_type(t, AddrSpace::Gmem, align); }

std::vector<Type> all_scalar_types() {
  return {ir::bool_type(),          ir::int_type(8, true),  ir::int_type(8, false), ir::int_type(16, true),
          ir::int_type(16, false),  ir::i32(),              ir::int_type(32, false), ir::i64(),
          ir::int_type(64, false),  ir::f16(),              ir::bf16(),             ir::f32(),
          ir::f64()};
}

// ---------------------------------------------------------------------------------------------

TEST(LowerToNvvm, AddOneGoldenPieces) {
  Kernel k("add_one");
  Value* a = k.arg(gptr(ir::f32()));
  Value* n = k.arg(ir::i32());
  Value* i = k.global_id();
  ir::Op* guard = k.b.create_if(k.b.cmp(CmpPredicate::Lt, i, n));
  k.b.set_block(guard->region_block(0));
  Value* p = k.at(a, i);
  k.b.store(k.b.binary(OpCode::Add, k.b.load(p, ir::f32()), k.b.const_float(ir::f32(), 1.0)), p);
  k.b.yield({});
  k.b.set_block(guard->region_block(1));
  k.b.yield({});
  NvvmModuleText t = k.lower();

  EXPECT_EQ(t.kernel_names, std::vector<std::string>{"add_one"});
  EXPECT_FALSE(t.needs_libdevice);
  EXPECT_TRUE(contains(t.text, "target triple = \"nvptx64-nvidia-cuda\"\n"));
  EXPECT_TRUE(contains(t.text, "target datalayout = \"e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-"));
  EXPECT_TRUE(contains(t.text, "define void @add_one(float addrspace(1)* %v0, i32 %v1) {\n"));
  EXPECT_TRUE(contains(t.text, "!nvvm.annotations = !{!0}\n"));
  EXPECT_TRUE(contains(t.text, "!0 = !{void (float addrspace(1)*, i32)* @add_one, !\"kernel\", i32 1}\n"));
  EXPECT_TRUE(contains(t.text, "!nvvmir.version = !{!1}\n"));
  EXPECT_TRUE(contains(t.text, "!1 = !{i32 2, i32 0}\n"));
  EXPECT_TRUE(contains(t.text, "call i32 @llvm.nvvm.read.ptx.sreg.tid.x()"));
  EXPECT_TRUE(contains(t.text, "fadd float %"));
  EXPECT_TRUE(contains(t.text, ", 0x3FF0000000000000"));  // 1.0f in LLVM's hex spelling
  EXPECT_TRUE(contains(t.text, "ret void"));

  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_90a"], ".entry add_one"));
  EXPECT_TRUE(contains(ptx["sm_90a"], "ld.global.f32"));
}

TEST(LowerToNvvm, DeterministicAndSkipsHostFunctions) {
  auto build = [] {
    auto k = std::make_unique<Kernel>("k");
    Value* a = k->arg(gptr(ir::i32()));
    k->b.store(k->b.special(OpCode::ThreadIdx, 1), a);
    // A host function with a launch must be ignored by the kernel lowering.
    ir::Function* host = k->m.add_function("host", ir::FunctionKind::Host);
    ir::Builder hb(host->body.get());
    Value* one = hb.const_int(ir::i32(), 1);
    Value* zero64 = hb.const_int(ir::i64(), 0);
    hb.launch("k", {one, one, one}, {one, one, one}, one, zero64, {}, {});
    hb.ret({});
    return k;
  };
  auto k1 = build(), k2 = build();
  NvvmModuleText a = k1->lower(), b = k2->lower();
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.kernel_names, std::vector<std::string>{"k"});
  EXPECT_FALSE(contains(a.text, "host"));
}

TEST(LowerToNvvm, LaunchInKernelIsRejected) {
  ir::Module m;
  ir::Function* f = m.add_function("bad", ir::FunctionKind::Kernel);
  ir::Builder b(f->body.get());
  Value* one = b.const_int(ir::i32(), 1);
  b.launch("bad", {one, one, one}, {one, one, one}, one, b.const_int(ir::i64(), 0), {}, {});
  b.ret({});
  try {
    target::lower_kernels_to_nvvm(m);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "@bad (launch)")) << e.what();
    EXPECT_TRUE(contains(e.what(), "host code")) << e.what();
  }
}

TEST(LowerToNvvm, ReqntidAndBoolArgument) {
  Kernel k("fixed_block");
  k.f->reqntid[0] = 128;
  k.f->reqntid[1] = 1;
  k.f->reqntid[2] = 1;
  Value* out = k.arg(gptr(ir::i32()));
  Value* flag = k.arg(ir::bool_type());
  k.b.store(k.b.select(flag, k.c32(7), k.c32(9)), out);
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "define void @fixed_block(i32 addrspace(1)* %v0, i8 %v1) {\n"));
  EXPECT_TRUE(contains(t.text, "= icmp ne i8 %v1, 0\n"));
  EXPECT_TRUE(contains(t.text, "!nvvm.annotations = !{!0, !1}\n"));
  EXPECT_TRUE(contains(t.text, "!1 = !{void (i32 addrspace(1)*, i8)* @fixed_block, !\"reqntidx\", i32 128, "
                               "!\"reqntidy\", i32 1, !\"reqntidz\", i32 1}\n"));
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_80"], ".reqntid 128, 1, 1"));
}

TEST(LowerToNvvm, ForLoopsWithCarriedValuesAndUnroll) {
  Kernel k("loops");
  Value* out = k.arg(gptr(ir::f32()));
  Value* n = k.arg(ir::i32());
  Value* step = k.arg(ir::i32());
  Value* un = k.arg(ir::int_type(32, false));

  // for i in [0, n) step 1, carrying (acc: f32, count: i32), unroll 4
  ir::Op* l1 = k.b.create_for(k.c32(0), n, k.c32(1), {k.b.const_float(ir::f32(), 0.0), k.c32(0)}, 4);
  {
    ir::Block* body = l1->region_block(0);
    k.b.set_block(body);
    Value* fi = k.b.cast(body->args[0].get(), ir::f32());
    k.b.yield({k.b.binary(OpCode::Add, body->args[1].get(), fi), k.b.binary(OpCode::Add, body->args[2].get(), k.c32(1))});
    k.b.set_block(k.f->body.get());
    k.b.set_results(l1, {ir::f32(), ir::i32()});
  }
  // fully unrolled: for j in [0, 8) step 2
  ir::Op* l2 = k.b.create_for(k.c32(0), k.c32(8), k.c32(2), {l1->result(0)}, -1);
  {
    ir::Block* body = l2->region_block(0);
    k.b.set_block(body);
    k.b.yield({k.b.binary(OpCode::Mul, body->args[1].get(), k.b.const_float(ir::f32(), 0.5))});
    k.b.set_block(k.f->body.get());
    k.b.set_results(l2, {ir::f32()});
  }
  // dynamic step (may be negative): for i in [n, 0) step `step`, no unroll hint; nested loop
  // with a constant negative step inside
  ir::Op* l3 = k.b.create_for(n, k.c32(0), step, {l1->result(1)}, 0);
  {
    ir::Block* body = l3->region_block(0);
    k.b.set_block(body);
    ir::Op* inner = k.b.create_for(k.c32(10), k.c32(0), k.c32(-3), {body->args[1].get()}, 1);
    k.b.set_block(inner->region_block(0));
    k.b.yield({k.b.binary(OpCode::Xor, inner->region_block(0)->args[1].get(), inner->region_block(0)->args[0].get())});
    k.b.set_block(body);
    k.b.set_results(inner, {ir::i32()});
    k.b.yield({k.b.binary(OpCode::Add, inner->result(0), body->args[0].get())});
    k.b.set_block(k.f->body.get());
    k.b.set_results(l3, {ir::i32()});
  }
  // unsigned induction variable
  Value* u0 = k.b.const_int(ir::int_type(32, false), 0);
  Value* u1 = k.b.const_int(ir::int_type(32, false), 1);
  ir::Op* l4 = k.b.create_for(u0, un, u1, {u0}, 2);
  {
    ir::Block* body = l4->region_block(0);
    k.b.set_block(body);
    k.b.yield({k.b.binary(OpCode::Add, body->args[1].get(), body->args[0].get())});
    k.b.set_block(k.f->body.get());
    k.b.set_results(l4, {ir::int_type(32, false)});
  }
  k.b.store(l2->result(0), out);
  k.b.store(k.b.cast(l3->result(0), ir::f32()), k.at(out, k.c32(1)));
  k.b.store(k.b.cast(l4->result(0), ir::f32()), k.at(out, k.c32(2)));
  NvvmModuleText t = k.lower();

  EXPECT_TRUE(contains(t.text, "!{!\"llvm.loop.unroll.count\", i32 4}"));
  EXPECT_TRUE(contains(t.text, "!{!\"llvm.loop.unroll.full\"}"));
  EXPECT_TRUE(contains(t.text, "!{!\"llvm.loop.unroll.disable\"}"));
  EXPECT_TRUE(contains(t.text, "!{!\"llvm.loop.unroll.count\", i32 2}"));
  EXPECT_TRUE(contains(t.text, ", !llvm.loop !"));
  EXPECT_TRUE(contains(t.text, "for0.head:\n  %"));  // header opens with its phis
  EXPECT_TRUE(contains(t.text, "= icmp sgt i32 %v2, 0"));  // sign of the dynamic step
  EXPECT_TRUE(contains(t.text, "icmp ult i32"));          // unsigned loop bound
  COMPILE_OR_SKIP(t, ptx);
}

TEST(LowerToNvvm, IfWithResultsAndWhile) {
  Kernel k("branches");
  Value* out = k.arg(gptr(ir::i32()));
  Value* n = k.arg(ir::i32());
  Value* tid = k.b.special(OpCode::ThreadIdx);

  ir::Op* branch = k.b.create_if(k.b.cmp(CmpPredicate::Lt, tid, n));
  k.b.set_block(branch->region_block(0));
  k.b.yield({k.b.binary(OpCode::Mul, tid, k.c32(2)), k.b.const_float(ir::f16(), 1.5)});
  k.b.set_block(branch->region_block(1));
  k.b.yield({k.b.binary(OpCode::Sub, tid, k.c32(1)), k.b.const_float(ir::f16(), -2.0)});
  k.b.set_block(k.f->body.get());
  k.b.set_results(branch, {ir::i32(), ir::f16()});

  // while (x < n) { x = 2 * x + 1; steps += 1 }, forwarding (x, steps)
  ir::Op* loop = k.b.create_while({branch->result(0), k.c32(0)});
  ir::Block* before = loop->region_block(0);
  k.b.set_block(before);
  k.b.condition(k.b.cmp(CmpPredicate::Lt, before->args[0].get(), n), {before->args[0].get(), before->args[1].get()});
  ir::Block* after = loop->region_block(1);
  k.b.set_block(after);
  Value* x2 = k.b.binary(OpCode::Add, k.b.binary(OpCode::Mul, after->args[0].get(), k.c32(2)), k.c32(1));
  k.b.yield({x2, k.b.binary(OpCode::Add, after->args[1].get(), k.c32(1))});
  k.b.set_block(k.f->body.get());
  k.b.set_results(loop, {ir::i32(), ir::i32()});

  Value* h = k.b.cast(branch->result(1), ir::i32());
  k.b.store(k.b.binary(OpCode::Add, loop->result(0), k.b.binary(OpCode::Add, loop->result(1), h)), k.at(out, tid));
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "if0.end:\n  %"));
  EXPECT_TRUE(contains(t.text, "= phi half [0xH3E00, %if0.then], [0xHC000, %if0.else]"));
  EXPECT_TRUE(contains(t.text, "while1.before:\n  %"));
  COMPILE_OR_SKIP(t, ptx);
}

TEST(LowerToNvvm, PrintfPacksPromotedArguments) {
  Kernel k("say");
  Value* p = k.arg(gptr(ir::f32()));
  Value* tid = k.b.special(OpCode::ThreadIdx);
  Value* f = k.b.load(p, ir::f32());
  Value* wide = k.b.cast(tid, ir::i64());
  Value* flag = k.b.cmp(CmpPredicate::Eq, tid, k.c32(0));
  Value* h = k.b.cast(f, ir::f16());
  Value* small = k.b.cast(tid, ir::int_type(8, false));
  k.b.printf("tid=%d f=%f wide=%lld flag=%d h=%f u8=%u p=%p \"q\"\n", {tid, f, wide, flag, h, small, p});
  k.b.printf("no args\n", {});
  k.b.printf("tid=%d f=%f wide=%lld flag=%d h=%f u8=%u p=%p \"q\"\n", {tid, f, wide, flag, h, small, p});
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "declare i32 @vprintf(i8*, i8*)\n"));
  // identical formats share one global
  EXPECT_TRUE(contains(t.text, "@.str0 = private unnamed_addr addrspace(1) constant [51 x i8] "
                               "c\"tid=%d f=%f wide=%lld flag=%d h=%f u8=%u p=%p \\22q\\22\\0A\\00\", align 1\n"));
  EXPECT_TRUE(contains(t.text, "@.str1 = private unnamed_addr addrspace(1) constant [9 x i8] c\"no args\\0A\\00\""));
  EXPECT_FALSE(contains(t.text, "@.str2"));
  // i32 @0, double @8, i64 @16, i32 @24, double @32, i32 @40, i64 @48 -> 56 bytes
  EXPECT_TRUE(contains(t.text, "alloca [56 x i8], align 8"));
  EXPECT_TRUE(contains(t.text, "zext i1 "));
  EXPECT_TRUE(contains(t.text, "zext i8 "));
  EXPECT_TRUE(contains(t.text, "fpext float "));
  EXPECT_TRUE(contains(t.text, "call i32 @vprintf(i8* %"));
  EXPECT_TRUE(contains(t.text, ", i8* null)"));
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_90a"], "vprintf"));
}

TEST(LowerToNvvm, MathThroughLibdevice) {
  Kernel k("math");
  Value* pf = k.arg(gptr(ir::f32()));
  Value* pd = k.arg(gptr(ir::f64()));
  Value* ph = k.arg(gptr(ir::f16()));
  Value* pb = k.arg(gptr(ir::bf16()));
  std::vector<std::pair<Value*, Type>> slots = {{pf, ir::f32()}, {pd, ir::f64()}, {ph, ir::f16()}, {pb, ir::bf16()}};
  const char* unary[] = {"exp",  "exp2", "log",  "log2",  "log10", "sqrt",  "rsqrt", "sin",  "cos",   "tan",
                         "asin", "acos", "atan", "sinh",  "cosh",  "tanh",  "erf",   "floor", "ceil", "round",
                         "trunc", "fabs", "log1p", "expm1"};
  const char* binary[] = {"atan2", "pow", "fmod", "copysign"};
  for (auto& [ptr, t] : slots) {
    Value* x = k.b.load(ptr, t);
    Value* y = k.b.load(k.at(ptr, k.c32(1)), t);
    int slot = 2;
    for (const char* fn : unary) k.b.store(k.b.math(fn, {x}), k.at(ptr, k.c32(slot++)));
    for (const char* fn : binary) k.b.store(k.b.math(fn, {x, y}), k.at(ptr, k.c32(slot++)));
    // float-only binary ops that go through libdevice or NVVM intrinsics
    for (OpCode c : {OpCode::Rem, OpCode::FloorDiv, OpCode::Pow, OpCode::Min, OpCode::Max})
      k.b.store(k.b.binary(c, x, y), k.at(ptr, k.c32(slot++)));
    k.b.store(k.b.unary(OpCode::Abs, x), k.at(ptr, k.c32(slot++)));
    k.b.store(k.b.unary(OpCode::Neg, x), k.at(ptr, k.c32(slot++)));
    k.b.store(k.b.fma(x, y, x), k.at(ptr, k.c32(slot++)));
  }
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(t.needs_libdevice);
  EXPECT_TRUE(contains(t.text, "declare float @__nv_expf(float)\n"));
  EXPECT_TRUE(contains(t.text, "declare double @__nv_exp(double)\n"));
  EXPECT_TRUE(contains(t.text, "declare float @__nv_sqrtf(float)\n"));
  EXPECT_TRUE(contains(t.text, "declare double @__nv_sin(double)\n"));
  EXPECT_TRUE(contains(t.text, "declare float @__nv_rintf(float)\n"));  // round = nearest even
  EXPECT_TRUE(contains(t.text, "declare float @__nv_fmodf(float, float)\n"));
  EXPECT_TRUE(contains(t.text, "declare double @__nv_pow(double, double)\n"));
  EXPECT_TRUE(contains(t.text, "declare float @llvm.nvvm.fmin.f(float, float)\n"));
  EXPECT_TRUE(contains(t.text, "declare double @llvm.nvvm.fmax.d(double, double)\n"));
  EXPECT_FALSE(contains(t.text, "@__nv_exph"));  // 16-bit floats compute in f32
  COMPILE_OR_SKIP(t, ptx);
}

TEST(LowerToNvvm, HalfAndBfloatArithmeticAndAllCasts) {
  Kernel k("casts");
  std::vector<Type> types = all_scalar_types();
  std::vector<Value*> in, out;
  for (Type t : types) in.push_back(k.arg(gptr(t)));
  for (Type t : types) out.push_back(k.arg(gptr(t)));
  Value* tid = k.b.special(OpCode::ThreadIdx);
  for (size_t i = 0; i < types.size(); ++i) {
    Value* v = k.b.load(k.at(in[i], tid), types[i]);
    for (size_t j = 0; j < types.size(); ++j) {
      Value* idx = k.b.binary(OpCode::Add, k.b.binary(OpCode::Mul, tid, k.c32(int64_t(types.size()))), k.c32(int64_t(i)));
      k.b.store(k.b.cast(v, types[j]), k.at(out[j], idx));
    }
  }
  for (Type t : {ir::f16(), ir::bf16()}) {
    Value* p = in[t == ir::f16() ? 9 : 10];
    Value* a = k.b.load(p, t);
    Value* b = k.b.load(k.at(p, k.c32(1)), t);
    Value* r = k.b.binary(OpCode::Add, a, b);
    r = k.b.binary(OpCode::Mul, r, b);
    r = k.b.binary(OpCode::Sub, r, a);
    r = k.b.binary(OpCode::Div, r, b);
    r = k.b.select(k.b.cmp(CmpPredicate::Gt, r, a), r, k.b.unary(OpCode::Neg, a));
    k.b.store(r, k.at(p, k.c32(2)));
  }
  // bitcasts between the 16-bit types and pointer <-> integer
  Value* h = k.b.load(in[9], ir::f16());
  k.b.store(k.b.bitcast(h, ir::bf16()), in[10]);
  k.b.store(k.b.bitcast(h, ir::int_type(16, false)), in[4]);
  Value* addr = k.b.create(OpCode::PtrToInt, {in[11]}, {ir::i64()})->result();
  Value* back = k.b.create(OpCode::IntToPtr, {k.b.binary(OpCode::Add, addr, k.b.const_int(ir::i64(), 4))},
                           {gptr(ir::f32())})->result();
  k.b.store(k.b.bitcast(k.b.load(in[5], ir::i32()), ir::f32()), back);
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "@llvm.nvvm.f2i.rz(float"));      // saturating, NaN -> 0
  EXPECT_TRUE(contains(t.text, "@llvm.nvvm.d2ull.rz(double"));
  EXPECT_TRUE(contains(t.text, "fptrunc float %"));                // -> f16 round to nearest even
  EXPECT_TRUE(contains(t.text, "add i32 %"));                     // bf16 rounding by integer ops
  EXPECT_TRUE(contains(t.text, "fcmp une float"));                 // float -> i1 means != 0
  COMPILE_OR_SKIP(t, ptx);
}

TEST(LowerToNvvm, VectorLoadStoreIsOneInstruction) {
  Kernel k("vec4");
  Value* src = k.arg(gptr(ir::f32(), 16));
  Value* dst = k.arg(gptr(ir::f32(), 16));
  Type v4 = ir::vector_type(ir::f32(), 4);
  Value* v = k.b.load(src, v4);
  Value* w = k.b.load(k.at(src, k.c32(4)), v4);  // 16-byte offset keeps align 16
  Value* sum = k.b.binary(OpCode::Add, v, k.b.vec_splat(k.b.const_float(ir::f32(), 1.0), 4));
  sum = k.b.binary(OpCode::Mul, sum, w);
  Value* lane2 = k.b.vec_extract(sum, 2);
  sum = k.b.vec_insert(sum, k.b.math("sqrt", {lane2}), 0);
  k.b.store(sum, dst);
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "load <4 x float>, <4 x float> addrspace(1)* %"));
  EXPECT_TRUE(contains(t.text, ", align 16\n"));
  EXPECT_TRUE(contains(t.text, "bitcast float addrspace(1)* %v0 to <4 x float> addrspace(1)*"));
  COMPILE_OR_SKIP(t, ptx);
  for (auto& [arch, text] : ptx) {
    EXPECT_TRUE(contains(text, "ld.global.v4.f32")) << arch << "\n" << text;
    EXPECT_TRUE(contains(text, "st.global.v4.f32")) << arch << "\n" << text;
  }
}

// A bf16 (or fp8) vector of 16 bytes is one 128-bit access, as `<8 x half>` is: NVPTX would split
// `<8 x i16>` into two 64-bit ones. An under-aligned pointer keeps the lane-typed access.
TEST(LowerToNvvm, NarrowLaneVectorsAreWordAccesses) {
  Kernel k("narrow_vectors");
  Value* bsrc = k.arg(ir::pointer_type(ir::bf16(), AddrSpace::Smem, 16));
  Value* bdst = k.arg(gptr(ir::bf16(), 16));
  Value* fsrc = k.arg(gptr(ir::f8e4m3(), 16));
  Value* fdst = k.arg(ir::pointer_type(ir::f8e4m3(), AddrSpace::Smem, 16));
  Value* usrc = k.arg(gptr(ir::bf16(), 2));
  Value* udst = k.arg(gptr(ir::bf16(), 2));
  k.b.store(k.b.load(bsrc, ir::vector_type(ir::bf16(), 8)), bdst);
  k.b.store(k.b.load(fsrc, ir::vector_type(ir::f8e4m3(), 16)), fdst);
  k.b.store(k.b.load(usrc, ir::vector_type(ir::bf16(), 4)), udst);
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "load <4 x i32>, <4 x i32> addrspace(3)* %"));
  EXPECT_TRUE(contains(t.text, "bitcast <4 x i32> %"));
  EXPECT_TRUE(contains(t.text, "load <4 x i16>, <4 x i16> addrspace(1)* %"));  // align 2: lane-typed
  COMPILE_OR_SKIP(t, ptx);
  for (auto& [arch, text] : ptx) {
    EXPECT_TRUE(contains(text, "ld.shared.v4.u32")) << arch << "\n" << text;
    EXPECT_TRUE(contains(text, "st.global.v4.u32")) << arch << "\n" << text;
    EXPECT_TRUE(contains(text, "ld.global.v4.u32")) << arch << "\n" << text;
    EXPECT_TRUE(contains(text, "st.shared.v4.u32")) << arch << "\n" << text;
    EXPECT_FALSE(contains(text, "v4.u16 [%rd")) << arch << "\n" << text;  // no 16-byte vector split in two
  }
}

TEST(LowerToNvvm, LocalArrays) {
  Kernel k("local");
  Value* out = k.arg(gptr(ir::f32()));
  Value* n = k.arg(ir::i32());
  Value* arr = k.b.local_array(ir::f32(), 8, 16);
  Value* flags = k.b.local_array(ir::bool_type(), 4, 1);
  Value* odd = k.b.local_array(ir::vector_type(ir::f32(), 3), 2, 4);  // 12-byte elements
  ir::Op* fill = k.b.create_for(k.c32(0), k.c32(8), k.c32(1), {}, -1);
  k.b.set_block(fill->region_block(0));
  Value* i = fill->region_block(0)->args[0].get();
  k.b.store(k.b.cast(i, ir::f32()), k.at(arr, i));
  k.b.yield({});
  k.b.set_block(k.f->body.get());
  k.b.store(k.b.cmp(CmpPredicate::Gt, n, k.c32(3)), k.at(flags, k.c32(1)));
  Value* v3 = k.b.vec_splat(k.b.load(k.at(arr, n), ir::f32()), 3);
  k.b.store(v3, k.at(odd, n));
  Value* back = k.b.load(k.at(odd, k.c32(1)), ir::vector_type(ir::f32(), 3));
  Value* f = k.b.load(k.at(flags, k.c32(1)), ir::bool_type());
  Value* x = k.b.select(f, k.b.vec_extract(back, 2), k.b.load(k.at(arr, k.c32(7)), ir::f32()));
  Value* v4 = k.b.load(arr, ir::vector_type(ir::f32(), 4));
  k.b.store(k.b.binary(OpCode::Add, x, k.b.vec_extract(v4, 3)), out);
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "entry:\n  %v2 = alloca [8 x float], align 16\n"));
  EXPECT_TRUE(contains(t.text, "alloca [4 x i8], align 1"));
  EXPECT_TRUE(contains(t.text, "alloca [24 x i8], align 4"));
  EXPECT_TRUE(contains(t.text, "getelementptr i8, i8* %"));  // byte addressing for 12-byte elements
  COMPILE_OR_SKIP(t, ptx);
}

TEST(LowerToNvvm, BarrierLaneAndWarp) {
  Kernel k("ids");
  Value* out = k.arg(gptr(ir::i32()));
  Value* tid = k.b.special(OpCode::ThreadIdx);
  Value* v = k.b.binary(OpCode::Add, k.b.special(OpCode::LaneIdx), k.b.binary(OpCode::Mul, k.b.special(OpCode::WarpIdx), k.c32(100)));
  v = k.b.binary(OpCode::Add, v, k.b.special(OpCode::GridDim, 2));
  v = k.b.binary(OpCode::Add, v, k.b.special(OpCode::BlockIdx, 1));
  k.b.barrier();
  k.b.store(v, k.at(out, tid));
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "call void @llvm.nvvm.barrier0()\n"));
  EXPECT_TRUE(contains(t.text, "@llvm.nvvm.read.ptx.sreg.laneid()"));
  EXPECT_TRUE(contains(t.text, "@llvm.nvvm.read.ptx.sreg.nctaid.z()"));
  EXPECT_TRUE(contains(t.text, "@llvm.nvvm.read.ptx.sreg.ctaid.y()"));
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_80"], "bar.sync"));
  EXPECT_TRUE(contains(ptx["sm_80"], "%laneid"));
}

TEST(LowerToNvvm, IntegerDivisionShiftsAndPow) {
  Kernel k("intops");
  std::vector<Type> types = {ir::int_type(8, true), ir::int_type(16, false), ir::i32(), ir::int_type(32, false),
                             ir::i64(), ir::int_type(64, false), ir::bool_type()};
  Value* tid = k.b.special(OpCode::ThreadIdx);
  for (Type t : types) {
    Value* p = k.arg(gptr(t));
    Value* a = k.b.load(p, t);
    Value* b = k.b.load(k.at(p, k.c32(1)), t);
    int slot = 2;
    for (OpCode c : {OpCode::Add, OpCode::Sub, OpCode::Mul, OpCode::Div, OpCode::Rem, OpCode::FloorDiv, OpCode::Min,
                     OpCode::Max, OpCode::Pow, OpCode::And, OpCode::Or, OpCode::Xor, OpCode::Shl, OpCode::Shr})
      k.b.store(k.b.binary(c, a, b), k.at(p, k.b.binary(OpCode::Add, tid, k.c32(slot++))));
    for (OpCode c : {OpCode::Neg, OpCode::Not, OpCode::Abs}) k.b.store(k.b.unary(c, a), k.at(p, k.c32(slot++)));
  }
  // vector integer ops go lane by lane
  Value* pv = k.arg(gptr(ir::int_type(32, false), 16));
  Type u4 = ir::vector_type(ir::int_type(32, false), 4);
  Value* va = k.b.load(pv, u4);
  k.b.store(k.b.binary(OpCode::Shr, k.b.binary(OpCode::Div, va, k.b.vec_splat(k.b.load(pv, ir::int_type(32, false)), 4)), va), pv);
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "udiv i16"));
  EXPECT_TRUE(contains(t.text, "lshr i16"));
  EXPECT_TRUE(contains(t.text, "ashr i64"));
  // The shift amount guard of the other widths; 32-bit shifts are PTX's, which clamp the amount.
  EXPECT_TRUE(std::regex_search(t.text, std::regex("icmp ult i64 %v[0-9]+, 64\n")));
  EXPECT_TRUE(std::regex_search(t.text, std::regex("icmp ult i16 %v[0-9]+, 16\n")));
  EXPECT_FALSE(std::regex_search(t.text, std::regex("icmp ult i32 %v[0-9]+, 32\n")));
  EXPECT_TRUE(contains(t.text, "call i32 asm \"shl.b32 $0, $1, $2;\", \"=r,r,r\"(i32 %"));
  EXPECT_TRUE(contains(t.text, "call i32 asm \"shr.s32 $0, $1, $2;\""));
  EXPECT_TRUE(contains(t.text, "call i32 asm \"shr.u32 $0, $1, $2;\""));
  EXPECT_TRUE(contains(t.text, "define internal i64 @__opencute_ipow_u64(i64 %base, i64 %exp) alwaysinline {"));
  EXPECT_TRUE(contains(t.text, "define internal i8 @__opencute_ipow_i8("));
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_90a"], "div.u32"));
  EXPECT_TRUE(contains(ptx["sm_90a"], "shr.u32"));
}

// `x & (1 << k)` converted to Boolean stays an and.b32 and a setp.ne in the PTX (ptxas makes R2P
// of those); LLVM would turn the bit-0 test into a trunc to i1. Any other mask is a plain icmp.
TEST(LowerToNvvm, SingleBitTestsKeepTheirAnd) {
  Kernel k("bit_tests");
  Value* p = k.arg(gptr(ir::i32()));
  Value* a = k.b.load(p, ir::i32());
  int slot = 1;
  for (int64_t c : {int64_t(1), int64_t(1) << 15, int64_t(3)}) {
    Value* in = k.b.cast(k.b.binary(OpCode::And, a, k.c32(c)), ir::bool_type());
    k.b.store(k.b.select(in, a, k.c32(-1)), k.at(p, k.c32(slot++)));
  }
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "call i32 asm \"and.b32 $0, $1, 0x00000001;\", \"=r,r\"(i32 %v1)")) << t.text;
  EXPECT_TRUE(contains(t.text, "call i32 asm \"and.b32 $0, $1, 0x00008000;\", \"=r,r\"(i32 %v1)")) << t.text;
  EXPECT_FALSE(contains(t.text, "0x00000003")) << t.text;
  EXPECT_TRUE(std::regex_search(t.text, std::regex("%v[0-9]+ = and i32 %v1, 3\n  %v[0-9]+ = icmp ne i32 %v[0-9]+, 0\n")))
      << t.text;
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_FALSE(contains(ptx["sm_90a"], "setp.lt.s16")) << ptx["sm_90a"];
  EXPECT_TRUE(contains(ptx["sm_90a"], "and.b32 %r")) << ptx["sm_90a"];
}

// A constant divisor or shift amount needs no guard (division by -1, out-of-range shifts): the
// plain instruction is emitted, an arithmetic shift for a floor division by a power of two. -1
// keeps the guarded sequence; a 32-bit shift by an out-of-range constant is PTX's, which clamps.
TEST(LowerToNvvm, ConstantRightOperandsNeedNoGuards) {
  Kernel k("const_rhs");
  Value* p = k.arg(gptr(ir::i32()));
  Value* a = k.b.load(p, ir::i32());
  int slot = 1;
  auto put = [&](Value* v) { k.b.store(v, k.at(p, k.c32(slot++))); };
  put(k.b.binary(OpCode::FloorDiv, a, k.c32(8)));
  put(k.b.binary(OpCode::FloorDiv, a, k.c32(-3)));
  put(k.b.binary(OpCode::Rem, a, k.c32(7)));
  put(k.b.binary(OpCode::Shr, a, k.c32(3)));
  put(k.b.binary(OpCode::Shl, a, k.c32(31)));
  put(k.b.binary(OpCode::Div, a, k.c32(-1)));  // MIN / -1 wraps: guarded
  put(k.b.binary(OpCode::Shl, a, k.c32(40)));  // out of range: 0, guarded
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "sdiv i32 %v")) << t.text;  // by -3
  EXPECT_FALSE(contains(t.text, ", 8\n")) << t.text;        // // 8 is ashr by 3
  EXPECT_TRUE(contains(t.text, "srem i32 %v1, 7\n")) << t.text;
  EXPECT_FALSE(contains(t.text, "icmp eq i32 8, -1")) << t.text;
  EXPECT_FALSE(contains(t.text, "icmp eq i32 -3, -1")) << t.text;
  EXPECT_FALSE(contains(t.text, "icmp ult i32 3, 32")) << t.text;
  EXPECT_TRUE(contains(t.text, "icmp sgt i32 %v")) << t.text;  // floor toward -inf for a negative divisor
  EXPECT_TRUE(contains(t.text, "icmp eq i32 -1, -1")) << t.text;
  EXPECT_TRUE(contains(t.text, "(i32 %v1, i32 40)")) << t.text;  // shl.b32 by 40 gives 0
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_90a"], "shr.s32")) << ptx["sm_90a"];
}

// Within a basic block an identical side-effect-free instruction is emitted once; loads are not
// merged (memory may change between them).
TEST(LowerToNvvm, IdenticalPureInstructionsInABlockAreEmittedOnce) {
  Kernel k("reuse");
  Value* p = k.arg(gptr(ir::f32()));
  Value* i = k.b.special(OpCode::ThreadIdx);
  Value* x = k.b.load(k.at(p, i), ir::f32());
  k.b.store(k.b.binary(OpCode::Add, x, x), k.at(p, k.b.binary(OpCode::Add, i, k.c32(1))));
  Value* y = k.b.load(k.at(p, i), ir::f32());  // the same address again, after a store
  k.b.store(y, k.at(p, k.b.binary(OpCode::Add, i, k.c32(1))));
  NvvmModuleText t = k.lower();
  auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t at = t.text.find(s); at != std::string::npos; at = t.text.find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("= getelementptr float, float addrspace(1)* %v"), 2u) << t.text;  // p + i, p + (i + 1)
  EXPECT_EQ(count("= add i32 %v"), 1u) << t.text;
  EXPECT_EQ(count("= load float"), 2u) << t.text;
  COMPILE_OR_SKIP(t, ptx);
}

TEST(LowerToNvvm, EveryComparePredicate) {
  Kernel k("compares");
  Value* out = k.arg(gptr(ir::bool_type()));
  std::vector<Type> types = all_scalar_types();
  Value* tid = k.b.special(OpCode::ThreadIdx);
  int slot = 0;
  for (Type t : types) {
    Value* p = k.arg(gptr(t));
    Value* a = k.b.load(k.at(p, tid), t);
    Value* b = k.b.load(p, t);
    for (CmpPredicate pr : {CmpPredicate::Eq, CmpPredicate::Ne, CmpPredicate::Lt, CmpPredicate::Le, CmpPredicate::Gt,
                            CmpPredicate::Ge})
      k.b.store(k.b.cmp(pr, a, b), k.at(out, k.c32(slot++)));
  }
  NvvmModuleText t = k.lower();
  for (const char* s : {"icmp slt i32", "icmp ule i32", "icmp ugt i64", "icmp sge i8", "icmp uge i1", "fcmp une float",
                        "fcmp oeq double", "fcmp ole float", "fcmp ogt float", "fcmp oge double", "fcmp olt float"})
    EXPECT_TRUE(contains(t.text, s)) << s;
  COMPILE_OR_SKIP(t, ptx);
}

TEST(LowerToNvvm, SharedAndGenericPointers) {
  Kernel k("spaces");
  Value* smem = k.arg(ir::pointer_type(ir::f32(), AddrSpace::Smem, 16));
  Value* gen = k.arg(ir::pointer_type(ir::f32(), AddrSpace::Generic, 4));
  Value* cmem = k.arg(ir::pointer_type(ir::f32(), AddrSpace::Cmem, 4));
  Value* tid = k.b.special(OpCode::ThreadIdx);
  k.b.store(k.b.load(k.at(cmem, tid), ir::f32()), k.at(smem, tid));
  k.b.barrier();
  Value* v = k.b.load(k.at(smem, k.b.binary(OpCode::Xor, tid, k.c32(1))), ir::f32());
  k.b.store(v, k.at(gen, tid));
  Value* as_generic = k.b.bitcast(smem, ir::pointer_type(ir::f32(), AddrSpace::Generic, 16));
  k.b.printf("%p\n", {as_generic});
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "define void @spaces(float addrspace(3)* %v0, float* %v1, float addrspace(4)* %v2)"));
  EXPECT_TRUE(contains(t.text, "addrspacecast float addrspace(3)* %v0 to float*"));
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_90a"], "st.shared.f32"));
  EXPECT_TRUE(contains(ptx["sm_90a"], "ld.const.f32"));
}

TEST(LowerToNvvm, TwoKernelsInOneModule) {
  ir::Module m;
  for (const char* name : {"first", "second"}) {
    ir::Function* f = m.add_function(name, ir::FunctionKind::Kernel);
    ir::Builder b(f->body.get());
    Value* p = f->body->add_arg(gptr(ir::i32()));
    b.store(b.special(OpCode::ThreadIdx), p);
    b.ret({});
  }
  NvvmModuleText t = target::lower_kernels_to_nvvm(m);
  EXPECT_EQ(t.kernel_names, (std::vector<std::string>{"first", "second"}));
  EXPECT_TRUE(contains(t.text, "!nvvm.annotations = !{!0, !1}\n"));
  // intrinsic declarations are emitted once
  size_t first = t.text.find("declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(t.text.find("declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()", first + 1), std::string::npos);
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_80"], ".entry first"));
  EXPECT_TRUE(contains(ptx["sm_80"], ".entry second"));
}

}  // namespace

TEST(LowerToNvvm, ShufflesAndVotes) {
  Kernel k("warp");
  Value* out = k.arg(gptr(ir::i32()));
  Value* tid = k.b.special(OpCode::ThreadIdx);
  Value* full = k.c32(-1);
  Value* v = k.b.load(k.at(out, tid), ir::i32());
  int slot = 64;
  for (ir::ShuffleKind kind : {ir::ShuffleKind::Idx, ir::ShuffleKind::Up, ir::ShuffleKind::Down, ir::ShuffleKind::Bfly})
    k.b.store(k.b.shuffle(kind, v, k.c32(1), k.c32(kind == ir::ShuffleKind::Up ? 0 : 31), full),
              k.at(out, k.b.binary(OpCode::Add, tid, k.c32(slot += 64))));
  Value* pred = k.b.cmp(CmpPredicate::Lt, tid, k.c32(5));
  Value* r = k.b.vote(ir::VoteKind::Ballot, pred, full);
  for (ir::VoteKind kind : {ir::VoteKind::Any, ir::VoteKind::All, ir::VoteKind::Uni})
    r = k.b.select(k.b.vote(kind, pred, full), r, k.c32(int(kind)));
  k.b.store(r, out);
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %"));
  EXPECT_TRUE(contains(t.text, "@llvm.nvvm.shfl.sync.up.i32("));
  EXPECT_TRUE(contains(t.text, "call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 %"));
  EXPECT_TRUE(contains(t.text, "call i1 @llvm.nvvm.vote.uni.sync("));
  COMPILE_OR_SKIP(t, ptx);
  for (const char* s : {"shfl.sync.idx.b32", "shfl.sync.up.b32", "shfl.sync.down.b32", "shfl.sync.bfly.b32",
                        "vote.sync.ballot.b32", "vote.sync.any.pred", "vote.sync.all.pred", "vote.sync.uni.pred"})
    EXPECT_TRUE(contains(ptx["sm_90a"], s)) << s;
}

TEST(LowerToNvvm, AtomicsOnGlobalSharedAndGenericMemory) {
  using ir::AtomicKind;
  using ir::MemoryOrder;
  using ir::MemoryScope;
  Kernel k("atomics");
  Value* tid = k.b.special(OpCode::ThreadIdx);
  Type u32 = ir::int_type(32, false), u64 = ir::int_type(64, false);
  Value* gi = k.arg(gptr(ir::i32()));
  Value* gu = k.arg(gptr(u32));
  Value* g64 = k.arg(gptr(u64));
  Value* gf = k.arg(gptr(ir::f32()));
  Value* gd = k.arg(gptr(ir::f64()));
  Value* gh = k.arg(gptr(ir::f16()));
  Value* gen = k.arg(ir::pointer_type(ir::i64(), AddrSpace::Generic, 8));
  Value* s = k.b.smem_alloc(ir::i32(), 32, 4);
  auto rmw = [&](AtomicKind kind, Value* p, Value* v, MemoryOrder o = MemoryOrder::Relaxed,
                 MemoryScope sc = MemoryScope::Gpu) { return k.b.atomic(kind, o, sc, p, v); };
  Value* x = k.b.load(k.at(gi, tid), ir::i32());
  Value* acc = x;
  for (AtomicKind kind : {AtomicKind::Add, AtomicKind::And, AtomicKind::Or, AtomicKind::Xor, AtomicKind::Max,
                          AtomicKind::Min, AtomicKind::Exch})
    acc = k.b.binary(OpCode::Add, acc, rmw(kind, gi, x));
  acc = k.b.binary(OpCode::Add, acc, k.b.atomic(AtomicKind::Cas, MemoryOrder::AcqRel, MemoryScope::Cta,
                                                k.at(s, tid), acc, x));
  acc = k.b.binary(OpCode::Add, acc, rmw(AtomicKind::Add, s, acc, MemoryOrder::Release, MemoryScope::Cta));
  k.b.store(acc, k.at(gi, tid));
  k.b.store(rmw(AtomicKind::Max, gu, k.b.bitcast(acc, u32), MemoryOrder::Acquire, MemoryScope::Sys), gu);
  k.b.store(rmw(AtomicKind::Add, g64, k.b.cast(acc, u64)), g64);
  k.b.store(rmw(AtomicKind::Add, gf, k.b.cast(acc, ir::f32())), gf);
  k.b.store(rmw(AtomicKind::Add, gd, k.b.cast(acc, ir::f64())), gd);
  k.b.store(rmw(AtomicKind::Add, gh, k.b.cast(acc, ir::f16())), gh);
  k.b.store(rmw(AtomicKind::Xor, gen, k.b.cast(acc, ir::i64())), gen);
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "asm sideeffect \"atom.relaxed.gpu.global.add.u32 $0, [$1], $2;\", \"=r,l,r,~{memory}\""));
  EXPECT_TRUE(contains(t.text, "\"atom.acq_rel.cta.shared.cas.b32 $0, [$1], $2, $3;\", \"=r,l,r,r,~{memory}\""));
  EXPECT_TRUE(contains(t.text, "atom.acquire.sys.global.max.u32"));
  EXPECT_TRUE(contains(t.text, "atom.relaxed.gpu.global.min.s32"));
  EXPECT_TRUE(contains(t.text, "atom.relaxed.gpu.global.add.noftz.f16 $0, [$1], $2;\", \"=h,l,h"));
  EXPECT_TRUE(contains(t.text, "\"atom.relaxed.gpu.xor.b64 $0, [$1], $2;\", \"=l,l,l"));  // generic: no space
  COMPILE_OR_SKIP(t, ptx);
  // Inline assembly reaches the PTX as written.
  for (const char* p : {"atom.relaxed.gpu.global.add.u32", "atom.release.cta.shared.add.u32",
                        "atom.relaxed.gpu.global.add.f64", "atom.relaxed.gpu.global.add.f32",
                        "atom.relaxed.gpu.global.add.noftz.f16", "atom.acq_rel.cta.shared.cas.b32",
                        "atom.relaxed.gpu.global.add.u64"})
    EXPECT_TRUE(contains(ptx["sm_90a"], p)) << p;
}

TEST(LowerToNvvm, Bfloat16AtomicAddOnHopper) {
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM/libdevice not found";
  Kernel k("bf16_atomic");
  Value* p = k.arg(gptr(ir::bf16()));
  k.b.store(k.b.atomic(ir::AtomicKind::Add, ir::MemoryOrder::Relaxed, ir::MemoryScope::Gpu, p,
                       k.b.load(k.at(p, k.c32(1)), ir::bf16())), k.at(p, k.c32(2)));
  NvvmModuleText t = k.lower();
  target::PtxResult r = target::compile_nvvm_ir_to_ptx(t.text, "sm_90a", 3, false, t.needs_libdevice);
  EXPECT_TRUE(contains(r.ptx, "atom.relaxed.gpu.global.add.noftz.bf16"));
}

TEST(LowerToNvvm, StaticAndDynamicSharedMemory) {
  Kernel k("smem");
  Value* out = k.arg(gptr(ir::f32()));
  Value* tid = k.b.special(OpCode::ThreadIdx);
  Value* a = k.b.smem_alloc(ir::f32(), 64, 16);
  Value* flags = k.b.smem_alloc(ir::bool_type(), 3, 1);
  Value* dyn = k.b.dyn_smem(ir::f32(), 128);
  Value* odd = k.b.smem_alloc(ir::int_type(24, false), 5, 4);  // no natural LLVM layout: bytes
  k.b.store(k.b.load(k.at(out, tid), ir::f32()), k.at(a, tid));
  k.b.store(k.b.const_bool(true), k.at(flags, k.c32(1)));
  k.b.store(k.b.const_int(ir::int_type(24, false), 7), k.at(odd, k.c32(2)));
  k.b.barrier();
  Value* v = k.b.binary(OpCode::Add, k.b.load(k.at(a, k.b.binary(OpCode::Xor, tid, k.c32(1))), ir::f32()),
                        k.b.cast(k.b.dyn_smem_size(), ir::f32()));
  k.b.store(v, k.at(dyn, tid));
  k.b.store(k.b.load(k.at(dyn, tid), ir::f32()), k.at(out, tid));
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "@__opencute_smem.smem.0 = internal addrspace(3) global [64 x float] undef, align 16\n"));
  EXPECT_TRUE(contains(t.text, "@__opencute_smem.smem.1 = internal addrspace(3) global [3 x i8] undef, align 1\n"));
  EXPECT_TRUE(contains(t.text, "@__opencute_smem.smem.2 = internal addrspace(3) global [15 x i8] undef, align 4\n"));
  EXPECT_TRUE(contains(t.text, "@__opencute_dyn_smem = external addrspace(3) global [0 x i8], align 128\n"));
  EXPECT_TRUE(contains(t.text, "asm \"mov.u32 $0, %dynamic_smem_size;\""));
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_90a"], ".extern .shared .align 128 .b8 __opencute_dyn_smem[]"));
  EXPECT_TRUE(contains(ptx["sm_90a"], ".shared .align 16 .b8"));
  EXPECT_TRUE(contains(ptx["sm_90a"], "%dynamic_smem_size"));
  EXPECT_TRUE(contains(ptx["sm_90a"], "st.shared.f32"));
}

TEST(LowerToNvvm, AssertCallsAssertfailThenTraps) {
  Kernel k("checked");
  Value* out = k.arg(gptr(ir::i32()));
  Value* tid = k.b.special(OpCode::ThreadIdx);
  k.b.assertion(k.b.cmp(CmpPredicate::Lt, tid, k.c32(100)), "tid < 100", "/home/user/kernel.py", 17);
  k.b.store(tid, k.at(out, tid));
  NvvmModuleText t = k.lower();
  EXPECT_TRUE(contains(t.text, "declare void @__assertfail(i8*, i8*, i32, i8*, i64)"));
  EXPECT_TRUE(contains(t.text, ", i32 17, i8* %"));
  EXPECT_TRUE(contains(t.text, "c\"tid < 100\\00\""));
  EXPECT_TRUE(contains(t.text, "c\"/home/user/kernel.py\\00\""));
  EXPECT_TRUE(contains(t.text, "  call void @llvm.trap()\n  unreachable\n"));
  COMPILE_OR_SKIP(t, ptx);
  EXPECT_TRUE(contains(ptx["sm_90a"], "__assertfail"));
  EXPECT_TRUE(contains(ptx["sm_90a"], "trap;"));
}
