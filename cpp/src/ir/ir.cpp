#include "ir/ir.h"

namespace opencute::ir {

const char* opcode_name(OpCode code) {
  switch (code) {
    case OpCode::Constant: return "constant";
    case OpCode::Add: return "add";
    case OpCode::Sub: return "sub";
    case OpCode::Mul: return "mul";
    case OpCode::Div: return "div";
    case OpCode::Rem: return "rem";
    case OpCode::FloorDiv: return "floordiv";
    case OpCode::Min: return "min";
    case OpCode::Max: return "max";
    case OpCode::Pow: return "pow";
    case OpCode::And: return "and";
    case OpCode::Or: return "or";
    case OpCode::Xor: return "xor";
    case OpCode::Shl: return "shl";
    case OpCode::Shr: return "shr";
    case OpCode::Neg: return "neg";
    case OpCode::Not: return "not";
    case OpCode::Abs: return "abs";
    case OpCode::Cmp: return "cmp";
    case OpCode::Select: return "select";
    case OpCode::Cast: return "cast";
    case OpCode::Bitcast: return "bitcast";
    case OpCode::Fma: return "fma";
    case OpCode::Math: return "math";
    case OpCode::PtrAdd: return "ptr_add";
    case OpCode::PtrToInt: return "ptr_to_int";
    case OpCode::IntToPtr: return "int_to_ptr";
    case OpCode::Load: return "load";
    case OpCode::Store: return "store";
    case OpCode::Alloca: return "alloca";
    case OpCode::VecExtract: return "vec_extract";
    case OpCode::VecInsert: return "vec_insert";
    case OpCode::VecSplat: return "vec_splat";
    case OpCode::ThreadIdx: return "thread_idx";
    case OpCode::BlockIdx: return "block_idx";
    case OpCode::BlockDim: return "block_dim";
    case OpCode::GridDim: return "grid_dim";
    case OpCode::LaneIdx: return "lane_idx";
    case OpCode::WarpIdx: return "warp_idx";
    case OpCode::Barrier: return "barrier";
    case OpCode::Printf: return "printf";
    case OpCode::Shuffle: return "shuffle";
    case OpCode::Vote: return "vote";
    case OpCode::Atomic: return "atomic";
    case OpCode::SmemAlloc: return "smem_alloc";
    case OpCode::DynSmem: return "dyn_smem";
    case OpCode::DynSmemSize: return "dyn_smem_size";
    case OpCode::Assert: return "assert";
    case OpCode::Launch: return "launch";
    case OpCode::For: return "for";
    case OpCode::If: return "if";
    case OpCode::While: return "while";
    case OpCode::Condition: return "condition";
    case OpCode::Yield: return "yield";
    case OpCode::Return: return "return";
    case OpCode::MmaSync: return "mma_sync";
    case OpCode::MmaSyncBlockScaled: return "mma_sync_block_scaled";
    case OpCode::CpAsync: return "cp_async";
    case OpCode::CpAsyncCommit: return "cp_async_commit";
    case OpCode::CpAsyncWait: return "cp_async_wait";
    case OpCode::CpAsyncMbarrierArrive: return "cp_async_mbarrier_arrive";
    case OpCode::LdMatrix: return "ldmatrix";
    case OpCode::StMatrix: return "stmatrix";
    case OpCode::NamedBarrier: return "named_barrier";
    case OpCode::InlineAsm: return "inline_asm";
    case OpCode::GridDepControl: return "griddepcontrol";
    case OpCode::Wgmma: return "wgmma";
    case OpCode::WgmmaFence: return "wgmma_fence";
    case OpCode::WgmmaCommit: return "wgmma_commit";
    case OpCode::WgmmaWait: return "wgmma_wait";
    case OpCode::MbarrierInit: return "mbarrier_init";
    case OpCode::MbarrierArrive: return "mbarrier_arrive";
    case OpCode::MbarrierWait: return "mbarrier_wait";
    case OpCode::Fence: return "fence";
    case OpCode::TmaLoad: return "tma_load";
    case OpCode::TmaStore: return "tma_store";
    case OpCode::BulkLoad: return "bulk_load";
    case OpCode::BulkCommit: return "bulk_commit";
    case OpCode::BulkWait: return "bulk_wait";
    case OpCode::TmaDescOp: return "tma_desc_op";
    case OpCode::TmaEncode: return "tma_encode";
    case OpCode::TmaDescCopy: return "tma_desc_copy";
    case OpCode::TmaDescReplace: return "tma_desc_replace";
    case OpCode::TmaDescCpFenceRelease: return "tma_desc_cp_fence_release";
    case OpCode::ClusterSreg: return "cluster_sreg";
    case OpCode::ClusterBarrier: return "cluster_barrier";
    case OpCode::MapSharedRank: return "map_shared_rank";
    case OpCode::ElectOne: return "elect_one";
    case OpCode::SyncWarp: return "sync_warp";
    case OpCode::SetMaxNReg: return "setmaxnreg";
    case OpCode::Prmt: return "prmt";
    case OpCode::WarpUniform: return "warp_uniform";
    case OpCode::ClcTryCancel: return "clc_try_cancel";
    case OpCode::ClcQueryCancel: return "clc_query_cancel";
    case OpCode::TmemAlloc: return "tcgen05.alloc";
    case OpCode::TmemDealloc: return "tcgen05.dealloc";
    case OpCode::TmemRelinquish: return "tcgen05.relinquish_alloc_permit";
    case OpCode::Tcgen05Mma: return "tcgen05.mma";
    case OpCode::Tcgen05Commit: return "tcgen05.commit";
    case OpCode::Tcgen05Ld: return "tcgen05.ld";
    case OpCode::Tcgen05St: return "tcgen05.st";
    case OpCode::Tcgen05Wait: return "tcgen05.wait";
    case OpCode::Tcgen05Fence: return "tcgen05.fence";
    case OpCode::Tcgen05Cp: return "tcgen05.cp";
    case OpCode::WarpRedux: return "redux.sync";
  }
  return "?";
}

size_t launch_first_arg(const Op& op) {
  return 11 + ((op.int_attr & kLaunchCompletionEvent) ? 1 : 0) + ((op.int_attr & kLaunchProgrammaticEvent) ? 1 : 0);
}

std::string inline_asm_constraints(const Op& op) { return op.str_attr.substr(0, op.str_attr.find('\0')); }

std::string inline_asm_text(const Op& op) {
  size_t at = op.str_attr.find('\0');
  return at == std::string::npos ? std::string() : op.str_attr.substr(at + 1);
}

const char* predicate_name(CmpPredicate p) {
  switch (p) {
    case CmpPredicate::Eq: return "eq";
    case CmpPredicate::Ne: return "ne";
    case CmpPredicate::Lt: return "lt";
    case CmpPredicate::Le: return "le";
    case CmpPredicate::Gt: return "gt";
    case CmpPredicate::Ge: return "ge";
  }
  return "?";
}

bool is_terminator(OpCode code) {
  return code == OpCode::Yield || code == OpCode::Condition || code == OpCode::Return;
}

Value* Block::add_arg(Type t) {
  auto v = std::make_unique<Value>();
  v->type = t;
  v->owner = this;
  v->index = int(args.size());
  args.push_back(std::move(v));
  return args.back().get();
}

Op* Block::terminator() const {
  return ops.empty() || !is_terminator(ops.back()->code) ? nullptr : ops.back().get();
}

bool Block::is_within(const Block* ancestor) const {
  for (const Block* b = this; b; b = b->parent_op ? b->parent_op->parent : nullptr)
    if (b == ancestor) return true;
  return false;
}

Function::Function() : body(std::make_unique<Block>()) { body->parent_function = this; }

Function* Module::add_function(const std::string& name, FunctionKind kind) {
  functions.push_back(std::make_unique<Function>());
  functions.back()->name = name;
  functions.back()->kind = kind;
  return functions.back().get();
}

Function* Module::find(const std::string& name) const {
  for (auto& f : functions)
    if (f->name == name) return f.get();
  return nullptr;
}

Function* Module::host() const {
  for (auto& f : functions)
    if (f->kind == FunctionKind::Host) return f.get();
  return nullptr;
}

bool is_constant(const Value* v) { return v->def && v->def->code == OpCode::Constant; }
int64_t constant_int(const Value* v) { return v->def->int_attr; }
double constant_float(const Value* v) { return v->def->float_attr; }

}  // namespace opencute::ir
