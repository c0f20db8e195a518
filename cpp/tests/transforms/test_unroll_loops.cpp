// Tests for transforms/unroll_loops: which loops are unrolled before the NVVM lowering, and that the
// iterations compute what the loop did (their arithmetic folded to the constants a hand count gives).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "ir/builder.h"
#include "ir/verifier.h"
#include "transforms/unroll_loops.h"

namespace {

using namespace opencute;
using ir::OpCode;
using ir::Value;

int count(const ir::Block& b, OpCode code) {
  int n = 0;
  for (auto& op : b.ops) {
    n += op->code == code;
    for (auto& r : op->regions) n += count(*r.block, code);
  }
  return n;
}

// out[0] = sum over i in [lb, ub) of frag[i] after frag[i] = 3 * i, the loop asking for `unroll`;
// `index_by_iv` false indexes the fragment by a kernel argument instead of the induction variable.
struct Kernel {
  ir::Module m;
  ir::Function* f;
  ir::Builder b;
  Value* out;
  Value* n;
  Kernel(int64_t lb, int64_t ub, int64_t unroll, bool index_by_iv = true, bool smem_in_body = false)
      : f(m.add_function("k", ir::FunctionKind::Kernel)), b(f->body.get()) {
    out = f->body->add_arg(ir::pointer_type(ir::i32(), ir::AddrSpace::Gmem, 4));
    n = f->body->add_arg(ir::i32());
    Value* frag = b.local_array(ir::i32(), 8, 4);
    ir::Op* loop = b.create_for(b.const_int(ir::i32(), lb), b.const_int(ir::i32(), ub), b.const_int(ir::i32(), 1),
                                {b.const_int(ir::i32(), 0)}, unroll);
    ir::Block* body = loop->region_block(0);
    b.set_block(body);
    Value* iv = body->args[0].get();
    if (smem_in_body) b.smem_alloc(ir::i32(), 4, 4);
    Value* slot = b.ptr_add(frag, index_by_iv ? iv : n);
    b.store(b.binary(OpCode::Mul, iv, b.const_int(ir::i32(), 3)), slot);
    Value* sum = b.binary(OpCode::Add, body->args[1].get(), b.load(slot, ir::i32()));
    b.yield({sum});
    b.set_block(f->body.get());
    b.set_results(loop, {ir::i32()});
    b.store(loop->result(), out);
    b.ret({});
    ir::verify_or_throw(m);
  }
};

const ir::Op* the_loop(const Kernel& k) {
  for (auto& op : k.f->body->ops)
    if (op->code == OpCode::For) return op.get();
  return nullptr;
}

TEST(UnrollLoops, UnrollsALoopIndexingRegistersByItsInductionVariable) {
  Kernel k(1, 5, -1);
  transforms::UnrolledLoops u = transforms::unroll_register_indexing_loops(*k.f);
  ASSERT_EQ(u.size(), 1u);
  ASSERT_TRUE(u.count(the_loop(k)));
  const ir::Block& iterations = *u.at(the_loop(k)).block;
  EXPECT_EQ(iterations.parent_op, the_loop(k));
  EXPECT_EQ(count(iterations, OpCode::For), 0);
  EXPECT_EQ(count(iterations, OpCode::Store), 4);
  EXPECT_EQ(count(iterations, OpCode::Load), 4);
  // Each iteration's index and stored value are constants: 1..4 and 3..12.
  std::vector<int64_t> indices, values;
  for (auto& op : iterations.ops) {
    if (op->code != OpCode::Store) continue;
    values.push_back(ir::constant_int(op->operands[0]));
    indices.push_back(ir::constant_int(op->operands[1]->def->operands[1]));
  }
  EXPECT_EQ(indices, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(values, (std::vector<int64_t>{3, 6, 9, 12}));
  // The loop's result is the last iteration's sum: ((0 + load) + load) + load) + load.
  const std::vector<Value*>& results = u.at(the_loop(k)).results;
  ASSERT_EQ(results.size(), 1u);
  int adds = 0;
  const Value* v = results[0];
  for (; v->def && v->def->code == OpCode::Add; v = v->def->operands[0]) {
    EXPECT_EQ(v->def->operands[1]->def->code, OpCode::Load);
    ++adds;
  }
  EXPECT_EQ(adds, 4);
  ASSERT_TRUE(ir::is_constant(v));  // the initial value
  EXPECT_EQ(ir::constant_int(v), 0);
}

TEST(UnrollLoops, LeavesOtherLoopsAlone) {
  EXPECT_EQ(transforms::unroll_register_indexing_loops(*Kernel(0, 8, 1).f).size(), 0u);   // unroll 1 asked
  EXPECT_EQ(transforms::unroll_register_indexing_loops(*Kernel(0, 8, 4).f).size(), 0u);   // a partial unroll
  EXPECT_EQ(transforms::unroll_register_indexing_loops(*Kernel(0, 8, -1, false).f).size(), 0u);  // index not the iv
  EXPECT_EQ(transforms::unroll_register_indexing_loops(*Kernel(0, 8, -1, true, true).f).size(), 0u);  // smem in body
  // The budget: 8 trips of a 7-op body (constant 3, ptr_add, mul, store, load, add, yield).
  EXPECT_EQ(transforms::unroll_register_indexing_loops(*Kernel(0, 8, -1).f, 8 * 7 - 1).size(), 0u);
  EXPECT_EQ(transforms::unroll_register_indexing_loops(*Kernel(0, 8, -1).f, 8 * 7).size(), 1u);
}

TEST(UnrollLoops, TheBudgetCountsANestedLoopAsItsIterations) {
  // for i in [0, 4) (unroll full): base = i * 8; for j in [0, 8) (unroll full): frag[base + j] = i
  ir::Module m;
  ir::Function* f = m.add_function("nested", ir::FunctionKind::Kernel);
  ir::Builder b(f->body.get());
  Value* frag = b.local_array(ir::i32(), 32, 4);
  ir::Op* outer = b.create_for(b.const_int(ir::i32(), 0), b.const_int(ir::i32(), 4), b.const_int(ir::i32(), 1), {}, -1);
  b.set_block(outer->region_block(0));
  Value* i = outer->region_block(0)->args[0].get();
  Value* base = b.binary(OpCode::Mul, i, b.const_int(ir::i32(), 8));
  ir::Op* inner = b.create_for(b.const_int(ir::i32(), 0), b.const_int(ir::i32(), 8), b.const_int(ir::i32(), 1), {}, -1);
  b.set_block(inner->region_block(0));
  b.store(i, b.ptr_add(frag, b.binary(OpCode::Add, base, inner->region_block(0)->args[0].get())));
  b.yield({});
  b.set_block(outer->region_block(0));
  b.yield({});
  b.set_block(f->body.get());
  b.ret({});
  ir::verify_or_throw(m);
  // The inner body: add, ptr_add, store, yield (4 ops), 8 times; the outer body: constant 8, mul, 3
  // constants, the loop op, its 32 unrolled ops and the yield = 39, 4 times = 156.
  transforms::UnrolledLoops fits = transforms::unroll_register_indexing_loops(*f, 156);
  ASSERT_EQ(fits.size(), 1u);
  ASSERT_TRUE(fits.count(outer));
  EXPECT_EQ(count(*fits.at(outer).block, OpCode::For), 0);  // the inner loop unrolled with it
  EXPECT_EQ(count(*fits.at(outer).block, OpCode::Store), 32);
  // Under 156 the outer loop stays; the inner one (32 ops) is unrolled on its own.
  transforms::UnrolledLoops inner_only = transforms::unroll_register_indexing_loops(*f, 155);
  ASSERT_EQ(inner_only.size(), 1u);
  EXPECT_TRUE(inner_only.count(inner));
}

TEST(UnrollLoops, AnEmptyTripCountLeavesTheInitialValues) {
  Kernel k(5, 5, -1);
  transforms::UnrolledLoops u = transforms::unroll_register_indexing_loops(*k.f);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_TRUE(u.at(the_loop(k)).block->ops.empty());
  ASSERT_EQ(u.at(the_loop(k)).results.size(), 1u);
  EXPECT_EQ(u.at(the_loop(k)).results[0], the_loop(k)->operands[3]);  // the initial value itself
}

}  // namespace
