#include "target/nvvm/scalar_registers.h"

#include "target/nvvm/kernel_lowering.h"
#include "target/nvvm/nvvm_types.h"

namespace opencute::target {

using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::Value;

namespace {

using Users = std::unordered_map<const Value*, std::vector<const Op*>>;

// The ops as the lowering meets them: an unrolled loop is its iterations, whose results the loop
// op takes over (a pointer carried out of it leaves its array an array). Only pointers' users are
// asked for, so only theirs are kept: most values of a kernel are numbers.
void collect(const ir::Block& b, const transforms::UnrolledLoops& unrolled, Users* users,
             std::vector<const Op*>* allocas) {
  for (auto& op : b.ops) {
    if (op->code == OpCode::Alloca) allocas->push_back(op.get());
    auto it = unrolled.find(op.get());
    if (it != unrolled.end()) {
      collect(*it->second.block, unrolled, users, allocas);
      for (const Value* v : it->second.results)
        if (v->type->is_pointer()) (*users)[v].push_back(op.get());
      continue;
    }
    for (const Value* v : op->operands)
      if (v->type->is_pointer()) (*users)[v].push_back(op.get());
    for (auto& r : op->regions) collect(*r.block, unrolled, users, allocas);
  }
}

// An element type held as itself in memory and never packed.
bool plain_element(Type e) {
  return e->is_scalar() && !e->is_bool() && (e->width == 32 || e->width == 64) && natural_layout(e) &&
         mem_type(e) == llvm_type(e);
}

}  // namespace

bool ScalarRegisters::qualifies(const Op& alloca, const Users& users) {
  Type pt = alloca.result()->type;
  if (!pt->is_pointer() || pt->space != ir::AddrSpace::Rmem || !plain_element(pt->element)) return false;
  const Type e = pt->element;
  const int64_t bytes = alloca.int_attr * e->byte_size();
  if (alloca.int_attr <= 0 || alloca.int_attr > 4096) return false;
  std::vector<std::pair<const Value*, int64_t>> work{{alloca.result(), 0}};
  std::vector<std::pair<const Value*, int64_t>> found;
  // A load or store of `t` at `offset` covers whole elements of the array.
  auto fits = [&](Type t, int64_t offset) {
    Type lane = t->is_vector() ? t->element : t;
    int lanes = t->is_vector() ? t->lanes : 1;
    return lane == e && offset >= 0 && offset % e->byte_size() == 0 && offset + lanes * e->byte_size() <= bytes;
  };
  while (!work.empty()) {
    auto [p, offset] = work.back();
    work.pop_back();
    found.emplace_back(p, offset);
    auto it = users.find(p);
    if (it == users.end()) continue;
    for (const Op* u : it->second) {
      switch (u->code) {
        case OpCode::PtrAdd: {
          Type step = p->type->element;
          if (u->operands[0] != p || !ir::is_constant(u->operands[1]) || !natural_layout(step) ||
              !u->result()->type->is_pointer())
            return false;
          work.emplace_back(u->result(), offset + ir::constant_int(u->operands[1]) * step->byte_size());
          break;
        }
        case OpCode::Bitcast:
          if (!u->result()->type->is_pointer() || u->result()->type->space != ir::AddrSpace::Rmem) return false;
          work.emplace_back(u->result(), offset);
          break;
        case OpCode::Load:
          if (!fits(u->result()->type, offset)) return false;
          break;
        case OpCode::Store:
          if (u->operands[1] != p || u->operands[0] == p || !fits(u->operands[0]->type, offset)) return false;
          break;
        default:
          return false;
      }
    }
  }
  for (auto& [p, offset] : found) pointers_[p] = Element{&alloca, offset};
  return true;
}

void ScalarRegisters::analyze(const ir::Function& f, const transforms::UnrolledLoops& unrolled) {
  std::vector<const Op*> allocas;
  Users users;
  collect(*f.body, unrolled, &users, &allocas);
  for (const Op* a : allocas) qualifies(*a, users);
}

std::vector<std::string> ScalarRegisters::lanes_of(const Element& at, int lanes) const {
  const std::vector<std::string>& all = scalars_.at(at.array);
  const int64_t first = at.byte_offset / at.array->result()->type->element->byte_size();
  return std::vector<std::string>(all.begin() + first, all.begin() + first + lanes);
}

void ScalarRegisters::lower_load(const Op& op, const Element& at, KernelLowering& k) {
  Type t = op.result()->type;
  Type lane = t->is_vector() ? t->element : t;
  const std::string T = llvm_type(lane), align = std::to_string(lane->byte_size());
  std::vector<std::string> lanes = lanes_of(at, t->is_vector() ? t->lanes : 1);
  std::vector<std::string> values;
  for (const std::string& a : lanes) values.push_back(k.emit_def("load " + T + ", " + T + "* " + a + ", align " + align));
  if (!t->is_vector()) {
    k.define(op, 0, values[0]);
    return;
  }
  std::string acc = "undef";
  for (size_t i = 0; i < values.size(); ++i)
    acc = k.emit_def("insertelement " + llvm_type(t) + " " + acc + ", " + T + " " + values[i] + ", i32 " +
                     std::to_string(i));
  k.define(op, 0, acc);
}

void ScalarRegisters::lower_store(const Op& op, const Element& at, KernelLowering& k) {
  const Value* v = op.operands[0];
  Type t = v->type;
  Type lane = t->is_vector() ? t->element : t;
  const std::string T = llvm_type(lane), align = std::to_string(lane->byte_size());
  std::vector<std::string> lanes = lanes_of(at, t->is_vector() ? t->lanes : 1);
  for (size_t i = 0; i < lanes.size(); ++i) {
    std::string x = t->is_vector() ? k.emit_def("extractelement " + llvm_type(t) + " " + k.operand(v) + ", i32 " +
                                                std::to_string(i))
                                   : k.operand(v);
    k.emit_line("store " + T + " " + x + ", " + T + "* " + lanes[i] + ", align " + align);
  }
}

bool ScalarRegisters::lower(const Op& op, KernelLowering& k) {
  if (pointers_.empty()) return false;
  switch (op.code) {
    case OpCode::Alloca: {
      if (!pointers_.count(op.result())) return false;
      Type e = op.result()->type->element;
      std::vector<std::string>& names = scalars_[&op];
      for (int64_t i = 0; i < op.int_attr; ++i)
        names.push_back(k.emit_def_in_entry("alloca " + llvm_type(e) + ", align " + std::to_string(e->byte_size())));
      return true;
    }
    case OpCode::PtrAdd: case OpCode::Bitcast:
      return pointers_.count(op.result()) > 0;  // an address known at compile time: nothing to emit
    case OpCode::Load: {
      auto it = pointers_.find(op.operands[0]);
      if (it == pointers_.end()) return false;
      lower_load(op, it->second, k);
      return true;
    }
    case OpCode::Store: {
      auto it = pointers_.find(op.operands[1]);
      if (it == pointers_.end()) return false;
      lower_store(op, it->second, k);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace opencute::target
