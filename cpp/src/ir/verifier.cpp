#include "ir/verifier.h"

#include "ir/async_attributes.h"

#include <stdexcept>

#include "ir/arch_attributes.h"

namespace opencute::ir {
namespace {

class Verifier {
 public:
  std::vector<std::string> errors;

  void function(const Function& f) {
    fn_ = &f;
    const Op* term = f.body->terminator();
    if (!term || term->code != OpCode::Return) fail(nullptr, "function body must end with return");
    else if (term->operands.size() != f.result_types.size()) fail(term, "return value count differs from the function's results");
    else
      for (size_t i = 0; i < term->operands.size(); ++i)
        if (term->operands[i]->type != f.result_types[i]) fail(term, "return value type differs from the function's result type");
    block(*f.body);
  }

 private:
  void fail(const Op* op, const std::string& msg) {
    std::string where = "@" + fn_->name;
    if (op) where += std::string(" (") + opcode_name(op->code) + ")";
    errors.push_back(where + ": " + msg);
  }

  void block(const Block& b) {
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const Op& op = *b.ops[i];
      if (is_terminator(op.code) && i + 1 != b.ops.size()) fail(&op, "terminator in the middle of a block");
      for (Value* v : op.operands)
        if (!b.is_within(v->owner)) fail(&op, "operand used outside the region that defines it");
      check(op);
      for (auto& r : op.regions) block(*r.block);
    }
  }

  void expect(const Op& op, bool cond, const std::string& msg) {
    if (!cond) fail(&op, msg);
  }

  // The SM100 tensor-memory / tcgen05 family (ir.h).
  void verify_sm100_op(const Op& op) {
    const auto& o = op.operands;
    const bool group_ok = op.int_attr == 1 || op.int_attr == 2;
    auto address = [](const Value* v) { return v->type == i32(); };
    switch (op.code) {
      case OpCode::TmemAlloc:
        expect(op, group_ok && o.size() == 2 && o[0]->type->is_pointer() && o[1]->type == i32() && op.results.empty(),
               "tcgen05.alloc takes (shared pointer, i32 columns) and a CTA group of 1 or 2");
        break;
      case OpCode::TmemDealloc:
        expect(op, group_ok && o.size() == 2 && address(o[0]) && o[1]->type == i32() && op.results.empty(),
               "tcgen05.dealloc takes (i32 address, i32 columns) and a CTA group of 1 or 2");
        break;
      case OpCode::TmemRelinquish:
        expect(op, group_ok && o.empty() && op.results.empty(), "tcgen05.relinquish_alloc_permit takes no operands");
        break;
      case OpCode::Tcgen05Mma: {
        const bool scaled = !op.ints.empty() && op.ints[0] >= 4 && op.ints[0] <= 6;
        const bool plain = !op.ints.empty() && op.ints[0] >= 0 && op.ints[0] <= 3;
        expect(op, group_ok && (plain || scaled) && o.size() == (scaled ? 7u : 5u) &&
                       op.ints.size() == (scaled ? 3u : 2u) && address(o[0]) &&
                       o[1]->type == (op.ints[1] ? i32() : i64()) && o[2]->type == i64() && o[3]->type == i32() &&
                       o[4]->type == bool_type() && op.results.empty() &&
                       (!scaled || (address(o[5]) && address(o[6]) &&
                                    (op.ints[2] == 1 || op.ints[2] == 2 || op.ints[2] == 4))),
               "tcgen05.mma takes (D address i32, A descriptor i64 or address i32, B descriptor i64, idesc i32, "
               "enable input D i1) and {kind, A from tensor memory}");
        break;
      }
      case OpCode::Tcgen05Commit:
        expect(op, group_ok && (o.size() == 1 || (o.size() == 2 && o[1]->type == int_type(16, false))) &&
                       o[0]->type->is_pointer() && op.results.empty(),
               "tcgen05.commit takes (mbarrier pointer[, u16 CTA mask])");
        break;
      case OpCode::Tcgen05Ld: case OpCode::Tcgen05St: {
        bool ld = op.code == OpCode::Tcgen05Ld;
        bool ok = op.int_attr >= 0 && op.int_attr <= 4 && op.ints.size() == 3 && !o.empty() && address(o[0]);
        size_t n = ld ? op.results.size() : o.size() - 1;
        ok = ok && n >= 1 && (ld ? o.size() == 1 : op.results.empty()) &&
             int(n) == tcgen05_ldst_registers(Tcgen05Shape(op.int_attr), op.ints[0]);
        for (size_t k = 0; ok && k < n; ++k) ok = (ld ? op.results[k]->type : o[k + 1]->type) == i32();
        expect(op, ok, std::string(opcode_name(op.code)) + " moves i32 registers at an i32 address, with a shape, "
                                                             "repetition count, packing and split-off");
        break;
      }
      case OpCode::Tcgen05Wait: case OpCode::Tcgen05Fence:
        expect(op, o.empty() && op.results.empty() && (op.int_attr == 0 || op.int_attr == 1),
               std::string(opcode_name(op.code)) + " takes no operands and a kind of 0 or 1");
        break;
      case OpCode::Tcgen05Cp:
        expect(op, group_ok && o.size() == 2 && address(o[0]) && o[1]->type == i64() && op.ints.size() == 1 &&
                       op.results.empty(),
               "tcgen05.cp takes (i32 address, i64 shared-memory descriptor) and a shape");
        break;
      default:
        break;
    }
  }

  // The Hopper warp / cluster family (ir.h).
  void verify_sm90_warp_op(const Op& op) {
    const auto& o = op.operands;
    const std::string name = opcode_name(op.code);
    auto one_result = [&](Type t) { return op.results.size() == 1 && (!t || op.results[0]->type == t); };
    switch (op.code) {
      case OpCode::ClusterSreg:
        expect(op, o.empty() && one_result(i32()) && op.int_attr >= 0 &&
                       op.int_attr <= int64_t(ClusterSregKind::ClusterSize) && op.ints.size() == 1 &&
                       op.ints[0] >= 0 && op.ints[0] < 3,
               "cluster_sreg yields i32 and names a register kind and a dimension");
        break;
      case OpCode::ClusterBarrier:
        expect(op, o.empty() && op.results.empty() && op.int_attr >= 0 &&
                       op.int_attr <= int64_t(ClusterBarrierKind::Wait) && op.ints.size() == 1,
               "cluster_barrier takes no operands and names its kind and alignment");
        break;
      case OpCode::MapSharedRank:
        expect(op, o.size() == 2 && o[0]->type->is_pointer() && o[1]->type == i32() && one_result(nullptr) &&
                       op.results[0]->type->is_pointer() && op.results[0]->type->space == AddrSpace::Generic &&
                       op.results[0]->type->element == o[0]->type->element,
               "map_shared_rank takes (pointer, i32 rank) and yields a generic pointer to the same element type");
        break;
      case OpCode::ElectOne:
        expect(op, o.size() == 1 && o[0]->type == i32() && one_result(bool_type()), "elect_one takes an i32 mask, yields i1");
        break;
      case OpCode::SyncWarp:
        expect(op, o.size() == 1 && o[0]->type == i32() && op.results.empty(), "sync_warp takes an i32 mask");
        break;
      case OpCode::SetMaxNReg:
        expect(op, o.empty() && op.results.empty() && op.int_attr >= 24 && op.int_attr <= 256 && op.int_attr % 8 == 0 &&
                       op.ints.size() == 1,
               "setmaxnreg takes a register count in [24, 256], a multiple of 8");
        break;
      case OpCode::Prmt:
        expect(op, o.size() == 3 && o[0]->type == i32() && o[1]->type == i32() && o[2]->type == i32() &&
                       one_result(i32()),
               "prmt takes three i32 and yields i32");
        break;
      case OpCode::WarpUniform:
        expect(op, o.size() == 1 && one_result(o[0]->type) && o[0]->type->is_scalar(),
               "warp_uniform yields its scalar operand");
        break;
      default:
        break;
    }
    expect(op, fn_->kind == FunctionKind::Kernel, name + " is only valid in a kernel");
  }

  void yield_matches(const Op& op, const Block* b, size_t skip_first) {
    const Op* t = b->terminator();
    if (!t || (t->code != OpCode::Yield && t->code != OpCode::Condition)) {
      fail(&op, "region must end with yield");
      return;
    }
    size_t n = t->operands.size() - skip_first;
    if (n != op.results.size()) {
      fail(&op, "region yields " + std::to_string(n) + " values but the op has " + std::to_string(op.results.size()) + " results");
      return;
    }
    for (size_t i = 0; i < n; ++i)
      if (t->operands[i + skip_first]->type != op.results[i]->type) fail(&op, "yielded type differs from result type");
  }

  void check(const Op& op) {
    const auto& o = op.operands;
    switch (op.code) {
      case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
      case OpCode::FloorDiv: case OpCode::Min: case OpCode::Max: case OpCode::Pow:
        expect(op, o.size() == 2 && o[0]->type == o[1]->type && op.results[0]->type == o[0]->type, "binary op type mismatch");
        break;
      case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr:
        expect(op, o.size() == 2 && o[0]->type == o[1]->type && scalar_of(o[0]->type)->is_int(), "bit op needs two integers of one type");
        break;
      case OpCode::Cmp:
        expect(op, o.size() == 2 && o[0]->type == o[1]->type && op.results[0]->type->is_bool(), "cmp type mismatch");
        break;
      case OpCode::Select:
        expect(op, o.size() == 3 && o[0]->type->is_bool() && o[1]->type == o[2]->type, "select type mismatch");
        break;
      case OpCode::Load:
        expect(op, o.size() == 1 && o[0]->type->is_pointer(), "load needs a pointer");
        break;
      case OpCode::Store:
        expect(op, o.size() == 2 && o[1]->type->is_pointer() && scalar_of(o[0]->type) == scalar_of(o[1]->type->element),
               "store type mismatch");
        break;
      case OpCode::PtrAdd:
        expect(op, o.size() == 2 && o[0]->type->is_pointer() && o[1]->type->is_int(), "ptr_add needs (pointer, integer)");
        break;
      case OpCode::Launch:
        expect(op, fn_->kind == FunctionKind::Host, "launch is only valid in host code");
        expect(op, o.size() >= launch_first_arg(op), "launch needs grid, block, smem, stream and cluster operands");
        expect(op, !(op.int_attr & (kLaunchCompletionEvent | kLaunchProgrammaticEvent)) || op.ints.size() == 3,
               "a launch with events needs its three event attributes");
        break;
      case OpCode::ThreadIdx: case OpCode::BlockIdx: case OpCode::BlockDim: case OpCode::GridDim:
      case OpCode::LaneIdx: case OpCode::WarpIdx: case OpCode::Barrier: case OpCode::DynSmemSize:
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      case OpCode::InlineAsm:
        expect(op, op.results.size() <= 1, "inline_asm has at most one result");
        expect(op, fn_->kind == FunctionKind::Kernel, "inline_asm is only valid in a kernel");
        break;
      case OpCode::GridDepControl:
        expect(op, o.empty() && op.results.empty(), "griddepcontrol has no operands and no results");
        expect(op, op.int_attr == int64_t(GridDepControlKind::Wait) ||
                       op.int_attr == int64_t(GridDepControlKind::LaunchDependents), "unknown griddepcontrol kind");
        expect(op, fn_->kind == FunctionKind::Kernel, "griddepcontrol is only valid in a kernel");
        break;
      case OpCode::NamedBarrier:
        expect(op, o.size() == 2 && o[0]->type == i32() && o[1]->type == i32() && op.results.empty(),
               "named_barrier takes (id, count) as i32");
        expect(op, op.int_attr == int64_t(NamedBarrierKind::Sync) || op.int_attr == int64_t(NamedBarrierKind::Arrive),
               "unknown named barrier kind");
        expect(op, fn_->kind == FunctionKind::Kernel, "named_barrier is only valid in a kernel");
        break;
      case OpCode::Shuffle: {
        bool ok = o.size() == 4 && op.results.size() == 1 && op.results[0]->type == i32();
        for (const Value* v : o) ok = ok && v->type == i32();
        expect(op, ok, "shuffle takes (value, offset, clamp, mask) as i32 and yields i32");
        expect(op, op.int_attr >= 0 && op.int_attr <= int64_t(ShuffleKind::Bfly), "unknown shuffle kind");
        expect(op, fn_->kind == FunctionKind::Kernel, "shuffle is only valid in a kernel");
        break;
      }
      case OpCode::Vote: {
        Type want = VoteKind(op.int_attr) == VoteKind::Ballot ? i32() : bool_type();
        expect(op, o.size() == 2 && o[0]->type->is_bool() && o[1]->type == i32() && op.results.size() == 1 &&
                       op.results[0]->type == want, "vote takes (i1 predicate, i32 mask) and yields i32 (ballot) or i1");
        expect(op, op.int_attr >= 0 && op.int_attr <= int64_t(VoteKind::Uni), "unknown vote kind");
        expect(op, fn_->kind == FunctionKind::Kernel, "vote is only valid in a kernel");
        break;
      }
      case OpCode::WarpRedux: {
        const bool f32 = !o.empty() && o[0]->type == ir::f32();
        bool ok = o.size() == 2 && op.results.size() == 1 && op.results[0]->type == o[0]->type &&
                  o[1]->type == i32() && op.ints.size() == 2 &&
                  (f32 || (o[0]->type->is_int() && !o[0]->type->is_bool() && o[0]->type->width == 32));
        ok = ok && op.int_attr >= 0 && op.int_attr <= int64_t(ReduxKind::Xor);
        if (ok && f32) ok = ReduxKind(op.int_attr) == ReduxKind::Min || ReduxKind(op.int_attr) == ReduxKind::Max;
        if (ok && !f32) ok = op.ints[0] == 0 && op.ints[1] == 0;
        expect(op, ok, "redux.sync takes (i32 | f32 value, i32 mask), yields the value's type; f32 takes min or max");
        expect(op, fn_->kind == FunctionKind::Kernel, "redux.sync is only valid in a kernel");
        break;
      }
      case OpCode::Atomic: {
        bool cas = AtomicKind(op.int_attr) == AtomicKind::Cas;
        bool ok = o.size() == (cas ? 3u : 2u) && o[0]->type->is_pointer() && op.results.size() == 1 &&
                  op.ints.size() == 2;
        for (size_t i = 1; ok && i < o.size(); ++i) ok = o[i]->type == o[0]->type->element;
        ok = ok && op.results[0]->type == o[0]->type->element;
        expect(op, ok, "atomic takes (pointer, value) or (pointer, compare, value) of the pointee type and yields it");
        expect(op, fn_->kind == FunctionKind::Kernel, "atomic is only valid in a kernel");
        break;
      }
      case OpCode::SmemAlloc: case OpCode::DynSmem: {
        Type t = op.results.empty() ? nullptr : op.results[0]->type;
        expect(op, o.empty() && t && t->is_pointer() && t->space == AddrSpace::Smem,
               std::string(opcode_name(op.code)) + " yields a shared-memory pointer");
        expect(op, op.code != OpCode::SmemAlloc || op.int_attr > 0, "smem_alloc needs a positive element count");
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      }
      case OpCode::Assert:
        expect(op, o.size() == 1 && o[0]->type->is_bool() && op.results.empty(), "assert takes one i1 condition");
        break;
      case OpCode::For: {
        expect(op, o.size() >= 3 && o[0]->type->is_int() && o[0]->type == o[1]->type && o[0]->type == o[2]->type,
               "for bounds must be integers of one type");
        const Block* body = op.region_block(0);
        expect(op, body->args.size() == o.size() - 2, "for body arguments must be the induction variable and iter values");
        for (size_t i = 3; i < o.size() && i - 2 < body->args.size(); ++i)
          expect(op, body->args[i - 2]->type == o[i]->type, "for iter value type differs from its block argument");
        yield_matches(op, body, 0);
        break;
      }
      case OpCode::If:
        expect(op, o.size() == 1 && o[0]->type->is_bool(), "if condition must be i1");
        yield_matches(op, op.region_block(0), 0);
        yield_matches(op, op.region_block(1), 0);
        break;
      case OpCode::While: {
        const Op* c = op.region_block(0)->terminator();
        expect(op, c && c->code == OpCode::Condition, "while 'before' region must end with condition");
        if (c && c->code == OpCode::Condition) yield_matches(op, op.region_block(0), 1);
        const Op* y = op.region_block(1)->terminator();
        expect(op, y && y->code == OpCode::Yield && y->operands.size() == o.size(), "while 'after' region must yield the carried values");
        if (y && y->operands.size() == o.size())
          for (size_t i = 0; i < o.size(); ++i) expect(op, y->operands[i]->type == o[i]->type, "while carried value changes type");
        break;
      }
      case OpCode::CpAsync:
        expect(op, o.size() == 3 && o[0]->type->is_pointer() && o[1]->type->is_pointer() && o[2]->type == i32() &&
                       op.results.empty() && (op.int_attr == 4 || op.int_attr == 8 || op.int_attr == 16),
               "cp_async takes (dst pointer, src pointer, i32 src bytes) and copies 4, 8 or 16 bytes");
        expect(op, fn_->kind == FunctionKind::Kernel, "cp_async is only valid in a kernel");
        break;
      case OpCode::Wgmma: {
        bool ok = op.ints.size() == 8 && !op.results.empty();
        size_t na = ok && op.ints[7] ? size_t(op.ints[0] * op.ints[2] / 128) : 1;
        ok = ok && o.size() == na + 2 + op.results.size() && o[na]->type == i64() && o[na + 1]->type->is_bool() &&
             (op.ints[7] || o[0]->type == i64());
        for (size_t i = 0; ok && i < op.results.size(); ++i) ok = o[na + 2 + i]->type == op.results[i]->type;
        expect(op, ok, "wgmma takes (A descriptor i64 | A values, B descriptor i64, scale_d i1, C values) -> D values "
                       "with {m, n, k, A kind, B kind, A major, B major, A from registers}");
        expect(op, fn_->kind == FunctionKind::Kernel, "wgmma is only valid in a kernel");
        break;
      }
      case OpCode::WgmmaFence: case OpCode::WgmmaCommit: case OpCode::WgmmaWait:
        expect(op, o.empty() && op.results.empty() && op.int_attr >= 0 && op.int_attr <= 7,
               std::string(opcode_name(op.code)) + " takes no operands (wait: 0 to 7 pending groups)");
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      case OpCode::CpAsyncCommit: case OpCode::CpAsyncWait:
        expect(op, o.empty() && op.results.empty() && op.int_attr >= 0, "cp_async_commit / cp_async_wait take no operands");
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      case OpCode::CpAsyncMbarrierArrive:
        expect(op, o.size() == 1 && o[0]->type->is_pointer() && op.results.empty() && (op.int_attr == 0 || op.int_attr == 1),
               "cp_async_mbarrier_arrive takes the mbarrier pointer");
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      case OpCode::LdMatrix: case OpCode::StMatrix: {
        bool ld = op.code == OpCode::LdMatrix;
        Type v = ld ? (op.results.size() == 1 ? op.results[0]->type : nullptr) : (o.size() == 2 ? o[1]->type : nullptr);
        bool ok = o.size() == (ld ? 1u : 2u) && o[0]->type->is_pointer() && (ld || op.results.empty()) && v &&
                  (op.int_attr == 1 || op.int_attr == 2 || op.int_attr == 4);
        const bool wide = ld && op.ints.size() > 1 && op.ints[1];  // ldmatrix .m16n16: 64 bits a matrix
        ok = ok && v->is_vector() && v->element->width * v->lanes == (wide ? 64 : 32) * op.int_attr;
        if (op.ints.size() > 2)  // ldmatrix .m8n16 .b8x16.b4x16_p64: bytes, not transposed, not m16n16
          ok = ok && ld && op.ints[2] == 4 && !op.ints[0] && !op.ints[1] && v->element->width == 8;
        expect(op, ok, std::string(opcode_name(op.code)) +
                           " moves 1, 2 or 4 matrices as a vector of 32 bits per matrix through a row pointer");
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      }
      case OpCode::MbarrierInit: case OpCode::MbarrierArrive: case OpCode::MbarrierWait: {
        const bool arrive = op.code == OpCode::MbarrierArrive, wait = op.code == OpCode::MbarrierWait;
        const bool timed = wait && op.int_attr == int64_t(MbarrierWaitKind::TryWaitTimeLimit);
        bool ok = (o.size() == 2 || ((arrive || timed) && o.size() == 3)) && o[0]->type->is_pointer() &&
                  o[0]->type->element->byte_size() == 8 && o[1]->type == i32() && (o.size() < 3 || o[2]->type == i32());
        if (arrive) ok = ok && op.int_attr >= 0 && op.int_attr <= int64_t(MbarrierArriveKind::ExpectTx);
        if (wait) {
          bool blocking = op.int_attr == int64_t(MbarrierWaitKind::Wait);
          ok = ok && op.int_attr >= 0 && op.int_attr <= int64_t(MbarrierWaitKind::TryWaitTimeLimit) &&
               (timed == (o.size() == 3)) &&
               (blocking ? op.results.empty() : op.results.size() == 1 && op.results[0]->type->is_bool());
        } else {
          ok = ok && op.results.empty();
        }
        expect(op, ok, std::string(opcode_name(op.code)) +
                           " takes (pointer to an 8-byte mbarrier, i32[, i32 peer rank or suspend-time hint]); only "
                           "try/test waits have a (boolean) result");
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      }
      case OpCode::Fence:
        expect(op, o.empty() && op.results.empty() && op.int_attr >= 0 && op.int_attr < int64_t(FenceKind::NumKinds),
               "fence takes no operands and a known fence kind");
        expect(op, fn_->kind == FunctionKind::Kernel, "fence is only valid in a kernel");
        break;
      case OpCode::TmaLoad: case OpCode::TmaStore: {
        const bool load = op.code == OpCode::TmaLoad;
        const bool mcast = load && !op.ints.empty() && op.ints[0];
        const size_t fixed = load ? 3 : 2, rank = size_t(op.int_attr);
        // ints[1] (loads): a trailing i1 predicate; the lanes where it holds issue the copy (no election).
        const bool pred = load && op.ints.size() > 1 && op.ints[1];
        bool ok = rank >= 1 && rank <= 5 && o.size() == fixed + rank + (mcast ? 1 : 0) + (pred ? 1 : 0) &&
                  op.results.empty();
        for (size_t k = 0; ok && k < fixed; ++k) ok = o[k]->type->is_pointer();
        for (size_t k = fixed; ok && k < fixed + rank; ++k) ok = o[k]->type == i32();
        if (ok && mcast) ok = o[fixed + rank]->type->is_int();
        if (ok && pred) ok = o.back()->type->is_bool();
        // ints[2] (loads): the CTA group, 1 or 2 (cta_group::2).
        if (ok && load && op.ints.size() > 2) ok = op.ints.size() == 3 && (op.ints[2] == 1 || op.ints[2] == 2);
        // ints[0] (stores): a reduce-store's TmaReduceKind.
        if (ok && !load && !op.ints.empty())
          ok = op.ints.size() == 1 && op.ints[0] > 0 && op.ints[0] < int64_t(TmaReduceKind::NumKinds);
        expect(op, ok, std::string(opcode_name(op.code)) + " takes (descriptor, shared pointer" +
                           (load ? ", mbarrier pointer" : "") + ", 1 to 5 i32 coordinates" +
                           (load ? "[, multicast mask][, i1 predicate]" : "") + ")");
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      }
      case OpCode::BulkLoad:
        expect(op, o.size() == 4 && op.results.empty() && o[0]->type->is_pointer() && o[1]->type->is_pointer() &&
                       o[2]->type->is_pointer() && o[3]->type == i32(),
               "bulk_load takes (shared pointer, global pointer, mbarrier pointer, i32 bytes)");
        expect(op, fn_->kind == FunctionKind::Kernel, "bulk_load is only valid in a kernel");
        break;
      case OpCode::BulkCommit: case OpCode::BulkWait:
        expect(op, o.empty() && op.results.empty() && op.int_attr >= 0, std::string(opcode_name(op.code)) + " takes no operands");
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      case OpCode::TmaDescOp:
        expect(op, o.size() == 1 && o[0]->type->is_pointer() && op.results.empty() &&
                       (op.int_attr == int64_t(TmaDescOpKind::Prefetch) || op.int_attr == int64_t(TmaDescOpKind::FenceAcquire)),
               "tma_desc_op takes the descriptor pointer and a known kind");
        expect(op, fn_->kind == FunctionKind::Kernel, "tma_desc_op is only valid in a kernel");
        break;
      case OpCode::TmaEncode: {
        const size_t rank = size_t(op.int_attr);
        // In host code it gives the kernel parameter (param space); a kernel encodes into a
        // generic descriptor pointer that only copy_tensormap reads.
        const bool host = fn_->kind == FunctionKind::Host;
        // An optional last int: the tensor map's data type where it is not the element's own
        // (14, CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B: 4-bit elements unpacked in shared memory).
        const bool format = op.ints.size() == 2 + rank && op.ints.back() == 14;
        bool ok = rank >= 1 && rank <= 5 && o.size() == 1 + 2 * rank && (op.ints.size() == 1 + rank || format) &&
                  op.results.size() == 1 && op.results[0]->type->is_pointer() &&
                  op.results[0]->type->space == (host ? AddrSpace::Param : AddrSpace::Generic) &&
                  (o[0]->type->is_pointer() || o[0]->type == i64());
        for (size_t k = 1; ok && k < o.size(); ++k) ok = o[k]->type == i64();
        expect(op, ok, "tma_encode takes (global pointer, rank i64 extents, rank i64 byte strides) and gives a "
                       "param-space descriptor pointer (a generic one in a kernel)");
        break;
      }
      case OpCode::ClusterSreg: case OpCode::ClusterBarrier: case OpCode::MapSharedRank: case OpCode::ElectOne:
      case OpCode::SyncWarp: case OpCode::SetMaxNReg: case OpCode::Prmt: case OpCode::WarpUniform:
        verify_sm90_warp_op(op);
        break;
      case OpCode::ClcTryCancel: {
        auto smem_ptr = [](const Value* v) {
          return v->type->is_pointer() && (v->type->space == AddrSpace::Smem || v->type->space == AddrSpace::Generic);
        };
        expect(op, o.size() == 2 && op.results.empty() && smem_ptr(o[0]) && smem_ptr(o[1]) && op.ints.size() == 1,
               "clc_try_cancel takes (response pointer, mbarrier pointer) into shared memory and a multicast flag");
        expect(op, fn_->kind == FunctionKind::Kernel, "clc_try_cancel is only valid in a kernel");
        break;
      }
      case OpCode::ClcQueryCancel:
        expect(op, o.size() == 1 && o[0]->type->is_pointer() &&
                       (o[0]->type->space == AddrSpace::Smem || o[0]->type->space == AddrSpace::Generic) &&
                       op.results.size() == 4 && op.results[0]->type == i32() && op.results[1]->type == i32() &&
                       op.results[2]->type == i32() && op.results[3]->type == bool_type(),
               "clc_query_cancel takes a response pointer into shared memory and yields (i32 x, i32 y, i32 z, i1 canceled)");
        expect(op, fn_->kind == FunctionKind::Kernel, "clc_query_cancel is only valid in a kernel");
        break;
      case OpCode::TmemAlloc: case OpCode::TmemDealloc: case OpCode::TmemRelinquish: case OpCode::Tcgen05Mma:
      case OpCode::Tcgen05Commit: case OpCode::Tcgen05Ld: case OpCode::Tcgen05St: case OpCode::Tcgen05Wait:
      case OpCode::Tcgen05Fence: case OpCode::Tcgen05Cp:
        verify_sm100_op(op);
        break;
      case OpCode::TmaDescCopy: case OpCode::TmaDescReplace: case OpCode::TmaDescCpFenceRelease: {
        bool ok = o.size() == 2 && op.results.empty() && o[0]->type->is_pointer();
        if (ok && op.code == OpCode::TmaDescCopy) ok = o[1]->type->is_pointer();
        if (ok && op.code == OpCode::TmaDescCpFenceRelease)
          ok = o[1]->type->is_pointer() && o[1]->type->space == AddrSpace::Smem && o[0]->type->space != AddrSpace::Smem;
        if (ok && op.code == OpCode::TmaDescReplace) {
          const auto f = TmaDescField(op.int_attr);
          const int64_t ord = op.ints.empty() ? 0 : op.ints[0];
          ok = op.int_attr >= 0 && op.int_attr <= int64_t(TmaDescField::GlobalStride) && op.ints.size() == 1 &&
               o[1]->type == (f == TmaDescField::GlobalDim ? i32() : i64()) &&
               (f == TmaDescField::GlobalAddress ? ord == 0 : ord >= 0 && ord < (f == TmaDescField::GlobalDim ? 5 : 4));
        }
        expect(op, ok, std::string(opcode_name(op.code)) +
                           (op.code == OpCode::TmaDescCopy ? " takes (descriptor pointer, destination pointer)"
                            : op.code == OpCode::TmaDescReplace
                                ? " takes (tensor map pointer, value: i64 address / i32 extent / i64 byte stride) "
                                  "and a field ordinal (dimension < 5, stride < 4)"
                                : " takes (global tensor map pointer, shared tensor map pointer)"));
        expect(op, fn_->kind == FunctionKind::Kernel, std::string(opcode_name(op.code)) + " is only valid in a kernel");
        break;
      }
      default:
        break;
    }
  }

  const Function* fn_ = nullptr;
};

}  // namespace

std::vector<std::string> verify_module(const Module& m) {
  Verifier v;
  for (auto& f : m.functions) v.function(*f);
  return v.errors;
}

void verify_or_throw(const Module& m) {
  auto errors = verify_module(m);
  if (errors.empty()) return;
  std::string msg = "IR verification failed:";
  for (auto& e : errors) msg += "\n  " + e;
  throw std::runtime_error(msg);
}

}  // namespace opencute::ir
