// The PTX executor's decoded form of a PTX module: what the parser (ptx_parser.cpp) builds from
// the text libNVVM emitted, and what the scheduler (ptx_scheduler.cpp) runs.
//
// Each instruction is decoded once: its operands become register indices, immediates, resolved
// symbol addresses and vector operand lists; its opcode's family (an entry in PtxFamilyTable)
// fills the instruction's run function and the few decoded fields it needs. Interpreting is then
// a call per instruction with no string handling.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "emulator/host_interpreter.h"

namespace opencute::emulator::ptx {

// PTX scalar types as the executor computes with them.
enum class PType : uint8_t {
  None, Pred, B8, B16, B32, B64, B128, U8, U16, U32, U64, S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64, TF32, E4M3, E5M2, E4M3x2, E5M2x2
};
int ptype_bits(PType t);
bool ptype_is_signed(PType t);
bool ptype_is_float(PType t);  // f16 / bf16 (and their pairs), f32, f64, tf32, fp8
// The type a modifier names (".f32" without the dot), or None.
PType ptype_from_name(const std::string& name);

// State spaces of addresses.
enum class Space : uint8_t { Generic, Global, Shared, SharedCluster, Local, Param, Const };

// Special registers (%tid.x ...).
enum class Special : uint8_t {
  TidX, TidY, TidZ, NtidX, NtidY, NtidZ, CtaidX, CtaidY, CtaidZ, NctaidX, NctaidY, NctaidZ,
  LaneId, WarpId, NWarpId, ClusterIdX, ClusterIdY, ClusterIdZ, NClusterIdX, NClusterIdY, NClusterIdZ,
  ClusterCtaidX, ClusterCtaidY, ClusterCtaidZ, ClusterNctaidX, ClusterNctaidY, ClusterNctaidZ,
  ClusterCtaRank, ClusterNctaRank, IsExplicitCluster, LanemaskEq, LanemaskLt, LanemaskLe, LanemaskGt,
  LanemaskGe, Clock, Clock64, GlobalTimer, SmId, NSmId, GridId, DynamicSmemSize, TotalSmemSize,
  AggrSmemSize
};

struct Operand {
  enum Kind : uint8_t { None, Reg, Imm, Vec, Addr, Spec, Label, Sink };
  Kind kind = None;
  bool negate = false;      // !%p
  Space space = Space::Generic;  // of a symbol an Imm or Addr resolved from
  Special special = Special::TidX;
  int32_t reg = -1;         // Reg; Addr: base register or -1
  int64_t imm = 0;          // Imm: bits; Addr: offset (symbol address included); Label: pc
  std::vector<Operand> elems;  // Vec
  std::string symbol;       // the name written, for messages and late resolution
};

// A source line of the kernel (file, line), 0 when unknown.
struct UserLine {
  std::string file;
  int line = 0;
};

struct Inst;
struct ThreadCtx;
struct CollectiveCtx;

// How a thread goes on after an instruction.
enum class Step : uint8_t {
  Next,      // the next instruction
  Jumped,    // to the pc the instruction set
  Block,     // the thread waits (a barrier, an mbarrier, a warp-collective); pc stays on the instruction
  Exit,      // the thread ends
  Yield,     // the next instruction, after the other threads had a turn (a failed mbarrier.try_wait)
};

// Runs `i` for one thread.
using ThreadFn = Step (*)(const Inst& i, ThreadCtx& t);
// Runs a warp- or warpgroup-collective instruction once for all its threads (lane order).
using CollectiveFn = void (*)(const Inst& i, CollectiveCtx& c);

constexpr int kConvergedLanes = -2;

// How wide a collective instruction's group is.
enum class Scope : uint8_t { Thread, Warp, Warpgroup };

struct Inst {
  ThreadFn run = nullptr;
  CollectiveFn collective = nullptr;  // set for warp / warpgroup collectives
  Scope scope = Scope::Thread;
  // Collectives with a membermask operand (shfl.sync ...): its index. -1: the whole warp;
  // kConvergedLanes: the lanes that reach the instruction together (activemask).
  int member_mask_operand = -1;
  int32_t guard = -1;            // predicate register of @%p, -1: none
  bool guard_negated = false;
  std::string opcode;            // the whole opcode ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
  std::string base;              // its first word ("mma")
  std::vector<std::string> mods; // the words after it, without dots
  std::vector<Operand> ops;
  int line = 0;                  // in the PTX text
  UserLine user;                 // the kernel's source line, where the lowering marked it
  std::string text;              // the statement, for messages
  // Decoded by the family.
  PType type = PType::None, type2 = PType::None, type3 = PType::None, type4 = PType::None;
  Space space = Space::Generic;
  int32_t i0 = 0, i1 = 0, i2 = 0, i3 = 0;
  uint32_t flags = 0;
  bool has_mod(const std::string& m) const;
};

struct ParamDecl {
  std::string name;
  int size = 0, align = 1, offset = 0;
};

struct VarDecl {  // a .shared / .local / .global variable
  std::string name;
  Space space = Space::Shared;
  int64_t size = 0;
  int align = 1;
  bool dynamic = false;           // extern .shared ... name[]: the launch's dynamic shared memory
  std::vector<uint8_t> init;      // .global initialisers (printf formats)
  int64_t offset = 0;             // in its space's window (module globals: index into the module's storage)
};

struct Kernel {
  std::string name;
  std::vector<ParamDecl> params;
  int param_bytes = 0;
  std::vector<VarDecl> shared;     // static shared (the dynamic one last, when declared)
  int64_t static_shared_bytes = 0;
  int64_t dynamic_shared_offset = 0;  // where dynamic shared memory starts
  int64_t local_bytes = 0;
  std::vector<VarDecl> locals;
  int num_regs = 0;
  std::vector<Inst> code;
  std::vector<std::string> reg_names;  // for messages
};

struct Module {
  std::string target;  // "sm_90a"
  std::vector<Kernel> kernels;
  std::vector<VarDecl> globals;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> global_storage;  // one buffer per global
  const Kernel* find(const std::string& name) const;
};

// An instruction or a construct the executor does not run, or malformed text (raised to Python
// as a DSLRuntimeError, as the emulator's errors are).
struct PtxError : ExecutionError {
  using ExecutionError::ExecutionError;
};

// Fills an instruction's run (or collective) function and decoded fields from its opcode and
// operands; throws PtxError naming what it cannot run.
using DecodeFn = void (*)(Inst& i);

// The instruction families: each family file registers the decoder of its base opcodes
// (register_ptx_<family>). A new family (tcgen05.*) adds one file and one registration call in
// ptx_families.cpp.
class PtxFamilyTable {
 public:
  void add(const std::string& base, DecodeFn fn);  // throws std::logic_error on a second claim
  DecodeFn find(const std::string& base) const;    // nullptr when none
 private:
  std::unordered_map<std::string, DecodeFn> fns_;
};
const PtxFamilyTable& ptx_families();

// Parses a whole module and decodes every instruction.
std::unique_ptr<Module> parse_ptx(const std::string& text);

}  // namespace opencute::emulator::ptx
