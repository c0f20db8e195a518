#include "emulator/host_interpreter.h"

#include "emulator/sm90_async.h"

#include <cstdio>
#include <algorithm>
#include <memory>
#include <new>
#include <cstring>

#include "dsl/printf_format.h"

namespace opencute::emulator {

using ir::OpCode;
using ir::Scalar;

struct HostInterpreter::Frame {
  Scalar* regs;  // initial_regs_.size() entries
  std::vector<std::unique_ptr<char[]>> locals;
  LaunchHandler* launcher;
  std::vector<Scalar> yielded;  // operands of the last terminator executed
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

namespace {

// The first kernel argument among a Launch op's operands: grid, block, smem, stream, cluster,
// then the optional events.
size_t launch_first_argument(const ir::Op& op) {
  size_t at = 11;
  if (op.int_attr & ir::kLaunchCompletionEvent) ++at;
  if (op.int_attr & ir::kLaunchProgrammaticEvent) ++at;
  return at;
}

}  // namespace

HostInterpreter::HostInterpreter(const ir::Function& fn) {
  flatten(*fn.body);
  numbering_.clear();
  find_direct_launch();
}

void HostInterpreter::find_direct_launch() {
  const FlatBlock& body = blocks_[0];
  const std::vector<Step>& steps = body.steps;
  const bool one_launch = (steps.size() == 1 || (steps.size() == 2 && steps[1].op->code == OpCode::Return &&
                                                 steps[1].in.empty())) &&
                          steps[0].op->code == OpCode::Launch;
  if (!one_launch) return;
  const Step& s = steps[0];
  const size_t first = launch_first_argument(*s.op);
  // The kernel arguments must be the host arguments themselves, in order.
  if (s.in.size() - first != body.args.size()) return;
  for (size_t i = first; i < s.in.size(); ++i)
    if (s.in[i] != body.args[i - first]) return;
  std::vector<int> operands(first, -1);
  for (size_t i = 0; i < first; ++i)
    for (size_t a = 0; a < body.args.size(); ++a)
      if (s.in[i] == body.args[a]) operands[i] = int(a);
  direct_operands_ = std::move(operands);
  direct_launch_ = &s;
}

int HostInterpreter::reg(const ir::Value* v) {
  auto it = numbering_.find(v);
  if (it != numbering_.end()) return it->second;
  int r = int(initial_regs_.size());
  initial_regs_.emplace_back();
  numbering_.emplace(v, r);
  return r;
}

int HostInterpreter::flatten(const ir::Block& b) {
  int index = int(blocks_.size());
  blocks_.emplace_back();
  std::vector<int> args;
  for (auto& a : b.args) args.push_back(reg(a.get()));
  std::vector<Step> steps;
  for (auto& op : b.ops) {
    if (op->code == OpCode::Constant) {
      // Evaluated once: every call starts from a register file that already holds them.
      ir::Type t = op->results[0]->type;
      initial_regs_[size_t(reg(op->result()))] = t->is_float() ? Scalar::of_float(op->float_attr)
                                                                : Scalar::of_int(op->int_attr);
      continue;
    }
    if (op->code == OpCode::Printf) has_printf_ = true;
    if (op->code == OpCode::For || op->code == OpCode::While) has_loops_ = true;
    Step s;
    s.op = op.get();
    for (ir::Value* v : op->operands) {
      s.in.push_back(reg(v));
      s.in_types.push_back(v->type);
    }
    for (auto& r : op->results) s.out.push_back(reg(r.get()));
    for (auto& region : op->regions) s.regions.push_back(flatten(*region.block));
    if (op->code == OpCode::Launch) {
      s.launch_args_in_place = true;
      for (size_t i = launch_first_argument(*op); i < s.in_types.size(); ++i) {
        ir::Type t = s.in_types[i];
        bool by_value = t->is_pointer() && t->space == ir::AddrSpace::Param;  // a TMA descriptor's bytes
        if (by_value || !(t->is_pointer() || (t->is_int() && t->width <= 64))) s.launch_args_in_place = false;
      }
    }
    steps.push_back(std::move(s));
  }
  blocks_[size_t(index)].args = std::move(args);
  blocks_[size_t(index)].steps = std::move(steps);
  return index;
}

std::vector<Scalar> HostInterpreter::run(const Scalar* args, size_t num_args, LaunchHandler* launcher) const {
  const FlatBlock& body = blocks_[0];
  if (num_args != body.args.size())
    throw ExecutionError("host function expects " + std::to_string(body.args.size()) + " arguments, got " +
                         std::to_string(num_args));
  if (direct_launch_ && launcher) {
    const Step& s = *direct_launch_;
    auto in = [&](size_t i) -> const Scalar& {
      const int a = direct_operands_[i];
      return a >= 0 ? args[a] : initial_regs_[size_t(s.in[i])];
    };
    launch(s, in, args, launcher);
    return {};
  }
  // The register file: on the stack when it is small (the usual host program), else the heap.
  // Raw storage, filled by the copy below (Scalar's member initialisers would zero it first).
  constexpr size_t kStackRegs = 256;
  alignas(Scalar) unsigned char stack_regs[kStackRegs * sizeof(Scalar)];
  std::unique_ptr<Scalar[]> heap_regs;
  const size_t n = initial_regs_.size();
  Frame fr;
  if (n <= kStackRegs) {
    fr.regs = reinterpret_cast<Scalar*>(stack_regs);
  } else {
    heap_regs.reset(new Scalar[n]);
    fr.regs = heap_regs.get();
  }
  std::uninitialized_copy(initial_regs_.begin(), initial_regs_.end(), fr.regs);
  fr.launcher = launcher;
  for (size_t i = 0; i < num_args; ++i) fr.regs[size_t(body.args[i])] = args[i];
  exec_block(0, fr);
  return std::move(fr.yielded);
}

void HostInterpreter::exec_block(int block, Frame& fr) const {
  for (const Step& s : blocks_[size_t(block)].steps) exec(s, fr);
}

namespace {

[[noreturn]] void fail(const ir::Op& op, const std::string& what) {
  throw ExecutionError(what + " in host code" + (op.line ? " (line " + std::to_string(op.line) + ")" : ""));
}

}  // namespace

template <class Operand>
void HostInterpreter::launch(const Step& s, const Operand& in, const Scalar* kernel_args, LaunchHandler* launcher) const {
  const ir::Op& op = *s.op;
  LaunchRequest req;
  req.op = &op;
  for (int i = 0; i < 3; ++i) {
    req.grid[i] = unsigned(in(size_t(i)).i);
    req.block[i] = unsigned(in(size_t(3 + i)).i);
    req.cluster[i] = unsigned(in(size_t(8 + i)).i);
  }
  req.has_cluster = (op.int_attr & ir::kLaunchCluster) != 0;
  req.cooperative = (op.int_attr & ir::kLaunchCooperative) != 0;
  req.pdl = (op.int_attr & ir::kLaunchPdl) != 0;
  req.smem = unsigned(in(6).i);
  req.stream = reinterpret_cast<void*>(in(7).i);
  size_t at = 11;  // launch_first_argument() counts the same operands
  if (op.int_attr & ir::kLaunchCompletionEvent) {
    req.completion_event = reinterpret_cast<void*>(in(at++).i);
    req.completion_event_flags = int(op.ints.at(0));
  }
  if (op.int_attr & ir::kLaunchProgrammaticEvent) {
    req.programmatic_event = reinterpret_cast<void*>(in(at++).i);
    req.programmatic_event_flags = int(op.ints.at(1));
    req.programmatic_trigger_at_block_start = int(op.ints.at(2));
  }
  const size_t kFirstArg = at;
  req.num_args = s.in.size() - kFirstArg;
  if (kernel_args) {
    req.args = kernel_args;
    req.arg_types = s.in_types.data() + kFirstArg;
    req.args_in_place = s.launch_args_in_place;
    launcher->launch(req);
    return;
  }
  // Kernel arguments are gathered on the stack, in raw storage (Scalar's initialisers would
  // zero it first); only lists longer than a kernel takes (256 parameters) allocate.
  constexpr size_t kStackArgs = 256;
  alignas(Scalar) unsigned char small[kStackArgs * sizeof(Scalar)];
  std::unique_ptr<Scalar[]> large;
  Scalar* args = reinterpret_cast<Scalar*>(small);
  if (req.num_args > kStackArgs) {
    large.reset(new Scalar[req.num_args]);
    args = large.get();
  }
  for (size_t i = 0; i < req.num_args; ++i) new (&args[i]) Scalar(in(kFirstArg + i));
  req.args = args;
  req.arg_types = s.in_types.data() + kFirstArg;
  req.args_in_place = s.launch_args_in_place;
  launcher->launch(req);
}

void HostInterpreter::exec(const Step& s, Frame& fr) const {
  const ir::Op& op = *s.op;
  Scalar* regs = fr.regs;
  auto in = [&](size_t i) -> const Scalar& { return regs[s.in[i]]; };
  auto set = [&](Scalar v) { regs[s.out[0]] = v; };
  auto carry_into = [&](const std::vector<int>& dst, const std::vector<Scalar>& src, size_t from = 0) {
    for (size_t i = 0; i < dst.size(); ++i) regs[dst[i]] = src[from + i];
  };
  switch (op.code) {
    case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
    case OpCode::FloorDiv: case OpCode::Min: case OpCode::Max: case OpCode::Pow: case OpCode::And:
    case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr: {
      Scalar r;
      std::string err;
      if (!ir::eval_binary(op.code, op.results[0]->type, in(0), in(1), &r, &err)) fail(op, err);
      set(r);
      return;
    }
    case OpCode::Neg: case OpCode::Not: case OpCode::Abs:
      set(ir::eval_unary(op.code, op.results[0]->type, in(0)));
      return;
    case OpCode::Cmp:
      set(Scalar::of_int(ir::eval_cmp(ir::CmpPredicate(op.int_attr), s.in_types[0], in(0), in(1))));
      return;
    case OpCode::Select:
      set(in(0).i ? in(1) : in(2));
      return;
    case OpCode::Cast:
      set(ir::eval_cast(s.in_types[0], op.results[0]->type, in(0)));
      return;
    case OpCode::Bitcast:
      set(ir::eval_bitcast(s.in_types[0], op.results[0]->type, in(0)));
      return;
    case OpCode::Fma: {
      ir::Type t = op.results[0]->type;
      set(Scalar::of_float(ir::round_float(t, in(0).f * in(1).f + in(2).f)));
      return;
    }
    case OpCode::Math: {
      std::vector<Scalar> a;
      for (size_t i = 0; i < s.in.size(); ++i) a.push_back(in(i));
      Scalar r;
      if (!ir::eval_math(op.str_attr, op.results[0]->type, a, &r)) fail(op, "unknown math function " + op.str_attr);
      set(r);
      return;
    }
    case OpCode::PtrAdd: {
      int64_t bits = s.in_types[0]->element->bit_size();
      set(Scalar::of_int(in(0).i + ((in(1).i * bits) >> 3)));
      return;
    }
    case OpCode::PtrToInt: case OpCode::IntToPtr:
      set(in(0));
      return;
    case OpCode::Load: {
      ir::Type t = op.results[0]->type;
      if (t->is_vector()) fail(op, "a vector load");
      if (in(0).i == 0) fail(op, "a load through a null pointer");
      set(ir::load_scalar(t, reinterpret_cast<const void*>(in(0).i)));
      return;
    }
    case OpCode::Store: {
      ir::Type t = s.in_types[0];
      if (t->is_vector()) fail(op, "a vector store");
      if (in(1).i == 0) fail(op, "a store through a null pointer");
      ir::store_scalar(t, in(0), reinterpret_cast<void*>(in(1).i));
      return;
    }
    case OpCode::Alloca: {
      ir::Type pt = op.results[0]->type;
      size_t bytes = size_t(pt->element->array_bytes(op.int_attr));
      fr.locals.push_back(std::unique_ptr<char[]>(new char[bytes + size_t(pt->align)]()));
      uintptr_t p = reinterpret_cast<uintptr_t>(fr.locals.back().get());
      p = (p + uintptr_t(pt->align) - 1) / uintptr_t(pt->align) * uintptr_t(pt->align);
      set(Scalar::of_int(int64_t(p)));
      return;
    }
    case OpCode::TmaEncode: {
      // The descriptor lives as long as the call: launches copy it (the driver, as a kernel
      // parameter) or finish with it (the emulator) before the host program returns.
      const int rank = int(op.int_attr);
      fr.locals.push_back(std::unique_ptr<char[]>(new char[sizeof(TmaDescriptor) + 64]()));
      uintptr_t raw = reinterpret_cast<uintptr_t>(fr.locals.back().get());
      auto* storage = new (reinterpret_cast<void*>((raw + 63) / 64 * 64)) TmaDescriptor();  // trivially destructible
      uint64_t dims[5], strides[5];
      uint32_t box[5];
      for (int k = 0; k < rank; ++k) {
        dims[k] = uint64_t(in(size_t(1 + k)).i);
        strides[k] = uint64_t(in(size_t(1 + rank + k)).i);
        box[k] = uint32_t(op.ints[size_t(1 + k)]);
      }
      ir::Type elem = op.results[0]->type->element;
      try {
        fill_tma_descriptor(*storage, elem, rank, uint64_t(in(0).i), dims, strides, box, int(op.ints[0]),
                            tma_encode_data_type(op));
      } catch (const std::invalid_argument& e) {
        fail(op, std::string(e.what()) + " (make_tiled_tma_atom" +
                     (op.line ? " at " + op.file + ":" + std::to_string(op.line) : std::string()) + ")");
      }
      if (fr.launcher) fr.launcher->encode_tma(*storage, elem);
      set(Scalar::of_int(int64_t(reinterpret_cast<uintptr_t>(storage))));
      return;
    }
    case OpCode::Printf: {
      std::vector<Scalar> vals;
      for (size_t i = 0; i < s.in.size(); ++i) vals.push_back(in(i));
      std::string text;
      format_printf(op.str_attr, s.in_types, vals, &text);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return;
    }
    case OpCode::Assert:
      if (!in(0).i)
        throw AssertionFailure("host assertion failed: " + op.str_attr + " (" + op.file + ":" + std::to_string(op.line) + ")",
                               op.file, op.line);
      return;
    case OpCode::Launch:
      if (!fr.launcher) fail(op, "a kernel launch without a launcher");
      launch(s, in, nullptr, fr.launcher);
      return;
    case OpCode::For: {
      const FlatBlock& body = blocks_[size_t(s.regions[0])];
      ir::Type it = s.in_types[0];
      Scalar iv = in(0), ub = in(1), step = in(2);
      if (step.i == 0) fail(op, "a for loop with a zero step");
      std::vector<Scalar> carried;
      for (size_t i = 3; i < s.in.size(); ++i) carried.push_back(in(i));
      bool up = ir::eval_cmp(ir::CmpPredicate::Gt, it, step, Scalar::of_int(0));
      std::string err;
      while (ir::eval_cmp(up ? ir::CmpPredicate::Lt : ir::CmpPredicate::Gt, it, iv, ub)) {
        regs[body.args[0]] = iv;
        for (size_t i = 0; i < carried.size(); ++i) regs[body.args[i + 1]] = carried[i];
        exec_block(s.regions[0], fr);
        carried.swap(fr.yielded);
        ir::eval_binary(OpCode::Add, it, iv, step, &iv, &err);
      }
      carry_into(s.out, carried);
      return;
    }
    case OpCode::If:
      exec_block(s.regions[in(0).i ? 0 : 1], fr);
      carry_into(s.out, fr.yielded);
      return;
    case OpCode::While: {
      const FlatBlock& before = blocks_[size_t(s.regions[0])];
      const FlatBlock& after = blocks_[size_t(s.regions[1])];
      std::vector<Scalar> carried;
      for (size_t i = 0; i < s.in.size(); ++i) carried.push_back(in(i));
      for (;;) {
        carry_into(before.args, carried);
        exec_block(s.regions[0], fr);
        if (!fr.yielded[0].i) {
          carry_into(s.out, fr.yielded, 1);
          return;
        }
        carry_into(after.args, fr.yielded, 1);
        exec_block(s.regions[1], fr);
        carried.swap(fr.yielded);
      }
    }
    case OpCode::Condition:
    case OpCode::Yield:
    case OpCode::Return:
      fr.yielded.resize(s.in.size());
      for (size_t i = 0; i < s.in.size(); ++i) fr.yielded[i] = in(i);
      return;
    default:
      throw ExecutionError(std::string("operation '") + ir::opcode_name(op.code) + "' cannot run in host code");
  }
}

}  // namespace opencute::emulator
