// IR text parser: printing, parsing and printing again gives the same text, for every op kind.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

using namespace opencute::ir;

namespace {

// A kernel and a host function that together use every op kind the printer knows.
std::unique_ptr<Module> every_op_module() {
  auto m = std::make_unique<Module>();
  Function* k = m->add_function("kernel_every_op", FunctionKind::Kernel);
  k->reqntid[0] = 128;
  k->reqntid[1] = 1;
  k->reqntid[2] = 1;
  Value* p = k->body->add_arg(pointer_type(f32(), AddrSpace::Gmem, 16));
  Value* n = k->body->add_arg(i32());
  Value* h = k->body->add_arg(f16());
  Builder b(k->body.get());
  Value* tid = b.special(OpCode::ThreadIdx, 0);
  Value* bid = b.special(OpCode::BlockIdx, 1);
  Value* lane = b.special(OpCode::LaneIdx);
  Value* i = b.binary(OpCode::Add, b.binary(OpCode::Mul, bid, b.const_int(i32(), 128)), tid);
  Value* cond = b.cmp(CmpPredicate::Lt, i, n);
  Op* iff = b.create_if(cond);
  b.set_results(iff, {f32()});
  b.set_block(iff->region_block(0));
  Value* q = b.ptr_add(p, i);
  Value* v = b.load(q, f32());
  Value* e = b.math("exp", {v});
  b.yield({b.fma(e, b.const_float(f32(), 0.5), b.cast(h, f32()))});
  b.set_block(iff->region_block(1));
  b.yield({b.const_float(f32(), -1.25e-3)});
  b.set_block(k->body.get());
  Value* acc = iff->result(0);
  Op* loop = b.create_for(b.const_int(i32(), 0), n, b.const_int(i32(), 2), {acc}, 4);
  b.set_results(loop, {f32()});
  b.set_block(loop->region_block(0));
  Value* iv = loop->region_block(0)->args[0].get();
  Value* carried = loop->region_block(0)->args[1].get();
  b.yield({b.binary(OpCode::Add, carried, b.cast(iv, f32()))});
  b.set_block(k->body.get());
  Op* wh = b.create_while({n});
  b.set_results(wh, {i32()});
  b.set_block(wh->region_block(0));
  Value* w = wh->region_block(0)->args[0].get();
  b.condition(b.cmp(CmpPredicate::Gt, w, b.const_int(i32(), 1)), {w});
  Block* after = wh->region_block(1);

  b.set_block(after);
  b.yield({b.binary(OpCode::Shr, after->args[0].get(), b.const_int(i32(), 1))});
  b.set_block(k->body.get());
  Value* arr = b.local_array(f32(), 8, 16);
  b.store(loop->result(0), b.ptr_add(arr, lane));
  Value* vec = b.vec_splat(loop->result(0), 4);
  Value* vec2 = b.vec_insert(vec, b.const_float(f32(), 2.0), 3);
  b.store(b.vec_extract(vec2, 1), p);
  b.store(b.load(b.ptr_add(p, b.const_int(i32(), 4)), vector_type(f32(), 4)), b.ptr_add(p, b.const_int(i32(), 8)));
  Value* sel = b.select(b.cmp(CmpPredicate::Ne, wh->result(0), n), b.unary(OpCode::Neg, n), wh->result(0));
  b.barrier();
  b.printf("tid=%d \"quoted\"\t%f\n", {sel, loop->result(0)});
  b.ret({});

  Function* host = m->add_function("host", FunctionKind::Host);
  host->result_types = {i64()};
  Value* hp = host->body->add_arg(pointer_type(f32(), AddrSpace::Gmem, 16));
  Value* hn = host->body->add_arg(i32());
  Value* hh = host->body->add_arg(f16());
  Value* stream = host->body->add_arg(i64());
  Builder hb(host->body.get());
  Value* blocks = hb.binary(OpCode::FloorDiv, hb.binary(OpCode::Add, hn, hb.const_int(i32(), 127)), hb.const_int(i32(), 128));
  Value* one = hb.const_int(i32(), 1);
  hb.launch("kernel_every_op", {blocks, one, one}, {hb.const_int(i32(), 128), one, one}, hb.const_int(i32(), 0), stream,
            {}, {hp, hn, hh});
  hb.launch("kernel_every_op", {blocks, one, one}, {hb.const_int(i32(), 128), one, one}, hb.const_int(i32(), 1024),
            stream, {hb.const_int(i32(), 2), one, one}, {hp, hn, hh});
  hb.printf("no args", {});
  hb.ret({hb.cast(hb.bitcast(hb.const_float(f32(), 1.0), i32()), i64())});
  return m;
}

}  // namespace

TEST(IrParser, RoundTripsEveryOpKind) {
  auto m = every_op_module();
  verify_or_throw(*m);
  std::string text = print_module(*m);
  auto parsed = parse_module(text);
  verify_or_throw(*parsed);
  EXPECT_EQ(print_module(*parsed), text);
  EXPECT_EQ(module_hash(*parsed), module_hash(*m));
}

TEST(IrParser, KeepsAttributesThePrinterShows) {
  auto parsed = parse_module(print_module(*every_op_module()));
  const Function* k = parsed->find("kernel_every_op");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->kind, FunctionKind::Kernel);
  EXPECT_EQ(k->reqntid[0], 128);
  const Function* h = parsed->find("host");
  ASSERT_EQ(h->result_types.size(), 1u);
  EXPECT_EQ(h->result_types[0], i64());
  int launches = 0, clusters = 0;
  for (auto& op : h->body->ops)
    if (op->code == OpCode::Launch) {
      ++launches;
      clusters += int(op->int_attr);
    }
  EXPECT_EQ(launches, 2);
  EXPECT_EQ(clusters, 1);
}

TEST(IrParser, ReportsLineAndProblem) {
  auto expect_error = [](const std::string& text, const std::string& fragment) {
    try {
      parse_module(text);
      ADD_FAILURE() << "no error for: " << text;
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error("module {\nfunc.func @f(%0: i32) {\n  %1 = frobnicate %0 : i32\n  return\n}\n}\n", "line 3: unknown operation 'frobnicate'");
  expect_error("module {\nfunc.func @f(%0: i32) {\n  %1 = add %0, %7 : i32\n  return\n}\n}\n", "use of undefined value %7");
  expect_error("module {\nfunc.func @f(%0: q32) {\n  return\n}\n}\n", "unknown type 'q32'");
  expect_error("module {\nfunc.func @f() {\n  return\n", "unexpected end of text");
}
