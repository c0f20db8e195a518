#include "emulator/host_interpreter.h"

#include <cstdio>
#include <cstring>

#include "dsl/printf_format.h"

namespace opencute::emulator {

using ir::OpCode;
using ir::Scalar;

struct HostInterpreter::Frame {
  std::vector<Scalar> regs;
  std::vector<std::unique_ptr<char[]>> locals;
  LaunchHandler* launcher;
  std::vector<Scalar> yielded;  // operands of the last terminator executed
  bool yielded_condition = false;
};

void format_printf(const std::string& c_format, const std::vector<ir::Type>& types, const std::vector<Scalar>& values,
                   std::string* out) {
  char buf[512];
  for (auto& piece : dsl::split_c_format(c_format)) {
    if (piece.arg < 0) {
      *out += piece.text;
      continue;
    }
    if (piece.arg >= int(values.size())) throw ExecutionError("printf has fewer arguments than conversions");
    ir::Type t = types[size_t(piece.arg)];
    const Scalar& v = values[size_t(piece.arg)];
    int n;
    if (t->is_float()) n = std::snprintf(buf, sizeof buf, piece.text.c_str(), v.f);
    else if (t->is_pointer()) n = std::snprintf(buf, sizeof buf, piece.text.c_str(), reinterpret_cast<void*>(v.i));
    else if (t->width == 64) n = std::snprintf(buf, sizeof buf, piece.text.c_str(), (long long)v.i);
    else if (t->is_signed) n = std::snprintf(buf, sizeof buf, piece.text.c_str(), int(v.i));
    else n = std::snprintf(buf, sizeof buf, piece.text.c_str(), unsigned(v.i));
    if (n > 0) out->append(buf, size_t(std::min<int>(n, int(sizeof buf) - 1)));
  }
}

HostInterpreter::HostInterpreter(const ir::Function& fn) : fn_(fn) { number(*fn.body); }

void HostInterpreter::number(const ir::Block& b) {
  for (auto& a : b.args) slot_[a.get()] = num_slots_++;
  for (auto& op : b.ops) {
    if (op->code == OpCode::Printf) has_printf_ = true;
    for (auto& r : op->results) slot_[r.get()] = num_slots_++;
    for (auto& reg : op->regions) number(*reg.block);
  }
}

std::vector<Scalar> HostInterpreter::run(const std::vector<Scalar>& args, LaunchHandler* launcher) {
  Frame fr;
  fr.regs.resize(size_t(num_slots_));
  fr.launcher = launcher;
  if (args.size() != fn_.args().size())
    throw ExecutionError("host function expects " + std::to_string(fn_.args().size()) + " arguments, got " +
                         std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i) fr.regs[size_t(slot_[fn_.args()[i].get()])] = args[i];
  exec_block(*fn_.body, fr);
  return fr.yielded;
}

void HostInterpreter::exec_block(const ir::Block& b, Frame& fr) {
  for (auto& op : b.ops) exec(*op, fr);
}

void HostInterpreter::exec(const ir::Op& op, Frame& fr) {
  auto get = [&](const ir::Value* v) -> Scalar& { return fr.regs[size_t(slot_.at(v))]; };
  auto in = [&](size_t i) -> Scalar& { return get(op.operands[i]); };
  auto set = [&](Scalar s) { get(op.results[0].get()) = s; };
  auto collect = [&](size_t from) {
    fr.yielded.clear();
    for (size_t i = from; i < op.operands.size(); ++i) fr.yielded.push_back(in(i));
  };
  switch (op.code) {
    case OpCode::Constant: {
      ir::Type t = op.results[0]->type;
      set(t->is_float() ? Scalar::of_float(op.float_attr) : Scalar::of_int(op.int_attr));
      return;
    }
    case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
    case OpCode::FloorDiv: case OpCode::Min: case OpCode::Max: case OpCode::Pow: case OpCode::And:
    case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr: {
      Scalar r;
      std::string err;
      if (!ir::eval_binary(op.code, op.results[0]->type, in(0), in(1), &r, &err))
        throw ExecutionError(err + " in host code" + (op.line ? " (line " + std::to_string(op.line) + ")" : ""));
      set(r);
      return;
    }
    case OpCode::Neg: case OpCode::Not: case OpCode::Abs:
      set(ir::eval_unary(op.code, op.results[0]->type, in(0)));
      return;
    case OpCode::Cmp:
      set(Scalar::of_int(ir::eval_cmp(ir::CmpPredicate(op.int_attr), op.operands[0]->type, in(0), in(1))));
      return;
    case OpCode::Select:
      set(in(0).i ? in(1) : in(2));
      return;
    case OpCode::Cast:
      set(ir::eval_cast(op.operands[0]->type, op.results[0]->type, in(0)));
      return;
    case OpCode::Bitcast:
      set(ir::eval_bitcast(op.operands[0]->type, op.results[0]->type, in(0)));
      return;
    case OpCode::Fma: {
      ir::Type t = op.results[0]->type;
      set(Scalar::of_float(ir::round_float(t, in(0).f * in(1).f + in(2).f)));
      return;
    }
    case OpCode::Math: {
      std::vector<Scalar> a;
      for (size_t i = 0; i < op.operands.size(); ++i) a.push_back(in(i));
      Scalar r;
      if (!ir::eval_math(op.str_attr, op.results[0]->type, a, &r)) throw ExecutionError("unknown math function " + op.str_attr);
      set(r);
      return;
    }
    case OpCode::PtrAdd: {
      int64_t elem = op.operands[0]->type->element->byte_size();
      set(Scalar::of_int(in(0).i + in(1).i * elem));
      return;
    }
    case OpCode::PtrToInt: case OpCode::IntToPtr:
      set(in(0));
      return;
    case OpCode::Load: {
      ir::Type t = op.results[0]->type;
      if (t->is_vector()) throw ExecutionError("vector loads are not supported in host code");
      if (in(0).i == 0) throw ExecutionError("load through a null pointer in host code");
      set(ir::load_scalar(t, reinterpret_cast<const void*>(in(0).i)));
      return;
    }
    case OpCode::Store: {
      ir::Type t = op.operands[0]->type;
      if (t->is_vector()) throw ExecutionError("vector stores are not supported in host code");
      if (in(1).i == 0) throw ExecutionError("store through a null pointer in host code");
      ir::store_scalar(t, in(0), reinterpret_cast<void*>(in(1).i));
      return;
    }
    case OpCode::Alloca: {
      ir::Type pt = op.results[0]->type;
      size_t bytes = size_t(op.int_attr) * size_t(pt->element->byte_size());
      fr.locals.push_back(std::unique_ptr<char[]>(new char[bytes + size_t(pt->align)]()));
      uintptr_t p = reinterpret_cast<uintptr_t>(fr.locals.back().get());
      p = (p + uintptr_t(pt->align) - 1) / uintptr_t(pt->align) * uintptr_t(pt->align);
      set(Scalar::of_int(int64_t(p)));
      return;
    }
    case OpCode::Printf: {
      std::vector<ir::Type> types;
      std::vector<Scalar> vals;
      for (size_t i = 0; i < op.operands.size(); ++i) {
        types.push_back(op.operands[i]->type);
        vals.push_back(in(i));
      }
      std::string text;
      format_printf(op.str_attr, types, vals, &text);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return;
    }
    case OpCode::Launch: {
      if (!fr.launcher) throw ExecutionError("kernel launch without a launcher");
      LaunchRequest req;
      req.kernel = &op.str_attr;
      for (int i = 0; i < 3; ++i) {
        req.grid[i] = unsigned(in(size_t(i)).i);
        req.block[i] = unsigned(in(size_t(3 + i)).i);
        req.cluster[i] = unsigned(in(size_t(8 + i)).i);
      }
      req.has_cluster = op.int_attr != 0;
      req.smem = unsigned(in(6).i);
      req.stream = reinterpret_cast<void*>(in(7).i);
      for (size_t i = 11; i < op.operands.size(); ++i) {
        req.arg_types.push_back(op.operands[i]->type);
        req.args.push_back(in(i));
      }
      fr.launcher->launch(req);
      return;
    }
    case OpCode::For: {
      const ir::Block* body = op.region_block(0);
      ir::Type it = op.operands[0]->type;
      Scalar iv = in(0), ub = in(1), step = in(2);
      std::vector<Scalar> carried;
      for (size_t i = 3; i < op.operands.size(); ++i) carried.push_back(in(i));
      bool up = ir::eval_cmp(ir::CmpPredicate::Gt, it, step, Scalar::of_int(0));
      if (step.i == 0) throw ExecutionError("for loop with a zero step in host code");
      while (up ? ir::eval_cmp(ir::CmpPredicate::Lt, it, iv, ub) : ir::eval_cmp(ir::CmpPredicate::Gt, it, iv, ub)) {
        get(body->args[0].get()) = iv;
        for (size_t i = 0; i < carried.size(); ++i) get(body->args[i + 1].get()) = carried[i];
        exec_block(*body, fr);
        carried = fr.yielded;
        std::string err;
        ir::eval_binary(OpCode::Add, it, iv, step, &iv, &err);
      }
      for (size_t i = 0; i < op.results.size(); ++i) get(op.results[i].get()) = carried[i];
      return;
    }
    case OpCode::If: {
      exec_block(*op.region_block(in(0).i ? 0 : 1), fr);
      for (size_t i = 0; i < op.results.size(); ++i) get(op.results[i].get()) = fr.yielded[i];
      return;
    }
    case OpCode::While: {
      const ir::Block* before = op.region_block(0);
      const ir::Block* after = op.region_block(1);
      std::vector<Scalar> carried;
      for (size_t i = 0; i < op.operands.size(); ++i) carried.push_back(in(i));
      for (;;) {
        for (size_t i = 0; i < carried.size(); ++i) get(before->args[i].get()) = carried[i];
        exec_block(*before, fr);
        Scalar cond = fr.yielded[0];
        std::vector<Scalar> fwd(fr.yielded.begin() + 1, fr.yielded.end());
        if (!cond.i) {
          for (size_t i = 0; i < op.results.size(); ++i) get(op.results[i].get()) = fwd[i];
          return;
        }
        for (size_t i = 0; i < fwd.size(); ++i) get(after->args[i].get()) = fwd[i];
        exec_block(*after, fr);
        carried = fr.yielded;
      }
    }
    case OpCode::Condition:
    case OpCode::Yield:
    case OpCode::Return:
      collect(0);
      return;
    default:
      throw ExecutionError(std::string("operation '") + ir::opcode_name(op.code) + "' cannot run in host code");
  }
}

}  // namespace opencute::emulator
