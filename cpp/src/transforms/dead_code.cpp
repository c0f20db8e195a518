#include "transforms/dead_code.h"

#include <unordered_map>

namespace opencute::transforms {
namespace {

bool is_pure(const ir::Op& op) {
  switch (op.code) {
    case ir::OpCode::Store: case ir::OpCode::Barrier: case ir::OpCode::Printf: case ir::OpCode::Launch:
    case ir::OpCode::For: case ir::OpCode::If: case ir::OpCode::While: case ir::OpCode::Condition:
    case ir::OpCode::Yield: case ir::OpCode::Return: case ir::OpCode::Load: case ir::OpCode::Atomic:
    case ir::OpCode::Assert: case ir::OpCode::Shuffle: case ir::OpCode::Vote:
    case ir::OpCode::CpAsync: case ir::OpCode::CpAsyncCommit: case ir::OpCode::CpAsyncWait:
    case ir::OpCode::CpAsyncMbarrierArrive:
    case ir::OpCode::LdMatrix: case ir::OpCode::StMatrix:
    case ir::OpCode::NamedBarrier: case ir::OpCode::GridDepControl:
    case ir::OpCode::Wgmma: case ir::OpCode::WgmmaFence: case ir::OpCode::WgmmaCommit: case ir::OpCode::WgmmaWait:
    case ir::OpCode::MbarrierInit: case ir::OpCode::MbarrierArrive: case ir::OpCode::MbarrierWait:
    case ir::OpCode::Fence: case ir::OpCode::TmaLoad: case ir::OpCode::TmaStore: case ir::OpCode::BulkLoad:
    case ir::OpCode::BulkCommit:
    case ir::OpCode::BulkWait: case ir::OpCode::TmaDescOp: case ir::OpCode::TmaEncode:
    case ir::OpCode::TmaDescCopy: case ir::OpCode::TmaDescReplace: case ir::OpCode::TmaDescCpFenceRelease:
    case ir::OpCode::ClusterBarrier: case ir::OpCode::ElectOne: case ir::OpCode::SyncWarp: case ir::OpCode::SetMaxNReg:
    case ir::OpCode::WarpUniform: case ir::OpCode::ClcTryCancel: case ir::OpCode::ClcQueryCancel:
    case ir::OpCode::TmemAlloc: case ir::OpCode::TmemDealloc: case ir::OpCode::TmemRelinquish:
    case ir::OpCode::Tcgen05Mma: case ir::OpCode::Tcgen05Commit: case ir::OpCode::Tcgen05Ld: case ir::OpCode::Tcgen05St:
    case ir::OpCode::Tcgen05Wait: case ir::OpCode::Tcgen05Fence: case ir::OpCode::Tcgen05Cp:
    case ir::OpCode::WarpRedux:
      // loads stay: removing them would hide faulting accesses; shuffles and votes synchronise the warp
      return false;
    case ir::OpCode::InlineAsm:
      return op.int_attr == 0;  // asm without side effects is kept only while its result is used
    default:
      return true;
  }
}

void count_uses(const ir::Block& b, std::unordered_map<const ir::Value*, int>& uses) {
  for (auto& op : b.ops) {
    for (auto* v : op->operands) ++uses[v];
    for (auto& r : op->regions) count_uses(*r.block, uses);
  }
}

int sweep(ir::Block& b, std::unordered_map<const ir::Value*, int>& uses) {
  int removed = 0;
  for (auto& op : b.ops)
    for (auto& r : op->regions) removed += sweep(*r.block, uses);
  for (size_t i = b.ops.size(); i-- > 0;) {
    ir::Op& op = *b.ops[i];
    if (!is_pure(op)) continue;
    bool used = false;
    for (auto& r : op.results) used = used || uses[r.get()] > 0;
    if (used) continue;
    for (auto* v : op.operands) --uses[v];
    b.ops.erase(b.ops.begin() + long(i));
    ++removed;
  }
  return removed;
}

}  // namespace

int remove_dead_code(ir::Module& m) {
  int total = 0;
  for (auto& f : m.functions) {
    std::unordered_map<const ir::Value*, int> uses;
    count_uses(*f->body, uses);
    for (int n; (n = sweep(*f->body, uses)) > 0;) total += n;
  }
  return total;
}

}  // namespace opencute::transforms
