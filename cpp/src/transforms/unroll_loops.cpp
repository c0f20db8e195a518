#include "transforms/unroll_loops.h"

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/builder.h"
#include "ir/scalar_semantics.h"

namespace opencute::transforms {
namespace {

using ir::Block;
using ir::Op;
using ir::OpCode;
using ir::Value;

bool to_unroll(const Op& loop, int64_t max_unrolled_ops, std::vector<int64_t>* ivs);

// The ops of `b` (nested regions included) once the loops in it to unroll are unrolled; any count
// past `limit` is as good as another.
int64_t unrolled_ops(const Block& b, int64_t limit) {
  int64_t n = 0;
  for (auto& op : b.ops) {
    if (n > limit) break;
    ++n;
    std::vector<int64_t> ivs;
    if (op->code == OpCode::For && to_unroll(*op, limit, &ivs)) {
      n += int64_t(ivs.size()) * unrolled_ops(*op->region_block(0), limit);
      continue;
    }
    for (auto& r : op->regions) n += unrolled_ops(*r.block, limit);
  }
  return n;
}

bool allocates_shared_memory(const Block& b) {
  for (auto& op : b.ops) {
    if (op->code == OpCode::SmemAlloc) return true;
    for (auto& r : op->regions)
      if (allocates_shared_memory(*r.block)) return true;
  }
  return false;
}

// Whether an index into a register array in `b` depends on a value of `derived` (the loop's
// induction variable and what the body computes from it); extends `derived` as it goes.
bool indexes_registers_by(const Block& b, std::unordered_set<const Value*>* derived) {
  for (auto& op : b.ops) {
    if (op->code == OpCode::PtrAdd && op->operands[0]->type->space == ir::AddrSpace::Rmem &&
        derived->count(op->operands[1]))
      return true;
    bool from_iv = false;
    for (const Value* v : op->operands) from_iv = from_iv || derived->count(v);
    if (from_iv)
      for (auto& r : op->results) derived->insert(r.get());
    for (auto& r : op->regions)
      if (indexes_registers_by(*r.block, derived)) return true;
  }
  return false;
}

ir::Scalar scalar_of(const Value* v) {
  return v->type->is_float() ? ir::Scalar::of_float(ir::constant_float(v)) : ir::Scalar::of_int(ir::constant_int(v));
}

// The induction variable's values, as the lowered loop runs them (iv < ub for a positive step,
// iv > ub otherwise, the addition wrapping in the iv's type); false past `max_trips`.
bool trip_values(const Op& loop, int64_t max_trips, std::vector<int64_t>* out) {
  ir::Type t = loop.operands[0]->type;
  ir::Scalar iv = scalar_of(loop.operands[0]), ub = scalar_of(loop.operands[1]), step = scalar_of(loop.operands[2]);
  if (step.i == 0) return false;
  const bool up = ir::eval_cmp(ir::CmpPredicate::Gt, t, step, ir::Scalar::of_int(0));
  while (ir::eval_cmp(up ? ir::CmpPredicate::Lt : ir::CmpPredicate::Gt, t, iv, ub)) {
    if (int64_t(out->size()) >= max_trips) return false;
    out->push_back(iv.i);
    if (!ir::eval_binary(OpCode::Add, t, iv, step, &iv, nullptr)) return false;
  }
  return true;
}

// The induction variable's values when the loop is to be unrolled; false otherwise.
bool to_unroll(const Op& loop, int64_t max_unrolled_ops, std::vector<int64_t>* ivs) {
  if (loop.code != OpCode::For || loop.int_attr != -1 || loop.operands.size() < 3) return false;
  for (int i = 0; i < 3; ++i)
    if (!ir::is_constant(loop.operands[i])) return false;
  const Block& body = *loop.region_block(0);
  const Op* terminator = body.terminator();
  if (body.args.size() != loop.operands.size() - 2 || !terminator || terminator->code != OpCode::Yield ||
      terminator->operands.size() != loop.operands.size() - 3)
    return false;
  std::unordered_set<const Value*> derived{body.args[0].get()};
  if (!indexes_registers_by(body, &derived) || allocates_shared_memory(body)) return false;
  const int64_t body_ops = unrolled_ops(body, max_unrolled_ops);
  if (body_ops > max_unrolled_ops) return false;
  return trip_values(loop, max_unrolled_ops / (body_ops > 0 ? body_ops : 1), ivs);
}

bool folds_through_builder(OpCode c) {
  switch (c) {
    case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem: case OpCode::FloorDiv:
    case OpCode::Min: case OpCode::Max: case OpCode::Pow: case OpCode::And: case OpCode::Or: case OpCode::Xor:
    case OpCode::Shl: case OpCode::Shr: case OpCode::Neg: case OpCode::Not: case OpCode::Abs: case OpCode::Cmp:
    case OpCode::Cast: case OpCode::Bitcast: case OpCode::Math:
      return true;
    default:
      return false;
  }
}

// Copies ops into the builder's block with their operands renamed through `map`: a loop to unroll
// becomes its iterations, an op whose operands all became constants is folded by the builder, a
// select or `if` on a constant keeps one side, anything else is cloned with its attributes and
// regions.
class Replayer {
 public:
  Replayer(Block* into, int64_t max_unrolled_ops) : b_(into), max_unrolled_ops_(max_unrolled_ops) {}

  Value* mapped(Value* v) const {
    auto it = map_.find(v);
    return it == map_.end() ? v : it->second;
  }
  // The loop's iterations; returns its results (the last iteration's yielded values).
  std::vector<Value*> unroll(const Op& loop, const std::vector<int64_t>& ivs) {
    unroll(loop, loop.operands, ivs);
    std::vector<Value*> results;
    for (auto& r : loop.results) results.push_back(mapped(r.get()));
    return results;
  }

  // Replays the block's ops; returns its terminator (not replayed unless `with_terminator`).
  const Op* replay_block(const Block& src, bool with_terminator) {
    for (auto& up : src.ops) {
      const Op& op = *up;
      if (ir::is_terminator(op.code) && !with_terminator) return &op;
      replay(op);
    }
    return nullptr;
  }

 private:
  void replay(const Op& op) {
    b_.set_location(op.file, op.line);
    std::vector<Value*> in;
    bool all_constant = true;
    for (Value* v : op.operands) {
      in.push_back(mapped(v));
      all_constant = all_constant && in.back()->type->is_scalar() && ir::is_constant(in.back());
    }
    if (folds_through_builder(op.code) && all_constant && op.result()->type->is_scalar()) {
      map_[op.result()] = fold(op, in);
      return;
    }
    if (op.code == OpCode::Select && ir::is_constant(in[0])) {
      map_[op.result()] = ir::constant_int(in[0]) ? in[1] : in[2];
      return;
    }
    std::vector<int64_t> ivs;
    if (to_unroll(op, max_unrolled_ops_, &ivs)) {
      unroll(op, in, ivs);
      return;
    }
    if (op.code == OpCode::If && ir::is_constant(in[0])) {
      const Op* yield = replay_block(*op.region_block(ir::constant_int(in[0]) ? 0 : 1), false);
      if (!yield && !op.results.empty()) throw std::logic_error("an if region without its yield");
      for (size_t i = 0; i < op.results.size(); ++i) map_[op.result(int(i))] = mapped(yield->operands[i]);
      return;
    }
    clone(op, in);
  }

  void unroll(const Op& loop, const std::vector<Value*>& in, const std::vector<int64_t>& ivs) {
    const Block& body = *loop.region_block(0);
    std::vector<Value*> carried(in.begin() + 3, in.end());
    for (int64_t iv : ivs) {
      b_.set_location(loop.file, loop.line);
      map_[body.args[0].get()] = b_.const_int(body.args[0]->type, iv);
      for (size_t i = 0; i < carried.size(); ++i) map_[body.args[i + 1].get()] = carried[i];
      const Op* yield = replay_block(body, false);
      for (size_t i = 0; i < carried.size(); ++i) carried[i] = mapped(yield->operands[i]);
    }
    for (size_t i = 0; i < loop.results.size(); ++i) map_[loop.result(int(i))] = carried[i];
  }

  Value* fold(const Op& op, const std::vector<Value*>& in) {
    switch (op.code) {
      case OpCode::Neg: case OpCode::Not: case OpCode::Abs: return b_.unary(op.code, in[0]);
      case OpCode::Cmp: return b_.cmp(ir::CmpPredicate(op.int_attr), in[0], in[1]);
      case OpCode::Cast: return b_.cast(in[0], op.result()->type);
      case OpCode::Bitcast: return b_.bitcast(in[0], op.result()->type);
      case OpCode::Math: return b_.math(op.str_attr, in);
      default: return b_.binary(op.code, in[0], in[1]);
    }
  }

  void clone(const Op& op, const std::vector<Value*>& in) {
    std::vector<ir::Type> types;
    for (auto& r : op.results) types.push_back(r->type);
    Op* c = b_.create(op.code, in, types, int(op.regions.size()));
    c->int_attr = op.int_attr;
    c->float_attr = op.float_attr;
    c->str_attr = op.str_attr;
    c->ints = op.ints;
    for (size_t i = 0; i < op.results.size(); ++i) map_[op.result(int(i))] = c->result(int(i));
    Block* outer = b_.block();
    for (size_t i = 0; i < op.regions.size(); ++i) {
      const Block& src = *op.region_block(int(i));
      Block* dst = c->region_block(int(i));
      for (auto& a : src.args) map_[a.get()] = dst->add_arg(a->type);
      b_.set_block(dst);
      replay_block(src, true);
    }
    b_.set_block(outer);
  }

  ir::Builder b_;
  int64_t max_unrolled_ops_;
  std::unordered_map<const Value*, Value*> map_;
};

}  // namespace

namespace {

void find_loops(const Block& b, int64_t max_unrolled_ops, UnrolledLoops* out) {
  for (auto& op : b.ops) {
    std::vector<int64_t> ivs;
    if (to_unroll(*op, max_unrolled_ops, &ivs)) {
      UnrolledLoop& u = (*out)[op.get()];
      u.block = std::make_unique<Block>();
      u.block->parent_op = op.get();
      u.results = Replayer(u.block.get(), max_unrolled_ops).unroll(*op, ivs);
      continue;  // loops nested in it were unrolled with it
    }
    for (auto& r : op->regions) find_loops(*r.block, max_unrolled_ops, out);
  }
}

}  // namespace

UnrolledLoops unroll_register_indexing_loops(const ir::Function& f, int64_t max_unrolled_ops) {
  UnrolledLoops out;
  find_loops(*f.body, max_unrolled_ops, &out);
  return out;
}

}  // namespace opencute::transforms
