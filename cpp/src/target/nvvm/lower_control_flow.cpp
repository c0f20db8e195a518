// NVVM lowering of the structured control flow: For, If and While become basic blocks with phis.
//   * for: head (phis of the induction variable and the carried values, the exit test), body,
//     latch; it runs while iv < ub for a positive step and while iv > ub otherwise, as the host
//     interpreter does (a dynamic step picks the comparison at run time). The unroll attribute
//     becomes llvm.loop metadata.
//   * if: then / else / end, results as phis; an else without results and ops is skipped.
//   * while: before (phis, condition), after (the forwarded values need no phis: the condition
//     block dominates both successors).
#include <cstdint>
#include <string>
#include <vector>

#include "ir/scalar_semantics.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

using ir::Block;
using ir::CmpPredicate;
using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::Value;

namespace {

std::string loop_metadata(KernelLowering& k, int64_t unroll) {
  std::string hint;
  if (unroll > 1) hint = "!{!\"llvm.loop.unroll.count\", i32 " + std::to_string(unroll) + "}";
  else if (unroll == -1) hint = "!{!\"llvm.loop.unroll.full\"}";
  else if (unroll == 1) hint = "!{!\"llvm.loop.unroll.disable\"}";  // like `#pragma unroll 1`
  else return "";
  int h = k.module().add_metadata(hint);
  int id = k.module().next_md++;
  k.module().metadata.emplace_back(
      id, "!" + std::to_string(id) + " = distinct !{!" + std::to_string(id) + ", !" + std::to_string(h) + "}");
  return ", !llvm.loop !" + std::to_string(id);
}

const Op* expect_terminator(KernelLowering& k, const Op& op, const Op* term, OpCode code, size_t count,
                            const char* what) {
  if (!term || term->code != code || term->operands.size() != count)
    k.error(op, std::string("region must end with ") + what + " of " + std::to_string(count) + " values");
  return term;
}

void lower_for(const Op& op, KernelLowering& k) {
  if (const transforms::UnrolledLoop* unrolled = k.unrolled_loop(op)) {
    k.lower_block(*unrolled->block);
    if (op.results.size() != unrolled->results.size()) k.error(op, "result count differs from the iter values");
    for (size_t i = 0; i < unrolled->results.size(); ++i) k.define(op, int(i), k.operand(unrolled->results[i]));
    return;
  }
  Type it = op.operands[0]->type;
  const std::string T = llvm_type(it);
  const bool sgn = it->is_signed;
  std::string lb = k.operand(op.operands[0]), ub = k.operand(op.operands[1]), step = k.operand(op.operands[2]);
  std::vector<std::string> inits;
  for (size_t i = 3; i < op.operands.size(); ++i) inits.push_back(k.operand(op.operands[i]));
  const Block* body = op.region_block(0);
  if (body->args.size() != inits.size() + 1)
    k.error(op, "body arguments must be the induction variable and iter values");

  std::string prefix = k.new_label_prefix("for");
  std::string head = prefix + ".head", body_label = prefix + ".body", exit = prefix + ".exit";
  // The loop runs while iv < ub for a positive step and while iv > ub otherwise, like the
  // host interpreter; a dynamic step picks the comparison at run time.
  int direction = 0;
  std::string up;
  if (ir::is_constant(op.operands[2])) {
    direction = ir::eval_cmp(CmpPredicate::Gt, it, ir::Scalar::of_int(ir::constant_int(op.operands[2])),
                             ir::Scalar::of_int(0)) ? 1 : -1;
  } else {
    up = k.emit_def(std::string("icmp ") + (sgn ? "sgt " : "ugt ") + T + " " + step + ", " + int_literal(it->width, 0));
  }
  std::string entry_label = k.label();
  k.emit_line("br label %" + head);

  size_t head_block = k.start_block(head);
  std::string iv = k.fresh();
  std::vector<std::string> carried;
  for (size_t i = 0; i < inits.size(); ++i) carried.push_back(k.fresh());
  k.bind(body->args[0].get(), iv);
  for (size_t i = 0; i < carried.size(); ++i) k.bind(body->args[i + 1].get(), carried[i]);
  std::string cond;
  std::string lt = std::string("icmp ") + (sgn ? "slt " : "ult ") + T + " " + iv + ", " + ub;
  std::string gt = std::string("icmp ") + (sgn ? "sgt " : "ugt ") + T + " " + iv + ", " + ub;
  if (direction > 0) cond = k.emit_def(lt);
  else if (direction < 0) cond = k.emit_def(gt);
  else cond = k.emit_def("select i1 " + up + ", i1 " + k.emit_def(lt) + ", i1 " + k.emit_def(gt));
  k.emit_line("br i1 " + cond + ", label %" + body_label + ", label %" + exit);

  k.start_block(body_label);
  const Op* y = expect_terminator(k, op, k.lower_block(*body), OpCode::Yield, carried.size(), "yield");
  std::vector<std::string> next;
  for (const Value* v : y->operands) next.push_back(k.operand(v));
  std::string iv_next = k.emit_def("add " + T + " " + iv + ", " + step);
  std::string latch = k.label();
  k.emit_line("br label %" + head + loop_metadata(k, op.int_attr));

  std::vector<std::string> phis;
  phis.push_back("  " + iv + " = phi " + T + " [" + lb + ", %" + entry_label + "], [" + iv_next + ", %" + latch + "]");
  for (size_t i = 0; i < carried.size(); ++i) {
    std::string ct = llvm_type(body->args[i + 1]->type);
    phis.push_back("  " + carried[i] + " = phi " + ct + " [" + inits[i] + ", %" + entry_label + "], [" + next[i] +
                   ", %" + latch + "]");
  }
  k.prepend_lines(head_block, phis);

  k.start_block(exit);
  if (op.results.size() != carried.size()) k.error(op, "result count differs from the iter values");
  for (size_t i = 0; i < carried.size(); ++i) k.define(op, int(i), carried[i]);
}

void lower_if(const Op& op, KernelLowering& k) {
  std::string c = k.operand(op.operands[0]);
  std::string prefix = k.new_label_prefix("if");
  std::string then_label = prefix + ".then", else_label = prefix + ".else", end = prefix + ".end";
  const Block* else_block = op.region_block(1);
  const bool trivial_else = op.results.empty() && else_block->ops.size() == 1 && else_block->terminator();
  k.emit_line("br i1 " + c + ", label %" + then_label + ", label %" + (trivial_else ? end : else_label));
  size_t n = op.results.size();

  k.start_block(then_label);
  const Op* ty = expect_terminator(k, op, k.lower_block(*op.region_block(0)), OpCode::Yield, n, "yield");
  std::vector<std::string> then_vals;
  for (const Value* v : ty->operands) then_vals.push_back(k.operand(v));
  std::string then_end = k.label();
  k.emit_line("br label %" + end);

  std::vector<std::string> else_vals;
  std::string else_end;
  if (!trivial_else) {
    k.start_block(else_label);
    const Op* ey = expect_terminator(k, op, k.lower_block(*else_block), OpCode::Yield, n, "yield");
    for (const Value* v : ey->operands) else_vals.push_back(k.operand(v));
    else_end = k.label();
    k.emit_line("br label %" + end);
  }

  k.start_block(end);
  for (size_t i = 0; i < n; ++i)
    k.define(op, int(i),
             k.emit_def("phi " + llvm_type(op.result(int(i))->type) + " [" + then_vals[i] + ", %" + then_end + "], [" +
                        else_vals[i] + ", %" + else_end + "]"));
}

void lower_while(const Op& op, KernelLowering& k) {
  std::vector<std::string> inits;
  for (const Value* v : op.operands) inits.push_back(k.operand(v));
  const Block* before = op.region_block(0);
  const Block* after = op.region_block(1);
  if (before->args.size() != inits.size()) k.error(op, "'before' arguments must match the carried values");
  std::string prefix = k.new_label_prefix("while");
  std::string before_label = prefix + ".before", after_label = prefix + ".after", exit = prefix + ".exit";
  std::string entry_label = k.label();
  k.emit_line("br label %" + before_label);

  size_t before_block = k.start_block(before_label);
  std::vector<std::string> carried;
  for (size_t i = 0; i < inits.size(); ++i) {
    carried.push_back(k.fresh());
    k.bind(before->args[i].get(), carried[i]);
  }
  const Op* c = k.lower_block(*before);
  if (!c || c->code != OpCode::Condition || c->operands.empty()) k.error(op, "'before' region must end with condition");
  std::string cond = k.operand(c->operands[0]);
  std::vector<std::string> forwarded;
  for (size_t i = 1; i < c->operands.size(); ++i) forwarded.push_back(k.operand(c->operands[i]));
  k.emit_line("br i1 " + cond + ", label %" + after_label + ", label %" + exit);

  k.start_block(after_label);
  if (after->args.size() != forwarded.size()) k.error(op, "'after' arguments must match the forwarded values");
  // The condition block dominates both successors, so forwarded values need no phis.
  for (size_t i = 0; i < forwarded.size(); ++i) k.bind(after->args[i].get(), forwarded[i]);
  const Op* y = expect_terminator(k, op, k.lower_block(*after), OpCode::Yield, inits.size(), "yield");
  std::vector<std::string> next;
  for (const Value* v : y->operands) next.push_back(k.operand(v));
  std::string latch = k.label();
  k.emit_line("br label %" + before_label);

  std::vector<std::string> phis;
  for (size_t i = 0; i < carried.size(); ++i)
    phis.push_back("  " + carried[i] + " = phi " + llvm_type(before->args[i]->type) + " [" + inits[i] + ", %" +
                   entry_label + "], [" + next[i] + ", %" + latch + "]");
  k.prepend_lines(before_block, phis);

  k.start_block(exit);
  if (op.results.size() != forwarded.size()) k.error(op, "result count differs from the forwarded values");
  for (size_t i = 0; i < forwarded.size(); ++i) k.define(op, int(i), forwarded[i]);
}

}  // namespace

void register_control_flow_lowerings(LoweringTable& t) {
  t.add(OpCode::For, lower_for);
  t.add(OpCode::If, lower_if);
  t.add(OpCode::While, lower_while);
}

}  // namespace opencute::target
