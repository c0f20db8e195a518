// IR core: builder folding, scope checks, printer golden text, verifier, hashing.
#include <gtest/gtest.h>

#include <cstdio>

#include "emulator/host_interpreter.h"
#include "ir/builder.h"
#include "ir/printer.h"
#include "ir/scalar_semantics.h"
#include "ir/verifier.h"
#include "transforms/dead_code.h"

using namespace opencute::ir;

TEST(IrBuilder, FoldsConstants) {
  Module m;
  Function* f = m.add_function("f", FunctionKind::Host);
  Builder b(f->body.get());
  Value* x = b.binary(OpCode::Add, b.const_int(i32(), 2), b.const_int(i32(), 3));
  ASSERT_TRUE(is_constant(x));
  EXPECT_EQ(constant_int(x), 5);
  Value* y = b.binary(OpCode::FloorDiv, b.const_int(i32(), -7), b.const_int(i32(), 2));
  EXPECT_EQ(constant_int(y), -4);
  Value* z = b.binary(OpCode::Rem, b.const_int(i32(), -7), b.const_int(i32(), 2));
  EXPECT_EQ(constant_int(z), -1);  // truncating remainder, like C
  Value* w = b.binary(OpCode::Add, b.const_int(int_type(8, true), 127), b.const_int(int_type(8, true), 1));
  EXPECT_EQ(constant_int(w), -128);
  Value* c = b.cast(b.const_float(f32(), 3.9), i32());
  EXPECT_EQ(constant_int(c), 3);
  Value* h = b.const_float(f16(), 0.1);
  EXPECT_DOUBLE_EQ(constant_float(h), 0.0999755859375);
}

TEST(IrBuilder, IdentitiesKeepIrLean) {
  Module m;
  Function* f = m.add_function("f", FunctionKind::Host);
  Value* a = f->body->add_arg(i32());
  Builder b(f->body.get());
  EXPECT_EQ(b.binary(OpCode::Add, a, b.const_int(i32(), 0)), a);
  EXPECT_EQ(b.binary(OpCode::Mul, a, b.const_int(i32(), 1)), a);
  EXPECT_TRUE(is_constant(b.binary(OpCode::Mul, a, b.const_int(i32(), 0))));
}

TEST(IrBuilder, RejectsValueUsedOutsideItsRegion) {
  Module m;
  Function* f = m.add_function("f", FunctionKind::Host);
  Value* a = f->body->add_arg(i32());
  Builder b(f->body.get());
  Op* op = b.create_if(b.cmp(CmpPredicate::Lt, a, b.const_int(i32(), 3)));
  b.set_block(op->region_block(0));
  Value* inner = b.binary(OpCode::Add, a, a);
  b.yield({});
  b.set_block(op->region_block(1));
  b.yield({});
  b.set_block(f->body.get());
  EXPECT_THROW(b.binary(OpCode::Add, inner, a), ScopeError);
}

TEST(IrBuilder, TypeMismatchThrows) {
  Module m;
  Function* f = m.add_function("f", FunctionKind::Host);
  Builder b(f->body.get());
  Value* a = f->body->add_arg(i32());
  Value* c = f->body->add_arg(f32());
  EXPECT_THROW(b.binary(OpCode::Add, a, c), TypeError);
}

static std::unique_ptr<Module> sum_module() {
  auto m = std::make_unique<Module>();
  Function* f = m->add_function("sum", FunctionKind::Host);
  Value* n = f->body->add_arg(i32());
  Builder b(f->body.get());
  Value* lb = b.const_int(i32(), 0);
  Value* step = b.const_int(i32(), 1);
  Value* init = b.const_int(i32(), 0);
  Op* loop = b.create_for(lb, n, step, {init}, 2);
  b.set_block(loop->region_block(0));
  Value* acc = b.binary(OpCode::Add, loop->region_block(0)->args[1].get(), loop->region_block(0)->args[0].get());
  b.yield({acc});
  b.set_block(f->body.get());
  b.set_results(loop, {i32()});
  f->result_types = {i32()};
  b.ret({loop->result()});
  return m;
}

TEST(IrPrinter, GoldenText) {
  auto m = sum_module();
  const char* expected =
      "module {\n"
      "func.func @sum(%0: i32) -> (i32) {\n"
      "  %1 = constant 0 : i32\n"
      "  %2 = constant 1 : i32\n"
      "  %3 = constant 0 : i32\n"
      "  %4 = for %5 = %1 to %0 step %2 iter(%6 = %3) {unroll = 2} : i32 -> (i32) {\n"
      "    %7 = add %6, %5 : i32\n"
      "    yield %7 : i32\n"
      "  }\n"
      "  return %4 : i32\n"
      "}\n"
      "}\n";
  EXPECT_EQ(print_module(*m), expected);
  EXPECT_TRUE(verify_module(*m).empty());
  EXPECT_EQ(module_hash(*m), module_hash(*sum_module()));
  // The compiled program hashes the text it printed: the same 16 hex digits, FNV-1a of that text.
  EXPECT_EQ(printed_module_hash(expected), module_hash(*m));
  char fnv[17];
  std::snprintf(fnv, sizeof fnv, "%016llx", (unsigned long long)fnv1a64(expected));
  EXPECT_EQ(module_hash(*m), fnv);
}

TEST(IrVerifier, ReportsBadYield) {
  Module m;
  Function* f = m.add_function("f", FunctionKind::Host);
  Value* a = f->body->add_arg(i32());
  Builder b(f->body.get());
  Op* op = b.create_if(b.cmp(CmpPredicate::Lt, a, b.const_int(i32(), 3)));
  b.set_results(op, {i32()});
  b.set_block(op->region_block(0));
  b.yield({a});
  b.set_block(op->region_block(1));
  b.yield({});
  b.set_block(f->body.get());
  b.ret({});
  auto errors = verify_module(m);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("yields 0 values"), std::string::npos);
}

TEST(HostInterpreter, RunsLoopsAndReturns) {
  auto m = sum_module();
  opencute::emulator::HostInterpreter interp(*m->host());
  auto r = interp.run({Scalar::of_int(10)}, nullptr);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].i, 45);
}

TEST(DeadCode, RemovesUnusedPureOps) {
  Module m;
  Function* f = m.add_function("f", FunctionKind::Host);
  Value* a = f->body->add_arg(i32());
  Builder b(f->body.get());
  b.binary(OpCode::Mul, a, a);
  b.const_int(i32(), 7);
  b.printf("%d\n", {a});
  b.ret({});
  EXPECT_EQ(opencute::transforms::remove_dead_code(m), 2);
  EXPECT_EQ(f->body->ops.size(), 2u);
}

TEST(ScalarSemantics, MatchesDocumentedRules) {
  std::string err;
  Scalar r;
  ASSERT_TRUE(eval_binary(OpCode::Shr, i32(), Scalar::of_int(-8), Scalar::of_int(1), &r, &err));
  EXPECT_EQ(r.i, -4);
  ASSERT_TRUE(eval_binary(OpCode::Shr, int_type(32, false), Scalar::of_int(wrap_int(int_type(32, false), -8)),
                          Scalar::of_int(1), &r, &err));
  EXPECT_EQ(r.i, 0x7ffffffc);
  EXPECT_FALSE(eval_binary(OpCode::Div, i32(), Scalar::of_int(1), Scalar::of_int(0), &r, &err));
  EXPECT_EQ(eval_cast(f32(), int_type(8, true), Scalar::of_float(1000.0)).i, 127);  // saturates
  EXPECT_TRUE(eval_cmp(CmpPredicate::Lt, int_type(32, false), Scalar::of_int(1), Scalar::of_int(-1)));
}
