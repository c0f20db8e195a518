#include "emulator/sm90_warp.h"

#include <cstdio>

namespace opencute::emulator {
namespace {

std::string hex32(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%08llx", (unsigned long long)v);
  return buf;
}

}  // namespace

uint32_t prmt_b32(uint32_t a, uint32_t b, uint32_t selector) {
  const uint64_t bytes = uint64_t(a) | (uint64_t(b) << 32);
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) {
    uint32_t nib = (selector >> (4 * k)) & 0xf;
    uint32_t byte = uint32_t(bytes >> (8 * (nib & 7))) & 0xff;
    if (nib & 8) byte = (byte & 0x80) ? 0xff : 0x00;
    r |= byte << (8 * k);
  }
  return r;
}

std::string execute_sm90_warp(const Inst& i, Scalar* R, uint32_t m, uint32_t live, int* lane) {
  auto at = [R](int reg, int l) -> Scalar& { return R[size_t(reg) * kWarp + size_t(l)]; };
  if (!m) return "";
  const int l0 = __builtin_ctz(m);
  *lane = l0;
  switch (i.code) {
    case OpCode::ElectOne:
    case OpCode::SyncWarp: {
      const char* what = i.code == OpCode::ElectOne ? "elect_one" : "sync_warp";
      // Every executing lane must name itself in the member mask, and all of them the same mask.
      const uint32_t member = uint32_t(at(i.a, l0).i);
      for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        if (uint32_t(at(i.a, l).i) != member) {
          *lane = l;
          return std::string(what) + " with different member masks across the warp (" + hex32(member) + " and " +
                 hex32(uint32_t(at(i.a, l).i)) + ")";
        }
        if (!((member >> l) & 1)) {
          *lane = l;
          return std::string(what) + " by lane " + std::to_string(l) + ", which is not in its member mask " + hex32(member);
        }
      }
      if (i.code == OpCode::ElectOne) {
        // The leader is the lowest active lane of the mask (the GPU may pick any one of them).
        for (uint32_t mm = m; mm; mm &= mm - 1) {
          int l = __builtin_ctz(mm);
          at(i.dst, l).i = l == l0 ? 1 : 0;
        }
      }
      return "";
    }
    case OpCode::SetMaxNReg:
      // .sync.aligned: the whole warp executes it together; the register budget itself does not
      // exist on the CPU.
      if (m != live)
        return std::string(i.imm >> 32 ? "setmaxregister_increase" : "setmaxregister_decrease") +
               " (setmaxnreg.sync.aligned) executed by only some threads of the warp (lanes " + hex32(m) + " of " +
               hex32(live) + ")";
      return "";
    case OpCode::Prmt:
      for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        uint32_t r = prmt_b32(uint32_t(at(i.a, l).i), uint32_t(at(i.b, l).i), uint32_t(at(i.c, l).i));
        at(i.dst, l).i = int32_t(r);
      }
      return "";
    case OpCode::WarpUniform: {
      const Scalar first = at(i.a, l0);
      for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        if (at(i.a, l).i != first.i) {
          *lane = l;
          return "make_warp_uniform of a value that differs across the warp (lane " + std::to_string(l0) + ": " +
                 std::to_string(first.i) + ", lane " + std::to_string(l) + ": " + std::to_string(at(i.a, l).i) + ")";
        }
        at(i.dst, l) = at(i.a, l);
      }
      return "";
    }
    default:
      return std::string("not an SM90 warp op: ") + ir::opcode_name(i.code);
  }
}

bool lower_sm90_warp(DeviceEmulator::Program& p, const ir::Op& op) {
  auto reg_or = [&](size_t k) { return k < op.operands.size() ? p.reg(op.operands[k]) : -1; };
  Inst i(K::Sm90Warp);
  i.op = &op;
  i.code = op.code;
  switch (op.code) {
    case OpCode::ElectOne: case OpCode::SyncWarp: case OpCode::SetMaxNReg: case OpCode::Prmt: case OpCode::WarpUniform:
      break;
    case OpCode::ClusterSreg: case OpCode::ClusterBarrier: case OpCode::MapSharedRank:
      i.kind = K::Cluster;
      break;
    default:
      return false;
  }
  i.a = reg_or(0), i.b = reg_or(1), i.c = reg_or(2);
  // int_attr in the low 32 bits, ints[0] (dimension / aligned / increase) above them.
  i.imm = op.int_attr | (op.ints.empty() ? 0 : op.ints[0] << 32);
  if (!op.results.empty()) {
    i.dst = p.reg(op.result());
    i.type = op.result()->type;
  }
  p.emit(std::move(i));
  return true;
}

}  // namespace opencute::emulator
