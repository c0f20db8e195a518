// SM80 copy ops (cp.async, commit / wait groups, ldmatrix, stmatrix): the IR text round trip,
// and the NVVM lowering compiled by libNVVM for sm_80 and sm_90a and linked by nvJitLink (or
// ptxas), so PTX that the tools reject fails here. Their CPU semantics are tested from Python
// (tests/nvgpu/test_copy_sm80.py) against numpy models of the PTX ISA. Steps skip without libNVVM.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
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
using ir::OpCode;
using ir::Type;
using ir::Value;

struct Kernel : nvvm_test::KernelUnderTest {
  using KernelUnderTest::KernelUnderTest;
  ir::Op* op(OpCode code, std::vector<Value*> operands, std::vector<Type> results, int64_t attr,
             std::vector<int64_t> ints = {}) {
    ir::Op* o = b.create(code, operands, results);
    o->int_attr = attr;
    o->ints = ints;
    return o;
  }
  std::string lower() {
    b.set_block(f->body.get());
    b.ret({});
    ir::verify_or_throw(m);
    return target::lower_kernels_to_nvvm(m).text;
  }
};

Type smem(Type t) { return ir::pointer_type(t, AddrSpace::Smem, 16); }
Type gmem(Type t) { return ir::pointer_type(t, AddrSpace::Gmem, 16); }

// A kernel using every cp.async form and ldmatrix of each width, element type and layout.
void build_loads(Kernel& k) {
  Value* g = k.arg(gmem(ir::f16()));
  Value* out = k.arg(gmem(ir::f16()));
  Value* out8 = k.arg(gmem(ir::int_type(8)));
  Value* n = k.arg(ir::i32());
  Value* s = k.b.smem_alloc(ir::f16(), 512, 16);
  Value* tid = k.b.special(OpCode::ThreadIdx);
  Value* row = k.b.ptr_add(s, k.b.binary(OpCode::Mul, tid, k.b.const_int(ir::i32(), 8)));
  Value* src = k.b.ptr_add(g, k.b.binary(OpCode::Mul, tid, k.b.const_int(ir::i32(), 8)));
  for (int bytes : {4, 8, 16}) k.op(OpCode::CpAsync, {row, src, k.b.const_int(ir::i32(), bytes)}, {}, bytes, {0});
  k.op(OpCode::CpAsync, {row, src, n}, {}, 16, {1});  // cache-global, runtime source size (zero-fill)
  k.op(OpCode::CpAsyncCommit, {}, {}, 0);
  k.op(OpCode::CpAsyncWait, {}, {}, 1);
  k.op(OpCode::CpAsyncWait, {}, {}, 0);
  k.b.barrier();
  int slot = 0;
  for (Type t : {ir::f16(), ir::bf16()})
    for (int num : {1, 2, 4})
      for (int trans : {0, 1}) {
        Value* r = k.b.bitcast(row, smem(t));
        Value* v = k.op(OpCode::LdMatrix, {r}, {ir::vector_type(t, 2 * num)}, num, {trans})->result();
        Value* x = k.b.vec_extract(v, 2 * num - 1);
        if (t != ir::f16()) x = k.b.bitcast(x, ir::f16());
        k.b.store(x, k.b.ptr_add(out, k.b.const_int(ir::i32(), slot++)));
      }
  Value* r8 = k.b.bitcast(row, smem(ir::int_type(8)));
  Value* v8 = k.op(OpCode::LdMatrix, {r8}, {ir::vector_type(ir::int_type(8), 16)}, 4, {0})->result();
  k.b.store(k.b.vec_extract(v8, 13), out8);
}

TEST(Sm80Copy, IrTextRoundTrips) {
  Kernel k("loads");
  build_loads(k);
  k.b.set_block(k.f->body.get());
  k.b.ret({});
  std::string text = ir::print_module(k.m);
  EXPECT_TRUE(contains(text, "cp_async [16, 1]")) << text;
  EXPECT_TRUE(contains(text, "cp_async_wait [1]")) << text;
  EXPECT_TRUE(contains(text, "ldmatrix [4, 1]")) << text;
  EXPECT_EQ(ir::print_module(*ir::parse_module(text)), text);
}

TEST(Sm80Copy, CpAsyncAndLdmatrixCompileForSm80AndSm90a) {
  Kernel k("loads");
  build_loads(k);
  std::string nvvm = k.lower();
  EXPECT_TRUE(contains(nvvm, "cp.async.ca.shared.global [$0], [$1], 4, $2;"));
  EXPECT_TRUE(contains(nvvm, "cp.async.cg.shared.global [$0], [$1], 16, $2;"));
  EXPECT_TRUE(contains(nvvm, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {$0, $1, $2, $3}, [$4];"));
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  for (const char* arch : {"sm_80", "sm_90a"}) {
    std::string ptx = nvvm_test::compile_ptx(nvvm, arch);
    if (HasFailure()) return;
    for (const char* want : {"cp.async.ca.shared.global", "cp.async.cg.shared.global", "cp.async.commit_group",
                             "cp.async.wait_group 1", "cp.async.wait_group 0",
                             "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
                             "ldmatrix.sync.aligned.m8n8.x4.shared.b16"})
      EXPECT_TRUE(contains(ptx, want)) << arch << " lacks " << want << "\n" << ptx;
  }
}

TEST(Sm80Copy, StmatrixCompilesForSm90a) {
  Kernel k("stores");
  Value* g = k.arg(gmem(ir::f16()));
  Value* s = k.b.smem_alloc(ir::f16(), 256, 16);
  Value* tid = k.b.special(OpCode::ThreadIdx);
  Value* row = k.b.ptr_add(s, k.b.binary(OpCode::Mul, tid, k.b.const_int(ir::i32(), 8)));
  for (int num : {1, 2, 4})
    for (int trans : {0, 1}) {
      Value* x = k.b.load(k.b.ptr_add(g, tid), ir::f16());
      Value* v = k.b.vec_splat(x, 2 * num);
      k.op(OpCode::StMatrix, {row, v}, {}, num, {trans});
    }
  std::string nvvm = k.lower();
  EXPECT_TRUE(contains(nvvm, "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [$0], {$1, $2, $3, $4};"));
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  std::string ptx = nvvm_test::compile_ptx(nvvm, "sm_90a");
  EXPECT_TRUE(contains(ptx, "stmatrix.sync.aligned.m8n8.x2.shared.b16")) << ptx;
  EXPECT_TRUE(contains(ptx, "stmatrix.sync.aligned.m8n8.x1.trans.shared.b16")) << ptx;
}

TEST(Sm80Copy, VerifierRejectsMalformedOps) {
  Kernel k("bad");
  Value* s = k.b.smem_alloc(ir::f16(), 64, 16);
  Value* g = k.arg(gmem(ir::f16()));
  k.op(OpCode::CpAsync, {s, g, k.b.const_int(ir::i32(), 12)}, {}, 12, {0});  // 12 bytes: no such form
  EXPECT_THROW(k.lower(), std::exception);
  Kernel k2("bad2");
  Value* s2 = k2.b.smem_alloc(ir::f16(), 64, 16);
  k2.op(OpCode::LdMatrix, {s2}, {ir::vector_type(ir::f16(), 4)}, 4, {0});  // x4 needs 8 halves
  EXPECT_THROW(k2.lower(), std::exception);
}

}  // namespace
