#include "target/nvvm/lower_sm80_mma.h"

#include "target/nvvm/nvvm_types.h"
#include "target/nvvm/op_lowering.h"

#include <cctype>
#include <stdexcept>

namespace opencute::target {

namespace {

using ir::Type;

// The PTX name of an MMA operand type.
std::string ptx_type(Type t) {
  if (t->is_f16()) return "f16";
  if (t->is_bf16()) return "bf16";
  if (t->is_f32()) return "f32";
  if (t->is_float() && t->width == 8) {
    std::string s = ir::to_string(t);
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (s.find("e4m3") != std::string::npos) return "e4m3";
    if (s.find("e5m2") != std::string::npos) return "e5m2";
  }
  throw std::runtime_error("mma.sync: no PTX operand type for " + ir::to_string(t));
}

// The value's bits as an integer of its width (f16 is `half` in LLVM; bf16 and 8-bit floats
// are already integers).
std::string as_bits(Type t, const std::string& v, const std::function<std::string(const std::string&)>& def) {
  if (t->is_f16()) return def("bitcast half " + v + " to i16");
  return v;
}

// Packs values (each `bits` wide) into 32-bit registers, lowest index in the lowest bits.
std::vector<std::string> pack(Type t, const std::vector<std::string>& vals,
                              const std::function<std::string(const std::string&)>& def) {
  int bits = t->width;
  int per = 32 / bits;
  std::string it = "i" + std::to_string(bits);
  std::vector<std::string> regs;
  if (per == 2) {
    // A pair of 16-bit values as a <2 x T> register: when both come from one <2 x T> read of the
    // fragment, LLVM folds this back to that value and the register needs no packing.
    std::string et = t->is_f16() ? "half" : "i16", pair = "<2 x " + et + ">";
    for (size_t r = 0; 2 * r < vals.size(); ++r) {
      std::string v = def("insertelement " + pair + " undef, " + et + " " + vals[2 * r] + ", i32 0");
      v = def("insertelement " + pair + " " + v + ", " + et + " " + vals[2 * r + 1] + ", i32 1");
      regs.push_back(def("bitcast " + pair + " " + v + " to i32"));
    }
    return regs;
  }
  for (size_t r = 0; r * size_t(per) < vals.size(); ++r) {
    std::string acc;
    for (int j = 0; j < per; ++j) {
      std::string w = def("zext " + it + " " + as_bits(t, vals[r * size_t(per) + size_t(j)], def) + " to i32");
      if (j) w = def("shl i32 " + w + ", " + std::to_string(j * bits));
      acc = j ? def("or i32 " + acc + ", " + w) : w;
    }
    regs.push_back(acc);
  }
  return regs;
}

}  // namespace

std::string mma_sync_instruction(const ir::Op& op) {
  int m = int(op.ints.at(0)), n = int(op.ints.at(1)), k = int(op.ints.at(2));
  size_t na = size_t(m * k / 32), nb = size_t(n * k / 32);
  Type a = op.operands.at(0)->type, b = op.operands.at(na)->type, c = op.operands.at(na + nb)->type;
  Type d = op.result(0)->type;
  return "mma.sync.aligned.m" + std::to_string(m) + "n" + std::to_string(n) + "k" + std::to_string(k) + ".row.col." +
         ptx_type(d) + "." + ptx_type(a) + "." + ptx_type(b) + "." + ptx_type(c);
}

std::vector<std::string> lower_mma_sync(const ir::Op& op, const std::vector<std::string>& operands,
                                        const std::function<std::string(const std::string&)>& def) {
  int m = int(op.ints.at(0)), n = int(op.ints.at(1)), k = int(op.ints.at(2));
  size_t na = size_t(m * k / 32), nb = size_t(n * k / 32), nc = size_t(m * n / 32);
  if (operands.size() != na + nb + nc || op.results.size() != nc)
    throw std::runtime_error("mma.sync: operand counts do not match m" + std::to_string(m) + "n" + std::to_string(n) +
                             "k" + std::to_string(k));
  Type at = op.operands[0]->type, bt = op.operands[na]->type, ct = op.operands[na + nb]->type;
  Type dt = op.result(0)->type;
  auto slice = [&](size_t from, size_t count) {
    return std::vector<std::string>(operands.begin() + long(from), operands.begin() + long(from + count));
  };
  std::vector<std::string> a_regs = pack(at, slice(0, na), def);
  std::vector<std::string> b_regs = pack(bt, slice(na, nb), def);
  // f32 accumulators are one register per value; f16 accumulators two per register.
  bool c_packed = !ct->is_f32(), d_packed = !dt->is_f32();
  std::vector<std::string> c_regs = c_packed ? pack(ct, slice(na + nb, nc), def) : slice(na + nb, nc);
  size_t nd_regs = d_packed ? nc / 2 : nc;

  std::string constraints;
  int next = 0;
  auto operand_list = [&](size_t count) {
    std::string s = "{";
    for (size_t i = 0; i < count; ++i) s += (i ? "," : "") + std::string("$") + std::to_string(next++);
    return s + "}";
  };
  // Numbered in PTX operand order (d, a, b, c): one statement each, since the operands of a
  // single `+` chain may be evaluated in any order.
  std::string d_list = operand_list(nd_regs);
  std::string a_list = operand_list(a_regs.size());
  std::string b_list = operand_list(b_regs.size());
  std::string c_list = operand_list(c_regs.size());
  std::string text = mma_sync_instruction(op) + " " + d_list + ", " + a_list + ", " + b_list + ", " + c_list + ";";
  std::string dcon = d_packed ? "=r" : "=f", ccon = c_packed ? "r" : "f";
  for (size_t i = 0; i < nd_regs; ++i) constraints += (i ? "," : "") + dcon;
  for (size_t i = 0; i < a_regs.size() + b_regs.size(); ++i) constraints += ",r";
  for (size_t i = 0; i < c_regs.size(); ++i) constraints += "," + ccon;
  std::string reg_t = d_packed ? "i32" : "float", c_reg_t = c_packed ? "i32" : "float";
  std::string ret = "{";
  for (size_t i = 0; i < nd_regs; ++i) ret += (i ? ", " : " ") + reg_t;
  ret += " }";
  std::string args;
  for (auto& r : a_regs) args += (args.empty() ? "" : ", ") + std::string("i32 ") + r;
  for (auto& r : b_regs) args += ", i32 " + r;
  for (auto& r : c_regs) args += ", " + c_reg_t + " " + r;
  std::string call = def("call " + ret + " asm \"" + text + "\", \"" + constraints + "\"(" + args + ")");
  std::vector<std::string> out;
  for (size_t i = 0; i < nd_regs; ++i) {
    std::string r = def("extractvalue " + ret + " " + call + ", " + std::to_string(i));
    if (!d_packed) {
      out.push_back(r);
      continue;
    }
    std::string v = def("bitcast i32 " + r + " to <2 x half>");
    out.push_back(def("extractelement <2 x half> " + v + ", i32 0"));
    out.push_back(def("extractelement <2 x half> " + v + ", i32 1"));
  }
  return out;
}

namespace {

void lower_mma_sync_op(const ir::Op& op, KernelLowering& k) {
  std::vector<std::string> in;
  for (const ir::Value* v : op.operands) in.push_back(k.operand(v));
  std::vector<std::string> out;
  try {
    out = lower_mma_sync(op, in, [&](const std::string& rhs) { return k.emit_def(rhs); });
  } catch (const std::runtime_error& e) {
    k.error(op, e.what());
  }
  for (size_t i = 0; i < out.size(); ++i) k.define(op, int(i), out[i]);
}

}  // namespace

void register_sm80_mma_lowerings(LoweringTable& t) { t.add(ir::OpCode::MmaSync, lower_mma_sync_op); }

}  // namespace opencute::target
