// The emulator's program: the kernel lowered to a linear list of instructions over register
// numbers, with mask-stack control instructions (see device_emulator.h). Private to the
// emulator: device_lowering.cpp builds it, warp_interpreter.cpp runs it through the op families'
// handlers (op_handlers.h).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "emulator/device_emulator.h"

namespace opencute::emulator {

using ir::OpCode;
using ir::Scalar;
using ir::Type;

namespace detail {

constexpr int kWarp = 32;

enum class K : uint8_t {
  // value instructions; `width` slots are processed (vectors occupy consecutive registers)
  Binary, AddI32, SubI32, MulI32, AddF32, MulF32, Unary, Cmp, CmpI32, Select, Cast, Bitcast, Fma, Math,
  PtrAdd, Move, Load, Store, Alloca, VecInsert, VecSplat, Special, Printf, PMove,
  Shuffle, Vote, WarpRedux, Atomic, SmemAddr, Assert,
  MmaSync,  // emulator/sm80_mma.cpp
  MmaSyncBlockScaled,  // emulator/sm120_mma.cpp
  Sm80Copy,  // cp.async / commit / wait / ldmatrix / stmatrix (emulator/sm80_copy.cpp); code says which
  Wgmma,     // wgmma.mma_async / fence / commit / wait (emulator/sm90_mma.cpp); code says which
  Sm90Async,  // mbarrier ops, fences, TMA (emulator/sm90_async.cpp); code says which
  Sm90Tensormap,  // copy / replace / fence of TMA descriptors in memory (emulator/sm90_tensormap.cpp)
  Sm90Warp,  // elect / sync_warp / setmaxnreg / prmt / warp_uniform (emulator/sm90_warp.cpp); code says which
  Cluster,   // cluster registers, barrier.cluster, mapa (emulator/sm90_warp.cpp); code says which
  ClusterLaunchControl,  // clusterlaunchcontrol try_cancel / query_cancel (emulator/cluster_launch_control.cpp)
  Sm100Tmem,  // tensor memory: alloc / dealloc / relinquish, tcgen05.ld / st / cp / wait / fence (emulator/sm100_tmem.cpp)
  Sm100Mma,   // tcgen05.mma and tcgen05.commit (emulator/sm100_mma.cpp); code says which
  // control
  Barrier, NamedBarrier, If, Else, EndIf, LoopBegin, ForTest, ForStep, WhileTest, Jump, LoopEnd, Return,
};
// The handler table (op_handlers.h) has a slot per kind: Return stays last.
constexpr size_t kNumInstKinds = size_t(K::Return) + 1;

}  // namespace detail

using detail::K;
using detail::kNumInstKinds;
using detail::kWarp;

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
  ir::AddrSpace space = ir::AddrSpace::Generic;  // of the pointer a memory access goes through
  std::vector<int> srcs, dsts;       // PMove / Math / Printf operands
  std::vector<Type> types;           // Printf operand types
  const ir::Op* op = nullptr;
  ir::MathFunction math;             // Math: the function, resolved when lowered
};

struct DeviceEmulator::Program {
  std::vector<Inst> code;
  std::vector<std::pair<int, Scalar>> constants;  // (register, value), broadcast to all lanes
  std::vector<int> arg_regs;
  int local_bytes = 0;  // per-thread local array bytes
  // Shared memory of a block: static allocations from offset 0, then the launch's dynamic bytes
  // from dyn_smem_offset; smem_align is the alignment of the block's buffer.
  int64_t static_smem_bytes = 0;
  int64_t dyn_smem_offset = 0;
  int dyn_smem_align = 16;
  int smem_align = 16;
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

  // Raises ExecutionError: `op` cannot run on the emulator (diagnostics.cpp words the message).
  [[noreturn]] static void unsupported(const ir::Op& op, const std::string& kernel, const std::string& why = "");

  void lower_block(const ir::Block& b, const Term& term, const std::string& kname, bool* has_printf);
};

}  // namespace opencute::emulator
