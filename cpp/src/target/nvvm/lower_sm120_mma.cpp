// NVVM lowering of the SM120 block-scaled MMA family (ir OpCode::MmaSyncBlockScaled): inline PTX
// mma.sync.aligned.kind::{mxf8f6f4,mxf4,mxf4nvf4}.block_scale.scale_vec::NX (sm_120a).
#include "target/nvvm/op_lowering.h"

#include <stdexcept>

namespace opencute::target {

namespace {

using ir::BlockScaledFormat;

const char* format_name(BlockScaledFormat f) {
  switch (f) {
    case BlockScaledFormat::E2M1: return "e2m1";
    case BlockScaledFormat::E4M3: return "e4m3";
    case BlockScaledFormat::E5M2: return "e5m2";
    case BlockScaledFormat::UE8M0: return "ue8m0";
    case BlockScaledFormat::UE4M3: return "ue4m3";
  }
  return "?";
}

const char* kind_name(ir::Tcgen05Kind k) {
  switch (k) {
    case ir::Tcgen05Kind::MXF4: return "mxf4";
    case ir::Tcgen05Kind::MXF4NVF4: return "mxf4nvf4";
    default: return "mxf8f6f4";
  }
}

void lower_mma_sync_block_scaled(const ir::Op& op, KernelLowering& k) {
  const int64_t m = op.ints.at(0), n = op.ints.at(1), kk = op.ints.at(2), scale_vec = op.ints.at(3);
  const size_t nc = size_t(m * n / 32), nregs = op.operands.size();
  const size_t nab = nregs - nc - 2;  // A and B registers
  const std::string text =
      std::string("mma.sync.aligned.kind::") + kind_name(ir::Tcgen05Kind(op.int_attr)) + ".block_scale.scale_vec::" +
      std::to_string(scale_vec) + "X.m" + std::to_string(m) + "n" + std::to_string(n) + "k" + std::to_string(kk) +
      ".row.col.f32." + format_name(BlockScaledFormat(op.ints.at(4))) + "." +
      format_name(BlockScaledFormat(op.ints.at(5))) + ".f32." + format_name(BlockScaledFormat(op.ints.at(6)));
  const size_t na = size_t(m * kk / 32) * (kk == 64 ? 4 : 8) / 32;  // A's 32-bit registers
  int next = 0;
  auto list = [&](size_t count) {
    std::string s = "{";
    for (size_t i = 0; i < count; ++i) s += (i ? "," : "") + std::string("$") + std::to_string(next++);
    return s + "}";
  };
  // PTX operand order: d, a, b, c, scale-a-data, {byte-id-a, thread-id-a}, scale-b-data, {...}.
  std::string d = list(nc), a = list(na), b = list(nab - na), c = list(nc);
  std::string sfa = "$" + std::to_string(next++), sfb = "$" + std::to_string(next++);
  std::string asm_text = text + " " + d + ", " + a + ", " + b + ", " + c + ", " + sfa + ", {0, 0}, " + sfb + ", {0, 0};";
  std::string constraints, ret = "{", args;
  for (size_t i = 0; i < nc; ++i) {
    constraints += (i ? ",=f" : "=f");
    ret += (i ? ", float" : " float");
  }
  ret += " }";
  for (size_t i = 0; i < nregs; ++i) {
    const bool is_c = i >= nab && i < nab + nc;
    constraints += is_c ? ",f" : ",r";
    args += (i ? ", " : "") + std::string(is_c ? "float " : "i32 ") + k.operand(op.operands[i]);
  }
  std::string call = k.emit_def("call " + ret + " asm \"" + asm_text + "\", \"" + constraints + "\"(" + args + ")");
  for (size_t i = 0; i < nc; ++i) k.define(op, int(i), k.emit_def("extractvalue " + ret + " " + call + ", " + std::to_string(i)));
}

}  // namespace

void register_sm120_mma_lowerings(LoweringTable& t) { t.add(ir::OpCode::MmaSyncBlockScaled, lower_mma_sync_block_scaled); }

}  // namespace opencute::target
