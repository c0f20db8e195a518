#include "emulator/device_emulator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace opencute::emulator {

using ir::OpCode;
using ir::Scalar;
using ir::Type;

namespace {

constexpr int kWarp = 32;

enum class K : uint8_t {
  // value instructions; `width` slots are processed (vectors occupy consecutive registers)
  Binary, AddI32, SubI32, MulI32, AddF32, MulF32, Unary, Cmp, CmpI32, Select, Cast, Bitcast, Fma, Math,
  PtrAdd, Move, Load, Store, Alloca, VecInsert, VecSplat, Special, Printf, PMove,
  // control
  Barrier, If, Else, EndIf, LoopBegin, ForTest, ForStep, WhileTest, Jump, LoopEnd, Return,
};

}  // namespace

struct Inst {
  explicit Inst(K k = K::Return) : kind(k) {}
  K kind;
  OpCode code = OpCode::Constant;
  int dst = -1, a = -1, b = -1, c = -1;
  int width = 1;       // slots per value
  int target = -1;     // jump target for control instructions
  int64_t imm = 0;     // predicate, dimension, byte offset, element size, index...
  Type type = nullptr;     // result (scalar) type, or the accessed element type
  Type in_type = nullptr;  // operand (scalar) type
  std::vector<int> srcs, dsts;       // PMove / Math / Printf operands
  std::vector<Type> types;           // Printf operand types
  const ir::Op* op = nullptr;
};

struct DeviceEmulator::Program {
  std::vector<Inst> code;
  std::vector<std::pair<int, Scalar>> constants;  // (register, value), broadcast to all lanes
  std::vector<int> arg_regs;
  int local_bytes = 0;  // per-thread local array bytes
  std::unordered_map<const ir::Value*, int> numbering;
  int num_regs = 0;

  int width_of(const ir::Value* v) const { return v->type->is_vector() ? v->type->lanes : 1; }
  int reg(const ir::Value* v) {
    auto it = numbering.find(v);
    if (it != numbering.end()) return it->second;
    int r = num_regs;
    num_regs += width_of(v);
    numbering.emplace(v, r);
    return r;
  }
  int emit(Inst i) {
    code.push_back(std::move(i));
    return int(code.size()) - 1;
  }
  // A parallel copy (all sources read before any destination is written), expanded per slot.
  void pmove(const std::vector<int>& dst_base, const std::vector<const ir::Value*>& src, const ir::Op* op) {
    Inst m(K::PMove);
    m.op = op;
    for (size_t i = 0; i < src.size(); ++i) {
      int w = width_of(src[i]);
      int s = reg(src[i]);
      for (int k = 0; k < w; ++k) {
        m.srcs.push_back(s + k);
        m.dsts.push_back(dst_base[i] + k);
      }
    }
    if (!m.srcs.empty()) emit(std::move(m));
  }
  std::vector<int> regs_of(const std::vector<std::unique_ptr<ir::Value>>& vals, size_t from = 0) {
    std::vector<int> out;
    for (size_t i = from; i < vals.size(); ++i) out.push_back(reg(vals[i].get()));
    return out;
  }

  struct Term {  // what the terminator of the block being lowered does
    enum Kind { Return, Yield, Condition } kind = Return;
    std::vector<int> yield_dst;                     // Yield: registers receiving the operands
    std::vector<int> results, after_args;           // Condition: loop results, after-region args
    std::vector<int>* exit_patches = nullptr;       // Condition: WhileTest instructions to patch
  };

  [[noreturn]] static void unsupported(const ir::Op& op, const std::string& kernel, const std::string& why = "") {
    throw ExecutionError("operation '" + std::string(ir::opcode_name(op.code)) + "' in kernel '" + kernel +
                         "' is not supported by the CPU emulator" + (why.empty() ? "" : " (" + why + ")") +
                         (op.line ? " (line " + std::to_string(op.line) + ")" : ""));
  }

  void lower_block(const ir::Block& b, const Term& term, const std::string& kname, bool* has_printf);
};

namespace {

bool is_simple_value_op(OpCode c) {
  switch (c) {
    case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
    case OpCode::FloorDiv: case OpCode::Min: case OpCode::Max: case OpCode::Pow: case OpCode::And:
    case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr:
      return true;
    default:
      return false;
  }
}

bool is_i32(Type t) { return t->is_int() && t->width == 32; }
bool is_f32(Type t) { return t->is_float() && t->float_kind == ir::FloatKind::F32; }

}  // namespace

void DeviceEmulator::Program::lower_block(const ir::Block& b, const Term& term, const std::string& kname,
                                          bool* has_printf) {
  for (auto& opp : b.ops) {
    const ir::Op& op = *opp;
    auto in = [&](size_t i) { return reg(op.operands[i]); };
    auto out = [&]() { return reg(op.result()); };
    auto base = [&](K k) {
      Inst i(k);
      i.op = &op;
      i.code = op.code;
      if (!op.results.empty()) {
        i.type = ir::scalar_of(op.results[0]->type);
        i.width = width_of(op.result());
      }
      if (!op.operands.empty()) i.in_type = ir::scalar_of(op.operands[0]->type);
      return i;
    };
    if (is_simple_value_op(op.code)) {
      Inst i = base(K::Binary);
      if (i.width == 1 && is_i32(i.type)) {
        if (op.code == OpCode::Add) i.kind = K::AddI32;
        if (op.code == OpCode::Sub) i.kind = K::SubI32;
        if (op.code == OpCode::Mul) i.kind = K::MulI32;
      } else if (i.width == 1 && is_f32(i.type)) {
        if (op.code == OpCode::Add) i.kind = K::AddF32;
        if (op.code == OpCode::Mul) i.kind = K::MulF32;
      }
      i.a = in(0), i.b = in(1), i.dst = out();
      emit(std::move(i));
      continue;
    }
    switch (op.code) {
      case OpCode::Constant: {
        int r = out();
        Type t = op.results[0]->type;
        Scalar v = ir::scalar_of(t)->is_float() ? Scalar::of_float(op.float_attr) : Scalar::of_int(op.int_attr);
        for (int k = 0; k < width_of(op.result()); ++k) constants.emplace_back(r + k, v);
        break;
      }
      case OpCode::Neg: case OpCode::Not: case OpCode::Abs: {
        Inst i = base(K::Unary);
        i.a = in(0), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Cmp: {
        Inst i = base(K::Cmp);
        i.imm = op.int_attr;
        i.a = in(0), i.b = in(1), i.dst = out();
        if (i.width == 1 && op.operands[0]->type->is_int() && op.operands[0]->type->width == 32) i.kind = K::CmpI32;
        emit(std::move(i));
        break;
      }
      case OpCode::Select: {
        Inst i = base(K::Select);
        i.a = in(0), i.b = in(1), i.c = in(2), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Cast: {
        Inst i = base(K::Cast);
        i.a = in(0), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Bitcast: {
        if (op.operands[0]->type->is_vector() || op.results[0]->type->is_vector())
          unsupported(op, kname, "bitcast of a vector");
        Inst i = base(K::Bitcast);
        i.a = in(0), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Fma: {
        Inst i = base(K::Fma);
        i.a = in(0), i.b = in(1), i.c = in(2), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Math: {
        if (!ir::is_known_math_function(op.str_attr, nullptr)) unsupported(op, kname, "math function " + op.str_attr);
        if (op.results[0]->type->is_vector()) unsupported(op, kname, "vector math");
        Inst i = base(K::Math);
        for (size_t k = 0; k < op.operands.size(); ++k) i.srcs.push_back(in(k));
        i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::PtrAdd: {
        Inst i = base(K::PtrAdd);
        i.imm = op.operands[0]->type->element->byte_size();
        i.a = in(0), i.b = in(1), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::PtrToInt: case OpCode::IntToPtr: {
        Inst i = base(K::Move);
        i.a = in(0), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Load: {
        Inst i = base(K::Load);
        i.imm = i.type->byte_size();
        i.a = in(0), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Store: {
        Inst i = base(K::Store);
        i.type = ir::scalar_of(op.operands[0]->type);
        i.width = width_of(op.operands[0]);
        i.imm = i.type->byte_size();
        i.a = in(0), i.b = in(1);
        emit(std::move(i));
        break;
      }
      case OpCode::Alloca: {
        Inst i = base(K::Alloca);
        Type pt = op.results[0]->type;
        int align = std::max(pt->align, std::max(pt->element->byte_size(), 1));
        local_bytes = (local_bytes + align - 1) / align * align;
        i.imm = local_bytes;
        local_bytes += int(op.int_attr) * pt->element->byte_size();
        i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::VecExtract: {
        Inst i = base(K::Move);
        i.a = in(0) + int(op.int_attr), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::VecInsert: {
        Inst i = base(K::VecInsert);
        i.a = in(0), i.b = in(1), i.imm = op.int_attr, i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::VecSplat: {
        Inst i = base(K::VecSplat);
        i.a = in(0), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::ThreadIdx: case OpCode::BlockIdx: case OpCode::BlockDim: case OpCode::GridDim:
      case OpCode::LaneIdx: case OpCode::WarpIdx: {
        Inst i = base(K::Special);
        i.imm = op.int_attr;
        i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Barrier:
        emit(base(K::Barrier));
        break;
      case OpCode::Printf: {
        *has_printf = true;
        Inst i = base(K::Printf);
        for (size_t k = 0; k < op.operands.size(); ++k) {
          if (op.operands[k]->type->is_vector()) unsupported(op, kname, "printf of a vector");
          i.srcs.push_back(in(k));
          i.types.push_back(op.operands[k]->type);
        }
        emit(std::move(i));
        break;
      }
      case OpCode::If: {
        std::vector<int> results = regs_of(op.results);
        Inst i = base(K::If);
        i.a = in(0);
        int at_if = emit(std::move(i));
        Term t;
        t.kind = Term::Yield;
        t.yield_dst = results;
        lower_block(*op.region_block(0), t, kname, has_printf);
        int at_else = emit(base(K::Else));
        code[size_t(at_if)].target = at_else;
        lower_block(*op.region_block(1), t, kname, has_printf);
        int at_end = emit(base(K::EndIf));
        code[size_t(at_else)].target = at_end;
        break;
      }
      case OpCode::For: {
        const ir::Block& body = *op.region_block(0);
        std::vector<int> body_args = regs_of(body.args);  // iv, iters...
        std::vector<const ir::Value*> src(op.operands.begin(), op.operands.end());
        src.erase(src.begin() + 1, src.begin() + 3);  // lb, inits...
        pmove(body_args, src, &op);
        emit(base(K::LoopBegin));
        Inst test = base(K::ForTest);
        test.a = body_args[0], test.b = in(1), test.c = in(2);
        test.in_type = op.operands[0]->type;
        int head = emit(std::move(test));
        Term t;
        t.kind = Term::Yield;
        t.yield_dst.assign(body_args.begin() + 1, body_args.end());
        lower_block(body, t, kname, has_printf);
        Inst step = base(K::ForStep);
        step.a = body_args[0], step.b = in(2);
        step.in_type = op.operands[0]->type;
        emit(std::move(step));
        Inst jump = base(K::Jump);
        jump.target = head;
        emit(std::move(jump));
        int end = emit(base(K::LoopEnd));
        code[size_t(head)].target = end;
        std::vector<int> results = regs_of(op.results);
        std::vector<const ir::Value*> iters;
        for (size_t k = 1; k < body.args.size(); ++k) iters.push_back(body.args[k].get());
        pmove(results, iters, &op);
        break;
      }
      case OpCode::While: {
        const ir::Block& before = *op.region_block(0);
        const ir::Block& after = *op.region_block(1);
        std::vector<int> before_args = regs_of(before.args);
        pmove(before_args, std::vector<const ir::Value*>(op.operands.begin(), op.operands.end()), &op);
        emit(base(K::LoopBegin));
        int head = int(code.size());
        std::vector<int> patches;
        Term tc;
        tc.kind = Term::Condition;
        tc.results = regs_of(op.results);
        tc.after_args = regs_of(after.args);
        tc.exit_patches = &patches;
        lower_block(before, tc, kname, has_printf);
        Term ty;
        ty.kind = Term::Yield;
        ty.yield_dst = before_args;
        lower_block(after, ty, kname, has_printf);
        Inst jump = base(K::Jump);
        jump.target = head;
        emit(std::move(jump));
        int end = emit(base(K::LoopEnd));
        for (int p : patches) code[size_t(p)].target = end;
        break;
      }
      case OpCode::Yield:
        if (term.kind != Term::Yield) unsupported(op, kname, "misplaced yield");
        pmove(term.yield_dst, std::vector<const ir::Value*>(op.operands.begin(), op.operands.end()), &op);
        break;
      case OpCode::Condition: {
        if (term.kind != Term::Condition) unsupported(op, kname, "misplaced condition");
        std::vector<const ir::Value*> fwd(op.operands.begin() + 1, op.operands.end());
        pmove(term.results, fwd, &op);
        pmove(term.after_args, fwd, &op);
        Inst i = base(K::WhileTest);
        i.a = in(0);
        term.exit_patches->push_back(emit(std::move(i)));
        break;
      }
      case OpCode::Return:
        emit(base(K::Return));
        break;
      default:
        unsupported(op, kname);
    }
  }
}

DeviceEmulator::DeviceEmulator(const ir::Function& kernel) : kernel_(kernel), program_(std::make_unique<Program>()) {
  Program& p = *program_;
  for (auto& a : kernel.body->args) {
    if (a->type->is_vector()) throw ExecutionError("kernel '" + kernel.name + "' takes a vector argument; the CPU "
                                                   "emulator does not support that");
    p.arg_regs.push_back(p.reg(a.get()));
  }
  Program::Term t;
  p.lower_block(*kernel.body, t, kernel.name, &has_printf_);
  if (p.code.empty() || p.code.back().kind != K::Return) p.emit(Inst(K::Return));
  num_regs_ = p.num_regs;
  p.numbering.clear();
}

DeviceEmulator::~DeviceEmulator() = default;

size_t DeviceEmulator::num_instructions() const { return program_->code.size(); }

int default_emulator_threads() {
  if (const char* e = std::getenv("OPENCUTE_EMULATOR_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

// ---- execution ---------------------------------------------------------------------------

namespace {

struct MaskEntry {
  uint32_t saved;  // mask at entry of the if / loop
  uint32_t other;  // the else-side mask of an if
};

enum class WarpState : uint8_t { Running, AtBarrier, Done };

struct Warp {
  int pc = 0;
  uint32_t mask = 0, live = 0;
  WarpState state = WarpState::Running;
  std::vector<MaskEntry> stack;
  Scalar* regs = nullptr;  // num_regs * 32
  char* local = nullptr;   // 32 * local_stride bytes
  unsigned first_thread = 0;
  int index = 0;
};

// One host thread's state: registers and local memory for every warp of a block, reused for
// every block that thread runs.
struct Worker {
  std::vector<Scalar> regs;
  std::vector<char> local;
  std::vector<Warp> warps;
  std::vector<char> smem;
  std::vector<Scalar> scratch;
  std::vector<Scalar> math_args;
  std::vector<Scalar> printf_vals;
  std::string text;
  unsigned block_idx[3] = {0, 0, 0};
};

struct LaunchCtx {
  const DeviceEmulator::Program* prog;
  const std::string* kernel;
  const LaunchRequest* req;
  const EmulatorConfig* cfg;
  unsigned block_threads;
  int num_warps;
  size_t local_stride;
};

std::string hex(uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)a);
  return buf;
}

std::string dims3(const unsigned d[3]) {
  return "(" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + ")";
}

void thread_coords(const LaunchCtx& c, unsigned lin, unsigned out[3]) {
  out[0] = lin % c.req->block[0];
  out[1] = (lin / c.req->block[0]) % c.req->block[1];
  out[2] = lin / (c.req->block[0] * c.req->block[1]);
}

std::string where(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i) {
  unsigned t[3];
  thread_coords(c, warp.first_thread + unsigned(lane), t);
  std::string s = "in kernel '" + *c.kernel + "'";
  if (i.op && i.op->line) s += " (line " + std::to_string(i.op->line) + ")";
  s += ", block " + dims3(w.block_idx) + " thread " + dims3(t);
  return s;
}

[[noreturn]] void fail_at(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                          const std::string& what) {
  throw ExecutionError(what + " " + where(c, w, warp, lane, i));
}

[[noreturn]] void bad_access(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                             uintptr_t addr, size_t bytes, bool store, bool misaligned) {
  std::string what = std::string(misaligned ? "misaligned " : "out-of-bounds ") + (store ? "store" : "load") +
                     " of " + std::to_string(bytes) + " bytes at address " + hex(addr) + " " +
                     where(c, w, warp, lane, i);
  if (misaligned) {
    what += ": the address is not a multiple of " + std::to_string(bytes);
  } else {
    const MemoryRegion* nearest = nullptr;
    uintptr_t best = ~uintptr_t(0);
    for (const MemoryRegion& r : *c.cfg->regions) {
      uintptr_t d = addr < r.begin ? r.begin - addr : (addr >= r.end ? addr - r.end : 0);
      if (d < best) best = d, nearest = &r;
    }
    what += ": it lies outside every buffer the kernel was given";
    if (nearest) {
      if (addr >= nearest->end)
        what += " (" + std::to_string(addr - nearest->end) + " bytes past the end of " + nearest->name;
      else if (addr + bytes > nearest->end)
        what += " (it runs over the end of " + nearest->name;
      else
        what += " (" + std::to_string(nearest->begin - addr) + " bytes before the start of " + nearest->name;
      what += ", " + std::to_string(nearest->end - nearest->begin) + " bytes at " + hex(nearest->begin) + ")";
    }
  }
  throw ExecutionError(what);
}

inline void check_access(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                         uintptr_t addr, size_t bytes, bool store) {
  if (addr == 0) fail_at(c, w, warp, lane, i, std::string("a ") + (store ? "store" : "load") + " through a null pointer");
  if ((bytes & (bytes - 1)) == 0 && (addr & (std::min<size_t>(bytes, 16) - 1)) != 0)
    bad_access(c, w, warp, lane, i, addr, bytes, store, true);
  // The thread's own local arrays.
  uintptr_t lb = reinterpret_cast<uintptr_t>(warp.local) + uintptr_t(lane) * c.local_stride;
  if (addr >= lb && addr + bytes <= lb + c.local_stride) return;
  if (!c.cfg->regions) return;
  for (const MemoryRegion& r : *c.cfg->regions)
    if (addr >= r.begin && addr + bytes <= r.end) return;
  if (!w.smem.empty()) {
    uintptr_t sb = reinterpret_cast<uintptr_t>(w.smem.data());
    if (addr >= sb && addr + bytes <= sb + w.smem.size()) return;
  }
  if (c.cfg->strict) bad_access(c, w, warp, lane, i, addr, bytes, store, false);
}

#define FOR_LANES(m) for (uint32_t mm_ = (m); mm_; mm_ &= mm_ - 1)
#define LANE __builtin_ctz(mm_)

// Runs a warp until it reaches a barrier or returns.
void run_warp(const LaunchCtx& c, Worker& w, Warp& warp) {
  const Inst* code = c.prog->code.data();
  Scalar* R = warp.regs;
  auto at = [R](int reg, int lane) -> Scalar& { return R[size_t(reg) * kWarp + size_t(lane)]; };
  std::string err;
  for (;;) {
    const Inst& i = code[warp.pc];
    const uint32_t m = warp.mask;
    switch (i.kind) {
      case K::AddI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) + uint32_t(b[l].i)); } }
        else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(a[l].i) + uint32_t(b[l].i); } }
        break;
      }
      case K::SubI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) - uint32_t(b[l].i)); } }
        else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(uint32_t(a[l].i) - uint32_t(b[l].i)); } }
        break;
      }
      case K::MulI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        if (i.type->is_signed) { FOR_LANES(m) { int l = LANE; d[l].i = int32_t(uint32_t(a[l].i) * uint32_t(b[l].i)); } }
        else { FOR_LANES(m) { int l = LANE; d[l].i = uint32_t(a[l].i) * uint32_t(b[l].i); } }
        break;
      }
      case K::AddF32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        FOR_LANES(m) { int l = LANE; d[l].f = double(float(a[l].f + b[l].f)); }
        break;
      }
      case K::MulF32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        FOR_LANES(m) { int l = LANE; d[l].f = double(float(a[l].f * b[l].f)); }
        break;
      }
      case K::Binary:
        for (int k = 0; k < i.width; ++k) {
          FOR_LANES(m) {
            int l = LANE;
            if (!ir::eval_binary(i.code, i.type, at(i.a + k, l), at(i.b + k, l), &at(i.dst + k, l), &err))
              fail_at(c, w, warp, l, i, err);
          }
        }
        break;
      case K::Unary:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = ir::eval_unary(i.code, i.type, at(i.a + k, l)); }
        break;
      case K::CmpI32: {
        Scalar* d = &at(i.dst, 0); const Scalar* a = &at(i.a, 0); const Scalar* b = &at(i.b, 0);
        auto p = ir::CmpPredicate(i.imm);
        if (i.in_type->is_signed) {
          FOR_LANES(m) {
            int l = LANE;
            int32_t x = int32_t(a[l].i), y = int32_t(b[l].i);
            bool r;
            switch (p) {
              case ir::CmpPredicate::Eq: r = x == y; break;
              case ir::CmpPredicate::Ne: r = x != y; break;
              case ir::CmpPredicate::Lt: r = x < y; break;
              case ir::CmpPredicate::Le: r = x <= y; break;
              case ir::CmpPredicate::Gt: r = x > y; break;
              default: r = x >= y; break;
            }
            d[l].i = r;
          }
        } else {
          FOR_LANES(m) { int l = LANE; d[l].i = ir::eval_cmp(p, i.in_type, a[l], b[l]); }
        }
        break;
      }
      case K::Cmp:
        for (int k = 0; k < i.width; ++k)
          FOR_LANES(m) { int l = LANE; at(i.dst + k, l).i = ir::eval_cmp(ir::CmpPredicate(i.imm), i.in_type, at(i.a + k, l), at(i.b + k, l)); }
        break;
      case K::Select:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a, l).i ? at(i.b + k, l) : at(i.c + k, l); }
        break;
      case K::Cast:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = ir::eval_cast(i.in_type, i.type, at(i.a + k, l)); }
        break;
      case K::Bitcast:
        FOR_LANES(m) { int l = LANE; at(i.dst, l) = ir::eval_bitcast(i.in_type, i.type, at(i.a, l)); }
        break;
      case K::Fma:
        for (int k = 0; k < i.width; ++k)
          FOR_LANES(m) {
            int l = LANE;
            at(i.dst + k, l) = Scalar::of_float(ir::round_float(i.type, at(i.a + k, l).f * at(i.b + k, l).f + at(i.c + k, l).f));
          }
        break;
      case K::Math:
        FOR_LANES(m) {
          int l = LANE;
          w.math_args.resize(i.srcs.size());
          for (size_t k = 0; k < i.srcs.size(); ++k) w.math_args[k] = at(i.srcs[k], l);
          if (!ir::eval_math(i.op->str_attr, i.type, w.math_args, &at(i.dst, l)))
            fail_at(c, w, warp, l, i, "unknown math function " + i.op->str_attr);
        }
        break;
      case K::PtrAdd:
        FOR_LANES(m) { int l = LANE; at(i.dst, l).i = at(i.a, l).i + at(i.b, l).i * i.imm; }
        break;
      case K::Move:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a + k, l); }
        break;
      case K::PMove: {
        const size_t n = i.srcs.size();
        w.scratch.resize(n * kWarp);
        for (size_t k = 0; k < n; ++k) std::memcpy(&w.scratch[k * kWarp], &at(i.srcs[k], 0), sizeof(Scalar) * kWarp);
        for (size_t k = 0; k < n; ++k) {
          Scalar* d = &at(i.dsts[k], 0);
          const Scalar* s = &w.scratch[k * kWarp];
          if (m == 0xffffffffu) std::memcpy(d, s, sizeof(Scalar) * kWarp);
          else FOR_LANES(m) { int l = LANE; d[l] = s[l]; }
        }
        break;
      }
      case K::Load: {
        const size_t bytes = size_t(i.imm) * size_t(i.width);
        FOR_LANES(m) {
          int l = LANE;
          uintptr_t p = uintptr_t(at(i.a, l).i);
          check_access(c, w, warp, l, i, p, bytes, false);
          for (int k = 0; k < i.width; ++k)
            at(i.dst + k, l) = ir::load_scalar(i.type, reinterpret_cast<const void*>(p + uintptr_t(k * i.imm)));
        }
        break;
      }
      case K::Store: {
        const size_t bytes = size_t(i.imm) * size_t(i.width);
        FOR_LANES(m) {
          int l = LANE;
          uintptr_t p = uintptr_t(at(i.b, l).i);
          check_access(c, w, warp, l, i, p, bytes, true);
          for (int k = 0; k < i.width; ++k)
            ir::store_scalar(i.type, at(i.a + k, l), reinterpret_cast<void*>(p + uintptr_t(k * i.imm)));
        }
        break;
      }
      case K::Alloca:
        FOR_LANES(m) {
          int l = LANE;
          at(i.dst, l).i = int64_t(reinterpret_cast<uintptr_t>(warp.local) + uintptr_t(l) * c.local_stride + uintptr_t(i.imm));
        }
        break;
      case K::VecInsert:
        FOR_LANES(m) {
          int l = LANE;
          for (int k = 0; k < i.width; ++k) at(i.dst + k, l) = at(i.a + k, l);
          at(i.dst + int(i.imm), l) = at(i.b, l);
        }
        break;
      case K::VecSplat:
        for (int k = 0; k < i.width; ++k) FOR_LANES(m) { int l = LANE; at(i.dst + k, l) = at(i.a, l); }
        break;
      case K::Special: {
        const int d = int(i.imm);
        FOR_LANES(m) {
          int l = LANE;
          int64_t v = 0;
          switch (i.code) {
            case OpCode::ThreadIdx: {
              unsigned t[3];
              thread_coords(c, warp.first_thread + unsigned(l), t);
              v = t[d];
              break;
            }
            case OpCode::BlockIdx: v = w.block_idx[d]; break;
            case OpCode::BlockDim: v = c.req->block[d]; break;
            case OpCode::GridDim: v = c.req->grid[d]; break;
            case OpCode::LaneIdx: v = l; break;
            default: v = warp.index; break;
          }
          at(i.dst, l).i = ir::wrap_int(i.type, v);
        }
        break;
      }
      case K::Printf:
        FOR_LANES(m) {
          int l = LANE;
          w.printf_vals.resize(i.srcs.size());
          for (size_t k = 0; k < i.srcs.size(); ++k) w.printf_vals[k] = at(i.srcs[k], l);
          w.text.clear();
          format_printf(i.op->str_attr, i.types, w.printf_vals, &w.text);
          std::fwrite(w.text.data(), 1, w.text.size(), stdout);
        }
        std::fflush(stdout);
        break;
      case K::Barrier:
        warp.pc++;
        warp.state = WarpState::AtBarrier;
        return;
      case K::If: {
        uint32_t t = 0;
        FOR_LANES(m) { int l = LANE; if (at(i.a, l).i) t |= 1u << l; }
        warp.stack.push_back({m, m & ~t});
        warp.mask = t;
        if (!t) { warp.pc = i.target; continue; }
        break;
      }
      case K::Else:
        warp.mask = warp.stack.back().other;
        if (!warp.mask) { warp.pc = i.target; continue; }
        break;
      case K::EndIf:
      case K::LoopEnd:
        warp.mask = warp.stack.back().saved;
        warp.stack.pop_back();
        break;
      case K::LoopBegin:
        warp.stack.push_back({m, 0});
        break;
      case K::ForTest: {
        uint32_t keep = 0;
        FOR_LANES(m) {
          int l = LANE;
          const Scalar& st = at(i.c, l);
          if (st.i == 0) fail_at(c, w, warp, l, i, "a for loop with a zero step");
          bool up = ir::eval_cmp(ir::CmpPredicate::Gt, i.in_type, st, Scalar::of_int(0));
          if (ir::eval_cmp(up ? ir::CmpPredicate::Lt : ir::CmpPredicate::Gt, i.in_type, at(i.a, l), at(i.b, l)))
            keep |= 1u << l;
        }
        warp.mask = keep;
        if (!keep) { warp.pc = i.target; continue; }
        break;
      }
      case K::ForStep:
        FOR_LANES(m) {
          int l = LANE;
          ir::eval_binary(OpCode::Add, i.in_type, at(i.a, l), at(i.b, l), &at(i.a, l), nullptr);
        }
        break;
      case K::WhileTest: {
        uint32_t keep = 0;
        FOR_LANES(m) { int l = LANE; if (at(i.a, l).i) keep |= 1u << l; }
        warp.mask = keep;
        if (!keep) { warp.pc = i.target; continue; }
        break;
      }
      case K::Jump:
        warp.pc = i.target;
        continue;
      case K::Return:
        warp.state = WarpState::Done;
        return;
    }
    warp.pc++;
  }
}

#undef FOR_LANES
#undef LANE

void prepare_worker(const LaunchCtx& c, Worker& w) {
  const auto& prog = *c.prog;
  size_t nregs = size_t(std::max(prog.num_regs, 1));
  w.regs.assign(nregs * kWarp * size_t(c.num_warps), Scalar{});
  w.local.assign(c.local_stride * kWarp * size_t(c.num_warps), 0);
  w.warps.assign(size_t(c.num_warps), Warp{});
  for (int k = 0; k < c.num_warps; ++k) {
    Warp& warp = w.warps[size_t(k)];
    warp.regs = w.regs.data() + size_t(k) * nregs * kWarp;
    warp.local = w.local.data() + size_t(k) * c.local_stride * kWarp;
    warp.index = k;
    warp.first_thread = unsigned(k * kWarp);
    unsigned n = std::min<unsigned>(kWarp, c.block_threads - warp.first_thread);
    warp.live = n == 32 ? 0xffffffffu : ((1u << n) - 1);
    warp.stack.reserve(16);
    auto fill = [&](int reg, Scalar v) {
      for (int l = 0; l < kWarp; ++l) warp.regs[size_t(reg) * kWarp + size_t(l)] = v;
    };
    for (auto& [reg, v] : prog.constants) fill(reg, v);
    for (size_t a = 0; a < prog.arg_regs.size(); ++a) fill(prog.arg_regs[a], c.req->args[a]);
  }
  w.scratch.reserve(64 * kWarp);
  if (c.req->smem) w.smem.assign(c.req->smem, 0);
}

void run_block(const LaunchCtx& c, Worker& w, uint64_t linear_block) {
  const unsigned* g = c.req->grid;
  w.block_idx[0] = unsigned(linear_block % g[0]);
  w.block_idx[1] = unsigned((linear_block / g[0]) % g[1]);
  w.block_idx[2] = unsigned(linear_block / (uint64_t(g[0]) * g[1]));
  if (!w.smem.empty()) std::fill(w.smem.begin(), w.smem.end(), 0);
  for (Warp& warp : w.warps) {
    warp.pc = 0;
    warp.mask = warp.live;
    warp.state = WarpState::Running;
    warp.stack.clear();
  }
  for (;;) {
    int waiting = 0, done = 0;
    for (Warp& warp : w.warps) {
      if (warp.state == WarpState::Running) run_warp(c, w, warp);
      if (warp.state == WarpState::AtBarrier) ++waiting;
      else ++done;
    }
    if (!waiting) return;
    if (done) {
      std::string finished, stuck;
      for (const Warp& warp : w.warps) {
        std::string& s = warp.state == WarpState::Done ? finished : stuck;
        s += (s.empty() ? "" : ",") + std::to_string(warp.index);
      }
      throw ExecutionError("sync_threads deadlock in kernel '" + *c.kernel + "', block " + dims3(w.block_idx) +
                           ": warp(s) " + finished + " finished while warp(s) " + stuck +
                           " wait at a barrier (a barrier inside divergent control flow?)");
    }
    for (Warp& warp : w.warps) warp.state = WarpState::Running;
  }
}

}  // namespace

void DeviceEmulator::launch(const LaunchRequest& r, const EmulatorConfig& cfg) const {
  for (int d = 0; d < 3; ++d)
    if (r.grid[d] == 0 || r.block[d] == 0)
      throw ExecutionError("kernel '" + kernel_.name + "' launched with an empty grid or block " + dims3(r.grid) +
                           " x " + dims3(r.block));
  uint64_t threads = uint64_t(r.block[0]) * r.block[1] * r.block[2];
  if (threads > 1024)
    throw ExecutionError("kernel '" + kernel_.name + "' launched with " + std::to_string(threads) +
                         " threads per block; at most 1024 are allowed");
  if (r.num_args != program_->arg_regs.size())
    throw ExecutionError("kernel '" + kernel_.name + "' expects " + std::to_string(program_->arg_regs.size()) +
                         " arguments, got " + std::to_string(r.num_args));
  LaunchCtx c;
  c.prog = program_.get();
  c.kernel = &kernel_.name;
  c.req = &r;
  c.cfg = &cfg;
  c.block_threads = unsigned(threads);
  c.num_warps = int((threads + kWarp - 1) / kWarp);
  c.local_stride = size_t((program_->local_bytes + 15) / 16 * 16);
  const uint64_t blocks = uint64_t(r.grid[0]) * r.grid[1] * r.grid[2];

  int nthreads = cfg.threads > 0 ? cfg.threads : default_emulator_threads();
  if (has_printf_) nthreads = 1;  // output in block order
  nthreads = int(std::min<uint64_t>(uint64_t(nthreads), blocks));
  if (nthreads <= 1) {
    Worker w;
    prepare_worker(c, w);
    for (uint64_t b = 0; b < blocks; ++b) run_block(c, w, b);
    return;
  }
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex err_mu;
  std::exception_ptr first_error;
  uint64_t first_error_block = ~uint64_t(0);
  auto body = [&]() {
    Worker w;
    try {
      prepare_worker(c, w);
    } catch (...) {
      std::lock_guard<std::mutex> lock(err_mu);
      if (!first_error) first_error = std::current_exception();
      failed = true;
      return;
    }
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      uint64_t b = next.fetch_add(1, std::memory_order_relaxed);
      if (b >= blocks) return;
      try {
        run_block(c, w, b);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mu);
        // Report the lowest failing block seen, for stable messages.
        if (b < first_error_block) first_error_block = b, first_error = std::current_exception();
        failed = true;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < nthreads; ++t) pool.emplace_back(body);
  body();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace opencute::emulator
