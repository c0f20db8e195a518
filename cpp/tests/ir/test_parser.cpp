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
  b.named_barrier(b.const_int(i32(), 1), b.const_int(i32(), 64), NamedBarrierKind::Arrive);
  b.named_barrier(b.const_int(i32(), 2), b.const_int(i32(), 128), NamedBarrierKind::Sync);
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
  Value* full = b.const_int(i32(), -1);
  Value* sh = b.shuffle(ShuffleKind::Bfly, sel, b.const_int(i32(), 4), b.const_int(i32(), 31), full);
  Value* ballot = b.vote(VoteKind::Ballot, cond, full);
  b.store(b.cast(b.select(b.vote(VoteKind::Uni, cond, full), sh, ballot), f32()), b.ptr_add(p, lane));
  b.store(b.cast(b.warp_redux(ReduxKind::Xor, sh, full), f32()), p);
  b.store(b.warp_redux(ReduxKind::Max, b.load(p, f32()), full, true, true), p);
  Value* counter = b.smem_alloc(i32(), 64, 16);
  b.atomic(AtomicKind::Add, MemoryOrder::Relaxed, MemoryScope::Gpu, counter, sh);
  b.atomic(AtomicKind::Cas, MemoryOrder::AcqRel, MemoryScope::Cta, counter, ballot, sh);
  Value* dyn = b.dyn_smem(f32(), 128);
  b.atomic(AtomicKind::Add, MemoryOrder::Release, MemoryScope::Sys, b.ptr_add(dyn, lane), loop->result(0));
  b.assertion(b.cmp(CmpPredicate::Lt, lane, b.dyn_smem_size()), "lane \"in\" range", "/src/user file.py", 42);
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
  hb.assertion(hb.cmp(CmpPredicate::Gt, hn, hb.const_int(i32(), 0)), "n > 0", "host.py", 7);
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

// Inline asm, as libraries write it (FA4's `cvt.rn.bf16x2.f32` -> i32): the text with quotes,
// backslashes and a newline, the constraints, operands and a result, and the side-effect flag.
TEST(IrParser, RoundTripsInlineAsm) {
  auto m = std::make_unique<Module>();
  Function* k = m->add_function("kernel_asm", FunctionKind::Kernel);
  Value* p = k->body->add_arg(pointer_type(i32(), AddrSpace::Gmem, 16));
  Value* x = k->body->add_arg(f32());
  Builder b(k->body.get());
  Op* cvt = b.create(OpCode::InlineAsm, {x, x}, {i32()});
  cvt->str_attr = std::string("=r,f,f") + '\0' + "cvt.rn.bf16x2.f32 $0, $2, $1; // \"q\" \\ end\n";
  Op* fence = b.create(OpCode::InlineAsm, {}, {});
  fence->str_attr = std::string("~{memory}") + '\0' + "fence.proxy.async.shared::cta;";
  fence->int_attr = 1;
  b.store(cvt->result(0), p);
  b.ret({});
  const std::string text = print_module(*m);
  auto parsed = parse_module(text);
  EXPECT_EQ(print_module(*parsed), text);
  EXPECT_EQ(module_hash(*parsed), module_hash(*m));
  const Op& got = *parsed->find("kernel_asm")->body->ops[0];
  EXPECT_EQ(got.code, OpCode::InlineAsm);
  EXPECT_EQ(inline_asm_constraints(got), "=r,f,f");
  EXPECT_EQ(inline_asm_text(got), "cvt.rn.bf16x2.f32 $0, $2, $1; // \"q\" \\ end\n");
  ASSERT_EQ(got.results.size(), 1u);
  EXPECT_EQ(got.result()->type, i32());
  EXPECT_EQ(got.int_attr, 0);
  EXPECT_EQ(parsed->find("kernel_asm")->body->ops[1]->int_attr, 1);
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

TEST(IrParser, KeepsWarpAtomicSharedMemoryAndAssertAttributes) {
  auto parsed = parse_module(print_module(*every_op_module()));
  const Function* k = parsed->find("kernel_every_op");
  std::vector<const Op*> atomics, asserts, shuffles, smem;
  for (auto& op : k->body->ops) {
    if (op->code == OpCode::Atomic) atomics.push_back(op.get());
    if (op->code == OpCode::Assert) asserts.push_back(op.get());
    if (op->code == OpCode::Shuffle) shuffles.push_back(op.get());
    if (op->code == OpCode::SmemAlloc) smem.push_back(op.get());
  }
  ASSERT_EQ(atomics.size(), 3u);
  EXPECT_EQ(AtomicKind(atomics[1]->int_attr), AtomicKind::Cas);
  EXPECT_EQ(atomics[1]->operands.size(), 3u);
  EXPECT_EQ(atomics[1]->ints, (std::vector<int64_t>{int64_t(MemoryOrder::AcqRel), int64_t(MemoryScope::Cta)}));
  EXPECT_EQ(atomics[2]->ints, (std::vector<int64_t>{int64_t(MemoryOrder::Release), int64_t(MemoryScope::Sys)}));
  EXPECT_EQ(atomics[2]->result()->type, f32());
  ASSERT_EQ(shuffles.size(), 1u);
  EXPECT_EQ(ShuffleKind(shuffles[0]->int_attr), ShuffleKind::Bfly);
  ASSERT_EQ(smem.size(), 1u);
  EXPECT_EQ(smem[0]->int_attr, 64);
  EXPECT_EQ(smem[0]->result()->type, pointer_type(i32(), AddrSpace::Smem, 16));
  ASSERT_EQ(asserts.size(), 1u);
  EXPECT_EQ(asserts[0]->str_attr, "lane \"in\" range");
  EXPECT_EQ(asserts[0]->file, "/src/user file.py");
  EXPECT_EQ(asserts[0]->line, 42);
}

TEST(IrParser, RejectsUnknownArchKinds) {
  auto expect_error = [](const std::string& body, const std::string& fragment) {
    std::string text = "module {\ngpu.kernel @k(%0: i32) {\n" + body + "  return\n}\n}\n";
    try {
      parse_module(text);
      ADD_FAILURE() << "no error for: " << text;
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error("  %1 = shuffle sideways %0, %0, %0, %0 : i32\n", "unknown shuffle kind 'sideways'");
  expect_error("  %1 = vote most %0, %0 : i32\n", "unknown vote kind 'most'");
  expect_error("  %1 = int_to_ptr %0 : i32 -> !ptr<i32, gmem, align<4>>\n  %2 = atomic add eventually gpu %1, %0 : i32\n",
               "unknown memory order (sem) 'eventually'");
}

TEST(IrVerifier, ChecksArchOps) {
  Module m;
  Function* host = m.add_function("host", FunctionKind::Host);
  Builder b(host->body.get());
  Value* x = host->body->add_arg(i32());
  b.shuffle(ShuffleKind::Idx, x, x, x, x);  // kernels only
  Op* vote = b.create(OpCode::Vote, {x, x}, {i32()});  // predicate must be i1
  vote->int_attr = int64_t(VoteKind::Ballot);
  b.create(OpCode::Assert, {x}, {});
  b.ret({});
  auto errors = verify_module(m);
  auto has = [&](const std::string& s) {
    for (auto& e : errors)
      if (e.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("shuffle is only valid in a kernel"));
  EXPECT_TRUE(has("vote takes (i1 predicate, i32 mask)"));
  EXPECT_TRUE(has("assert takes one i1 condition"));
}
