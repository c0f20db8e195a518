// Lowers a kernel's structured IR into the emulator's linear program (device_program.h).
#include <algorithm>

#include "emulator/cluster_launch_control.h"
#include "emulator/device_program.h"
#include "emulator/sm90_mma.h"
#include "emulator/sm80_copy.h"
#include "emulator/sm90_async.h"
#include "emulator/sm90_tensormap.h"
#include "emulator/sm90_warp.h"
#include "emulator/sm100_mma.h"
#include "emulator/sm100_tmem.h"

namespace opencute::emulator {

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
      if (i.width == 1 && i.type->is_int() && i.type->width == 32) {
        if (op.code == OpCode::Add) i.kind = K::AddI32;
        if (op.code == OpCode::Sub) i.kind = K::SubI32;
        if (op.code == OpCode::Mul) i.kind = K::MulI32;
      } else if (i.width == 1 && i.type->is_f32()) {
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
        // (Left unresolved, id -1, when the arity does not fit: the handler then reports it.)
        if (ir::resolve_math_function(op.str_attr, &i.math) && i.math.directed &&
            int(i.srcs.size()) != i.math.rounded.arity())
          i.math = ir::MathFunction{};
        i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::PtrAdd: {
        Inst i = base(K::PtrAdd);
        // imm: bytes per element; a packed sub-byte element stores -(bits), the index then being
        // a whole number of bytes (checked when the op was built).
        ir::Type e = op.operands[0]->type->element;
        i.imm = e->is_sub_byte() ? -e->bit_size() : e->byte_size();
        i.space = op.operands[0]->type->space;
        if (i.space == ir::AddrSpace::Tmem) {  // imm: log2 of the elements per 32-bit column
          i.imm = 0;
          while (i.imm < 5 && (32 >> i.imm) > e->bit_size()) ++i.imm;
        }
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
        i.space = op.operands[0]->type->space;
        i.imm = i.type->is_sub_byte() ? -i.type->bit_size() : i.type->byte_size();  // < 0: packed bits
        i.a = in(0), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Store: {
        Inst i = base(K::Store);
        i.space = op.operands[1]->type->space;
        i.type = ir::scalar_of(op.operands[0]->type);
        i.width = width_of(op.operands[0]);
        i.imm = i.type->is_sub_byte() ? -i.type->bit_size() : i.type->byte_size();  // < 0: packed bits
        i.a = in(0), i.b = in(1);
        emit(std::move(i));
        break;
      }
      case OpCode::Alloca: {
        Inst i = base(K::Alloca);
        Type pt = op.results[0]->type;
        int align = std::max(pt->align, pt->element->min_align());
        local_bytes = (local_bytes + align - 1) / align * align;
        i.imm = local_bytes;
        local_bytes += int(pt->element->array_bytes(op.int_attr));
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
      case OpCode::NamedBarrier: {
        Inst i = base(K::NamedBarrier);
        i.a = in(0), i.b = in(1), i.imm = op.int_attr;
        emit(std::move(i));
        break;
      }
      case OpCode::Shuffle: {
        Inst i = base(K::Shuffle);
        i.imm = op.int_attr;
        i.a = in(0), i.b = in(1), i.c = in(2), i.srcs = {in(3)}, i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Vote: {
        Inst i = base(K::Vote);
        i.imm = op.int_attr;
        i.a = in(0), i.b = in(1), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::WarpRedux: {
        Inst i = base(K::WarpRedux);
        i.imm = op.int_attr;
        i.a = in(0), i.b = in(1), i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::Atomic: {
        Inst i = base(K::Atomic);
        i.imm = op.int_attr;
        i.space = op.operands[0]->type->space;
        i.a = in(0), i.dst = out();
        if (op.operands.size() == 3) i.c = in(1), i.b = in(2);  // cas: (ptr, compare, value)
        else i.b = in(1);
        emit(std::move(i));
        break;
      }
      case OpCode::SmemAlloc: {
        Type pt = op.results[0]->type;
        int align = std::max(pt->align, pt->element->min_align());
        smem_align = std::max(smem_align, align);
        static_smem_bytes = (static_smem_bytes + align - 1) / align * align;
        Inst i = base(K::SmemAddr);
        i.imm = static_smem_bytes;
        static_smem_bytes += pt->element->array_bytes(op.int_attr);
        i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::DynSmem: {
        dyn_smem_align = std::max(dyn_smem_align, op.results[0]->type->align);
        smem_align = std::max(smem_align, dyn_smem_align);
        Inst i = base(K::SmemAddr);
        i.imm = -1;  // the dynamic area, placed after lowering knows every static allocation
        i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::DynSmemSize: {
        Inst i = base(K::Special);
        i.dst = out();
        emit(std::move(i));
        break;
      }
      case OpCode::MmaSync:  // warp-wide: the emulator gathers the lanes' fragments (sm80_mma.cpp,
      case OpCode::MmaSyncBlockScaled: {  // sm120_mma.cpp)
        Inst i = base(op.code == OpCode::MmaSync ? K::MmaSync : K::MmaSyncBlockScaled);
        for (size_t k = 0; k < op.operands.size(); ++k) i.srcs.push_back(in(k));
        for (auto& r : op.results) i.dsts.push_back(reg(r.get()));
        emit(std::move(i));
        break;
      }
      case OpCode::Assert: {
        Inst i = base(K::Assert);
        i.a = in(0);
        emit(std::move(i));
        break;
      }
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
        std::vector<const ir::Value*> src = {op.operands[0]};  // lb, inits...
        for (size_t k = 3; k < op.operands.size(); ++k) src.push_back(op.operands[k]);
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
      case OpCode::GridDepControl:
        // One grid runs at a time on the emulator, each launch after the previous one finished:
        // the wait is always satisfied and letting dependents start early changes nothing.
        break;
      case OpCode::InlineAsm:
        throw UnsupportedOnEmulator(
            (op.file.empty() ? std::string() : op.file + ":" + std::to_string(op.line) + ": ") + "kernel '" + kname +
                "' uses inline PTX (llvm.inline_asm), which the CPU emulator cannot run; run it on a GPU, or "
                "use the cute.arch operation that does the same",
            op.file, op.line);
      default:
        if (!lower_sm80_copy(*this, op) && !lower_sm90_mma(*this, op) && !lower_sm90_async(*this, op) &&
            !lower_sm90_warp(*this, op) && !lower_sm90_tensormap(*this, op) &&
            !lower_cluster_launch_control(*this, op) && !lower_sm100_tmem(*this, op) &&
            !lower_sm100_mma(*this, op))
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
  forges_pointers_ = forges_global_pointers(*kernel.body);
  if (p.code.empty() || p.code.back().kind != K::Return) p.emit(Inst(K::Return));
  p.dyn_smem_offset = (p.static_smem_bytes + p.dyn_smem_align - 1) / p.dyn_smem_align * p.dyn_smem_align;
  for (Inst& i : p.code)
    if (i.kind == K::SmemAddr && i.imm < 0) i.imm = p.dyn_smem_offset;
  num_regs_ = p.num_regs;
  p.numbering.clear();
}

DeviceEmulator::~DeviceEmulator() = default;

size_t DeviceEmulator::num_instructions() const { return program_->code.size(); }

}  // namespace opencute::emulator
