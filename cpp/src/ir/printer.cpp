#include "ir/printer.h"

#include "ir/arch_attributes.h"

#include <cstdio>
#include <sstream>
#include <unordered_map>

namespace opencute::ir {
namespace {

std::string format_float(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else out += c;
  }
  return out + "\"";
}

class Printer {
 public:
  std::string function(const Function& f) {
    ids_.clear();
    next_ = 0;
    std::ostringstream os;
    os << (f.kind == FunctionKind::Kernel ? "gpu.kernel @" : "func.func @") << f.name << "(";
    for (size_t i = 0; i < f.args().size(); ++i) {
      if (i) os << ", ";
      os << name(f.args()[i].get()) << ": " << to_string(f.args()[i]->type);
    }
    os << ")";
    if (!f.result_types.empty()) {
      os << " -> (";
      for (size_t i = 0; i < f.result_types.size(); ++i) os << (i ? ", " : "") << to_string(f.result_types[i]);
      os << ")";
    }
    if (f.reqntid[0]) os << " reqntid(" << f.reqntid[0] << ", " << f.reqntid[1] << ", " << f.reqntid[2] << ")";
    if (f.minctasm) os << " minctasm(" << f.minctasm << ")";
    os << " {\n";
    block_ops(*f.body, 1, os);
    os << "}\n";
    return os.str();
  }

 private:
  std::string name(const Value* v) {
    auto it = ids_.find(v);
    if (it == ids_.end()) it = ids_.emplace(v, next_++).first;
    return "%" + std::to_string(it->second);
  }

  std::string list(const std::vector<Value*>& vs, size_t from = 0, size_t to = size_t(-1)) {
    std::string s;
    for (size_t i = from; i < vs.size() && i < to; ++i) s += (i > from ? ", " : "") + name(vs[i]);
    return s;
  }

  std::string types(const std::vector<Value*>& vs, size_t from = 0) {
    std::string s;
    for (size_t i = from; i < vs.size(); ++i) s += (i > from ? ", " : "") + to_string(vs[i]->type);
    return s;
  }

  void block_ops(const Block& b, int depth, std::ostringstream& os) {
    for (auto& op : b.ops) this->op(*op, depth, os);
  }

  std::string results(const Op& op) {
    if (op.results.empty()) return "";
    std::string s;
    for (size_t i = 0; i < op.results.size(); ++i) s += (i ? ", " : "") + name(op.results[i].get());
    return s + " = ";
  }

  std::string result_types(const Op& op) {
    std::string s;
    for (size_t i = 0; i < op.results.size(); ++i) s += (i ? ", " : "") + to_string(op.results[i]->type);
    return s;
  }

  void op(const Op& op, int depth, std::ostringstream& os) {
    std::string ind(size_t(depth) * 2, ' ');
    os << ind << results(op) << opcode_name(op.code);
    switch (op.code) {
      case OpCode::Constant:
        os << " " << (op.results[0]->type->is_float() ? format_float(op.float_attr) : std::to_string(op.int_attr))
           << " : " << result_types(op) << "\n";
        return;
      case OpCode::Cmp:
        os << " " << predicate_name(CmpPredicate(op.int_attr)) << " " << list(op.operands) << " : "
           << to_string(op.operands[0]->type) << "\n";
        return;
      case OpCode::Cast:
      case OpCode::Bitcast:
      case OpCode::PtrToInt:
      case OpCode::IntToPtr:
      case OpCode::Load:
        os << " " << list(op.operands) << " : " << to_string(op.operands[0]->type) << " -> " << result_types(op) << "\n";
        return;
      case OpCode::Store:
        os << " " << list(op.operands) << " : " << types(op.operands) << "\n";
        return;
      case OpCode::Math:
        os << " " << op.str_attr << " " << list(op.operands) << " : " << result_types(op) << "\n";
        return;
      case OpCode::Shuffle:
        os << " " << shuffle_kind_name(ShuffleKind(op.int_attr)) << " " << list(op.operands) << " : "
           << result_types(op) << "\n";
        return;
      case OpCode::Vote:
        os << " " << vote_kind_name(VoteKind(op.int_attr)) << " " << list(op.operands) << " : " << result_types(op)
           << "\n";
        return;
      case OpCode::Atomic:
        os << " " << atomic_kind_name(AtomicKind(op.int_attr)) << " " << memory_order_name(MemoryOrder(op.ints.at(0)))
           << " " << memory_scope_name(MemoryScope(op.ints.at(1))) << " " << list(op.operands) << " : "
           << result_types(op) << "\n";
        return;
      case OpCode::MmaSync:
        os << " m" << op.ints.at(0) << "n" << op.ints.at(1) << "k" << op.ints.at(2) << " " << list(op.operands) << " : "
           << types(op.operands) << " -> " << result_types(op) << "\n";
        return;
      case OpCode::InlineAsm:
        os << (op.int_attr ? " sideeffect " : " ") << quote(inline_asm_text(op)) << ", " << quote(inline_asm_constraints(op));
        if (!op.operands.empty()) os << " (" << list(op.operands) << ") : " << types(op.operands);
        if (!op.results.empty()) os << " -> " << result_types(op);
        os << "\n";
        return;
      case OpCode::GridDepControl:
        os << (op.int_attr == int64_t(GridDepControlKind::Wait) ? " wait" : " launch_dependents") << "\n";
        return;
      case OpCode::NamedBarrier:
        os << (op.int_attr == int64_t(NamedBarrierKind::Arrive) ? " arrive " : " sync ") << list(op.operands) << "\n";
        return;
      case OpCode::Assert:
        os << " " << list(op.operands) << ", " << quote(op.str_attr) << " at " << quote(op.file) << ":" << op.line
           << "\n";
        return;
      case OpCode::Wgmma:
      case OpCode::WgmmaFence:
      case OpCode::WgmmaCommit:
      case OpCode::WgmmaWait:
        // `[int_attr, ints...] operands : result types`, as the SM80 copies
        os << " [" << op.int_attr;
        for (int64_t v : op.ints) os << ", " << v;
        os << "]";
        if (!op.operands.empty()) os << " " << list(op.operands);
        if (!op.results.empty()) os << " : " << result_types(op);
        os << "\n";
        return;
      case OpCode::CpAsync:
      case OpCode::CpAsyncCommit:
      case OpCode::CpAsyncWait:
      case OpCode::CpAsyncMbarrierArrive:
      case OpCode::LdMatrix:
      case OpCode::StMatrix:
      case OpCode::MbarrierInit:  // the SM90 async ops share the SM80 copies' form `[kind, ints] operands : types`
      case OpCode::MbarrierArrive:
      case OpCode::MbarrierWait:
      case OpCode::Fence:
      case OpCode::TmaLoad:
      case OpCode::TmaStore:
      case OpCode::BulkLoad:
      case OpCode::BulkCommit:
      case OpCode::BulkWait:
      case OpCode::TmaDescOp:
      case OpCode::TmaEncode:
      case OpCode::TmaDescCopy: case OpCode::TmaDescReplace: case OpCode::TmaDescCpFenceRelease:
      case OpCode::ClusterSreg: case OpCode::ClusterBarrier: case OpCode::MapSharedRank: case OpCode::ElectOne:
      case OpCode::SyncWarp: case OpCode::SetMaxNReg: case OpCode::Prmt: case OpCode::WarpUniform:
      case OpCode::ClcTryCancel: case OpCode::ClcQueryCancel:
      case OpCode::TmemAlloc: case OpCode::TmemDealloc: case OpCode::TmemRelinquish: case OpCode::Tcgen05Mma:
      case OpCode::Tcgen05Commit: case OpCode::Tcgen05Ld: case OpCode::Tcgen05St: case OpCode::Tcgen05Wait:
      case OpCode::Tcgen05Fence: case OpCode::Tcgen05Cp: case OpCode::WarpRedux: case OpCode::MmaSyncBlockScaled:
        if (op.code != OpCode::CpAsyncCommit) {
          os << " [" << op.int_attr;
          for (int64_t v : op.ints) os << ", " << v;
          os << "]";
        }
        if (!op.operands.empty()) os << " " << list(op.operands);
        if (!op.results.empty()) os << " : " << result_types(op);
        os << "\n";
        return;
      case OpCode::Alloca:
      case OpCode::SmemAlloc:
        os << " " << op.int_attr << " : " << result_types(op) << "\n";
        return;
      case OpCode::VecExtract:
      case OpCode::VecInsert:
        os << " " << list(op.operands) << " [" << op.int_attr << "] : " << result_types(op) << "\n";
        return;
      case OpCode::ThreadIdx:
      case OpCode::BlockIdx:
      case OpCode::BlockDim:
      case OpCode::GridDim:
        os << " " << "xyz"[op.int_attr] << " : " << result_types(op) << "\n";
        return;
      case OpCode::Printf:
        os << " " << quote(op.str_attr);
        if (!op.operands.empty()) os << " (" << list(op.operands) << ") : " << types(op.operands);
        os << "\n";
        return;
      case OpCode::Launch: {
        os << " @" << op.str_attr << " grid(" << list(op.operands, 0, 3) << ") block(" << list(op.operands, 3, 6)
           << ") smem(" << list(op.operands, 6, 7) << ") stream(" << list(op.operands, 7, 8) << ")";
        if (op.int_attr & kLaunchCluster) os << " cluster(" << list(op.operands, 8, 11) << ")";
        if (op.int_attr & kLaunchCooperative) os << " cooperative";
        if (op.int_attr & kLaunchPdl) os << " pdl";
        size_t at = 11, first = launch_first_arg(op);
        if (op.int_attr & kLaunchCompletionEvent)
          os << " completion_event(" << list(op.operands, at, at + 1) << ", " << op.ints.at(0) << ")", ++at;
        if (op.int_attr & kLaunchProgrammaticEvent)
          os << " programmatic_event(" << list(op.operands, at, at + 1) << ", " << op.ints.at(1) << ", "
             << op.ints.at(2) << ")";
        os << " args(" << list(op.operands, first) << ")";
        if (op.operands.size() > first) os << " : " << types(op.operands, first);
        os << "\n";
        return;
      }
      case OpCode::For: {
        Block* body = op.region_block(0);
        os << " " << name(body->args[0].get()) << " = " << name(op.operands[0]) << " to " << name(op.operands[1])
           << " step " << name(op.operands[2]);
        if (op.operands.size() > 3) {
          os << " iter(";
          for (size_t i = 3; i < op.operands.size(); ++i)
            os << (i > 3 ? ", " : "") << name(body->args[i - 2].get()) << " = " << name(op.operands[i]);
          os << ")";
        }
        if (op.int_attr) os << " {unroll = " << op.int_attr << "}";
        os << " : " << to_string(op.operands[0]->type);
        if (!op.results.empty()) os << " -> (" << result_types(op) << ")";
        os << " {\n";
        block_ops(*body, depth + 1, os);
        os << ind << "}\n";
        return;
      }
      case OpCode::If: {
        os << " " << name(op.operands[0]);
        if (!op.results.empty()) os << " -> (" << result_types(op) << ")";
        os << " {\n";
        block_ops(*op.region_block(0), depth + 1, os);
        os << ind << "} else {\n";
        block_ops(*op.region_block(1), depth + 1, os);
        os << ind << "}\n";
        return;
      }
      case OpCode::While: {
        Block* before = op.region_block(0);
        Block* after = op.region_block(1);
        os << " (";
        for (size_t i = 0; i < op.operands.size(); ++i)
          os << (i ? ", " : "") << name(before->args[i].get()) << " = " << name(op.operands[i]);
        os << ")";
        if (!op.results.empty()) os << " -> (" << result_types(op) << ")";
        os << " {\n";
        block_ops(*before, depth + 1, os);
        os << ind << "} do (";
        for (size_t i = 0; i < after->args.size(); ++i) os << (i ? ", " : "") << name(after->args[i].get());
        os << ") {\n";
        block_ops(*after, depth + 1, os);
        os << ind << "}\n";
        return;
      }
      default:
        if (!op.operands.empty()) os << " " << list(op.operands);
        if (!op.results.empty()) os << " : " << result_types(op);
        else if (!op.operands.empty() && (op.code == OpCode::Yield || op.code == OpCode::Return || op.code == OpCode::Condition))
          os << " : " << types(op.operands);
        os << "\n";
        return;
    }
  }

  std::unordered_map<const Value*, int> ids_;
  int next_ = 0;
};

}  // namespace

std::string print_function(const Function& f) { return Printer().function(f); }

std::string print_module(const Module& m) {
  std::string out = "module {\n";
  for (auto& f : m.functions) out += print_function(*f);
  return out + "}\n";
}

uint64_t fnv1a64(const std::string& text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string printed_module_hash(const std::string& printed) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)fnv1a64(printed));
  return buf;
}

std::string module_hash(const Module& m) { return printed_module_hash(print_module(m)); }

}  // namespace opencute::ir
