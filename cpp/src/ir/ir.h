// The IR core: SSA values, operations with nested regions, functions and modules.
//
// Control flow is structured only (for / if / while), as in MLIR's scf dialect: values leave a
// region through its terminator (yield / condition) and become the results of the region op.
// Each region holds exactly one block. Ownership: Module -> Function -> Block -> Op -> Region
// -> Block; values are owned by the op (results) or block (arguments) that defines them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/types.h"

namespace opencute::ir {

struct Op;
struct Block;
struct Function;

enum class OpCode : uint8_t {
  // value producers
  Constant,  // int_attr / float_attr holds the value
  Add, Sub, Mul, Div, Rem, FloorDiv, Min, Max, Pow,  // binary arithmetic (int or float)
  And, Or, Xor, Shl, Shr,                            // integer bit ops; Shr is arithmetic when signed
  Neg, Not, Abs,                                     // unary
  Cmp,       // int_attr = CmpPredicate; result i1
  Select,    // (cond, a, b)
  Cast,      // numeric conversion to the result type (semantics from the two types)
  Bitcast,   // same width reinterpretation
  Fma,       // a*b+c
  Math,      // str_attr = function name (exp, exp2, log, log2, sqrt, rsqrt, sin, cos, tanh, erf, ...)
  PtrAdd,    // (ptr, index) -> ptr advanced by index elements
  PtrToInt, IntToPtr,
  Load,      // (ptr) -> value; result may be a vector (vectorised access)
  Store,     // (value, ptr)
  Alloca,    // int_attr = element count; result is an rmem pointer
  VecExtract,  // (vector, index) -> lane; index is int_attr
  VecInsert,   // (vector, scalar) -> vector; index is int_attr
  VecSplat,    // (scalar) -> vector
  // hardware ids and synchronisation; int_attr = dimension (0,1,2) where relevant
  ThreadIdx, BlockIdx, BlockDim, GridDim, LaneIdx, WarpIdx,
  Barrier,   // sync_threads
  Printf,    // str_attr = C printf format with one conversion per operand
  // warp, atomic and shared-memory ops; kinds, orders and scopes are in arch_attributes.h
  Shuffle,      // (value, offset, clamp, member mask), all i32 -> i32; int_attr = ShuffleKind
  Vote,         // (pred i1, member mask i32) -> i32 lane bits (ballot) or i1; int_attr = VoteKind
  Atomic,       // (ptr, value), or (ptr, compare, value) for cas -> the old value; int_attr = AtomicKind,
                // ints = {MemoryOrder, MemoryScope}
  SmemAlloc,    // int_attr = element count; result: a static shared-memory array of the kernel
  DynSmem,      // result: the block's dynamic shared memory (aligned as the result type says)
  DynSmemSize,  // -> i32: bytes of dynamic shared memory the launch asked for
  Assert,       // (cond i1); str_attr = message; file/line = where the user wrote the assertion
  Launch,    // str_attr = kernel name; operands: grid(3), block(3), smem, stream, cluster(3), args...
  // structured control flow
  For,        // (lb, ub, step, init...) region body(iv, iters...) -> results; int_attr = unroll
  If,         // (cond) regions then/else -> results
  While,      // (init...) regions before(args)->Condition, after(args)->Yield -> results
  Condition,  // terminator of While.before: (cond, forwarded...)
  Yield,      // terminator of For/If/While.after
  Return,     // terminator of a function body
  // SM80 MMA family (cute/atom/mma_sm80, target/nvvm/lower_sm80_mma, emulator/sm80_mma)
  MmaSync,    // warp-wide mma.sync: (A values..., B values..., C values...) -> D values; ints = {m, n, k};
              // each lane passes its fragment values in PTX operand order (see mma_sm80.h)
  // SM120 block-scaled MMA family (cute/atom/mma_sm120, target/nvvm/lower_sm120_mma, emulator/sm120_mma)
  MmaSyncBlockScaled,  // warp-wide mma.sync .block_scale: (A regs i32..., B regs i32..., C f32...,
                       // SFA i32, SFB i32) -> D f32...; int_attr = Tcgen05Kind (MXF8F6F4 / MXF4 /
                       // MXF4NVF4); ints = {m, n, k, scale_vec, A format, B format, SF format}
                       // (BlockScaledFormat); selectors byte-id = thread-id = 0
  // SM80 copies (cute/atom/copy_sm80, target/nvvm/lower_sm80_copy, emulator/sm80_copy)
  CpAsync,        // (smem dst ptr, gmem src ptr, i32 src bytes); int_attr = copy bytes (4/8/16);
                  // ints = {cache global}; bytes past src bytes are zero-filled
  CpAsyncCommit,  // closes the thread's current group of cp.async
  CpAsyncWait,    // int_attr = N: waits until at most N of the thread's committed groups are pending
  CpAsyncMbarrierArrive,  // (mbarrier ptr): an arrive on the mbarrier once all of the thread's earlier
                          // cp.async completed; int_attr = 1 for .noinc (the arrival is one of the
                          // barrier's expected count), 0 (the pending count is raised first: no net arrival)
  LdMatrix,       // (smem row ptr) -> vector of 32*num/width elements; int_attr = num matrices,
                  // ints = {transpose[, m16n16[, 4: m8n16 .b8x16.b4x16_p64]]}; warp-collective (lane i
                  // of each 8-lane group names a row); m16n16 (.b8, sm_100): 64*num bits, lane i of 16
                  // names row i of matrix i/16; b4x16_p64: a row's 8 bytes of packed 4-bit values
                  // (then 8 of padding) widened to the low bits of 16 bytes, laid out as the .b16 load's
  StMatrix,       // (smem row ptr, vector value); int_attr / ints as LdMatrix
  // named barriers (the cf family: Ampere examples' pipeline.NamedBarrier)
  NamedBarrier,  // (id i32 in [0,16), thread count i32, a multiple of 32); int_attr = NamedBarrierKind
  // MLIR-level surface and launch control (mlir15: cutlass._mlir.dialects.llvm, cute.arch.griddepcontrol_*;
  // target/nvvm/lower_launch_control.cpp, emulator rejects InlineAsm and runs GridDepControl in order)
  InlineAsm,       // (operands...) -> 0 or 1 result; the one opaque op: str_attr = constraints '\0' asm text
                   // (inline_asm_constraints/inline_asm_text), int_attr = has side effects; the CPU emulator
                   // cannot run it
  GridDepControl,  // int_attr = GridDepControlKind: programmatic dependent launch (sm_90+)
  // SM90 warpgroup MMA family (cute/atom/mma_sm90, target/nvvm/lower_sm90_mma, emulator/sm90_mma)
  Wgmma,        // wgmma.mma_async, issued by the 128 threads of a warpgroup: (A, B descriptor i64,
                // scale_d i1, C values...) -> D values, A being a descriptor i64 or (A from registers)
                // the thread's A fragment values; ints = {m, n, k, A FloatKind, B FloatKind,
                // A major, B major (0 K, 1 MN), A from registers}; D = A*B + (scale_d ? C : 0)
  WgmmaFence,   // wgmma.fence: register writes before it are seen by the following wgmma
  WgmmaCommit,  // closes the warpgroup's current group of wgmma
  WgmmaWait,    // int_attr = N: waits until at most N of the committed wgmma groups are pending
  // SM90 asynchronous machinery (hasync: ir/async_attributes.h for the kinds, dsl/mbarrier,
  // target/nvvm/lower_sm90_async.cpp, emulator/sm90_async.cpp)
  MbarrierInit,    // (mbarrier smem ptr, arrival count i32)
  MbarrierArrive,  // (mbarrier ptr, value i32[, peer cta rank i32]); int_attr = MbarrierArriveKind (value = arrival
                   // count or tx bytes); with the rank operand it signals the same offset in that CTA of the cluster
  MbarrierWait,    // (mbarrier ptr, phase parity i32) -> nothing (Wait) or i1; int_attr = MbarrierWaitKind
  Fence,           // int_attr = FenceKind (memory / proxy fences)
  // TMA (cute/atom/copy_sm90): `desc` is the generic address of a CUtensorMap (a grid-constant
  // kernel parameter); coordinates are i32 in the tensor map's dimension order (dim 0 innermost)
  TmaLoad,    // (desc, smem dst ptr, mbarrier ptr, coords..., [i16 multicast mask]); int_attr = rank,
              // ints = {multicast, predicated[, CTA group 2: the bytes complete the pair leader's mbarrier]};
              // ints = {multicast}; the bytes landing complete transactions on the mbarrier
  TmaStore,   // (desc, smem src ptr, coords...); int_attr = rank; joins the thread's bulk group
  BulkLoad,    // (smem dst ptr, global src ptr, mbarrier ptr, bytes i32): the non-tensor bulk copy
               // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes of `bytes` contiguous
               // bytes (a multiple of 16, both addresses 16-byte aligned), issued by one elected lane;
               // the bytes landing complete transactions on the mbarrier
  BulkCommit,  // cp.async.bulk.commit_group
  BulkWait,    // int_attr = N, ints = {read}: wait until at most N bulk groups are pending (their reads)
  TmaDescOp,   // (desc); int_attr = TmaDescOpKind: prefetch.tensormap / fence.proxy.tensormap acquire
  TmaEncode,   // host: (global ptr, extents i64 x rank, byte strides i64 x rank) -> param-space pointer to a
               // TMA descriptor (the result type's element is the element type); int_attr = rank,
               // ints = {swizzle bytes, box sizes x rank[, 14: CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B,
               // 4-bit elements each in a byte slot of shared memory]}. In a kernel: a generic pointer that only
               // TmaDescCopy reads (the GPU form sets the slot's fields with tensormap.replace)
  // Hopper warp/CTA and cluster family (hmisc: dsl/sm90_ops, target/nvvm/lower_sm90_warp.cpp,
  // emulator/sm90_warp.cpp; clusters are co-scheduled by block_scheduler.cpp)
  ClusterSreg,     // -> i32; int_attr = ClusterSregKind, ints = {dimension 0..2}
  ClusterBarrier,  // int_attr = ClusterBarrierKind (barrier.cluster.arrive[.relaxed] / .wait); ints = {aligned}
  MapSharedRank,   // (ptr to shared memory, i32 CTA rank) -> generic ptr to the same offset in that CTA's shared
                   // memory (mapa: distributed shared memory)
  ElectOne,        // (i32 member mask) -> i1: true in exactly one active lane of the mask (elect.sync)
  SyncWarp,        // (i32 member mask): bar.warp.sync
  SetMaxNReg,      // int_attr = register count per thread; ints = {1: setmaxnreg.inc, 0: .dec} (sm_90a)
  Prmt,            // (a i32, b i32, selector i32) -> i32: prmt.b32 (the default mode)
  WarpUniform,     // (value) -> value: the value is the same in every active lane (the emulator checks it)
  // SM90 tensor maps in device memory (gg: cute/atom/tensormap_sm90, target/nvvm/lower_sm90_tensormap.cpp,
  // emulator/sm90_tensormap.cpp): a kernel copies a TMA descriptor into a 128-byte slot of global or shared
  // memory, re-points it at another tensor and publishes it; TMA copies may then name the slot
  TmaDescCopy,           // (descriptor ptr, dst ptr to global or shared memory): the 128-byte tensor map
  TmaDescReplace,        // (tensor map ptr, value i64/i32); int_attr = TmaDescField, ints = {ordinal}
  TmaDescCpFenceRelease, // (global ptr, shared ptr): tensormap.cp_fenceproxy ... release.gpu, 128 bytes
  // Blackwell cluster launch control (clc: dsl/cluster_launch_control, target/nvvm/lower_cluster_launch_control.cpp,
  // emulator/cluster_launch_control.cpp): a running cluster takes over the work of a cluster not launched yet
  ClcTryCancel,    // (16-byte response smem ptr, mbarrier smem ptr); ints = {multicast}: asks to cancel the launch
                   // of a cluster that has not started; the 16-byte response lands at the pointer and completes 16
                   // transaction bytes on the mbarrier (with multicast: the same offsets in every CTA of the cluster)
  ClcQueryCancel,  // (response smem ptr) -> (x i32, y i32, z i32, canceled i1): the response's first ctaid of the
                   // canceled cluster (undefined unless canceled)
  // SM100 tensor memory and tcgen05 (dsl/sm100_ops, cute/atom/mma_sm100, cute/atom/copy_sm100,
  // target/nvvm/lower_sm100.cpp, emulator/sm100_tmem.cpp + emulator/sm100_mma.cpp). Tensor-memory
  // addresses are i32 (lane << 16 | column); int_attr = CTA group (1 or 2) where the PTX form has one.
  TmemAlloc,       // (smem ptr receiving the address, i32 column count): tcgen05.alloc (warp-wide)
  TmemDealloc,     // (i32 tensor-memory address, i32 column count): tcgen05.dealloc (warp-wide)
  TmemRelinquish,  // tcgen05.relinquish_alloc_permit (warp-wide)
  Tcgen05Mma,      // (D address i32, A descriptor i64 | A tensor-memory address i32, B descriptor i64,
                   //  instruction descriptor i32, enable input D i1[, SFA address i32, SFB address i32]);
                   //  ints = {Tcgen05Kind, A from tensor memory[, scale_vec 1 / 2 / 4]}: the block-scaled
                   //  kinds (MXF8F6F4 ...) take the scale factors' tensor-memory addresses and the
                   //  scale-vector size (.block_scale.scale_vec::NX)
  Tcgen05Commit,   // (mbarrier ptr[, i16 CTA mask]): tcgen05.commit ... mbarrier::arrive::one[.multicast::cluster]
  Tcgen05Ld,       // (i32 address) -> b32 values (i32); int_attr = Tcgen05Shape, ints = {repetitions, pack 16b,
                   //  half split-off columns (16x32bx2)}: tcgen05.ld.sync.aligned (warp-wide)
  Tcgen05St,       // (i32 address, b32 values...); int_attr / ints as Tcgen05Ld (unpack instead of pack)
  Tcgen05Wait,     // int_attr = 0: tcgen05.wait::ld, 1: tcgen05.wait::st
  Tcgen05Fence,    // int_attr = 0: tcgen05.fence::before_thread_sync, 1: ::after_thread_sync
  Tcgen05Cp,       // (i32 address, smem descriptor i64); int_attr = CTA group, ints = {Tcgen05CpShape}
  WarpRedux,       // (value i32 | f32, member mask i32) -> the value's type: redux.sync over the lanes of the
                   //  mask; int_attr = ReduxKind (arch_attributes.h), ints = {abs, NaN} (f32 min / max only)
};

// The kinds of tcgen05.mma (the PTX `.kind`), and the shapes of tcgen05.ld / st / cp.
enum class Tcgen05Kind : uint8_t { F16 = 0, TF32 = 1, F8F6F4 = 2, I8 = 3, MXF8F6F4 = 4, MXF4 = 5, MXF4NVF4 = 6 };
// The block-scaled kinds: A and B each scaled per block of K by factors read from tensor memory.
inline bool is_block_scaled(Tcgen05Kind k) { return k >= Tcgen05Kind::MXF8F6F4; }
// The element formats of MmaSyncBlockScaled's operands and scale factors (PTX .e2m1 ... .ue4m3).
enum class BlockScaledFormat : uint8_t { E2M1 = 0, E4M3 = 1, E5M2 = 2, UE8M0 = 3, UE4M3 = 4 };
enum class Tcgen05Shape : uint8_t { S32x32b = 0, S16x64b = 1, S16x128b = 2, S16x256b = 3, S16x32bx2 = 4 };
// .128x256b, .4x256b, .128x128b, .64x128b.warpx2::02_13, .64x128b.warpx2::01_23, .32x128b.warpx4
// The 32-bit registers per thread that a tcgen05.ld / st of `shape` x `repetitions` moves. With
// .pack::16b / .unpack::16b the count stays and each register holds the low halves of two
// adjacent columns (the instruction covers twice the columns).
inline int tcgen05_ldst_registers(Tcgen05Shape shape, int64_t repetitions) {
  int per = shape == Tcgen05Shape::S16x128b ? 2 : shape == Tcgen05Shape::S16x256b ? 4 : 1;
  return int(per * repetitions);
}
enum class Tcgen05CpShape : uint8_t { S128x256b = 0, S4x256b = 1, S128x128b = 2, S64x128bWarpx2_02_13 = 3,
                                      S64x128bWarpx2_01_23 = 4, S32x128bWarpx4 = 5 };

// TmaDescReplace fields: tensormap.replace.tile.{global_address (i64), global_dim (ordinal = dimension,
// i32 extent), global_stride (ordinal k = the byte stride of dimension k + 1, i64)}.
enum class TmaDescField : uint8_t { GlobalAddress = 0, GlobalDim = 1, GlobalStride = 2 };

// The cluster special registers: %clusterid, %nclusterid, %cluster_ctaid, %cluster_nctaid (per
// dimension), %cluster_ctarank, %cluster_nctarank.
enum class ClusterSregKind : uint8_t { ClusterIdx = 0, ClusterDim = 1, BlockInCluster = 2, BlockInClusterDim = 3,
                                       CtaRank = 4, ClusterSize = 5 };
// barrier.cluster: Arrive / ArriveRelaxed count the thread at the cluster barrier (relaxed: without
// release semantics); Wait blocks until every non-exited thread of the cluster arrived.
enum class ClusterBarrierKind : uint8_t { Arrive = 0, ArriveRelaxed = 1, Wait = 2 };

// TmaDescOp kinds.
enum class TmaDescOpKind : uint8_t { Prefetch = 0, FenceAcquire = 1 };

// griddepcontrol.wait: wait until the prerequisite grids finished and their memory is visible;
// griddepcontrol.launch_dependents: let the dependent grid launch now (a hint; no memory ordering).
enum class GridDepControlKind : uint8_t { Wait = 0, LaunchDependents = 1 };

// Launch op int_attr bits: a cluster launch, a cooperative launch (all blocks co-resident), and
// programmatic stream serialization (PDL: the next launch on the stream may start before this one ends).
// A launch with a completion event and/or a programmatic event carries one i64 event handle operand
// each after the cluster operands (completion first); Op::ints then holds {completion event flags,
// programmatic event flags, programmatic trigger at block start}.
enum LaunchFlags : int64_t {
  kLaunchCluster = 1, kLaunchCooperative = 2, kLaunchPdl = 4, kLaunchCompletionEvent = 8, kLaunchProgrammaticEvent = 16
};
// Index of the first kernel argument among a Launch op's operands.
size_t launch_first_arg(const Op& op);

// What a NamedBarrier does: Sync = `bar.sync id, count` (arrive and wait until `count` threads
// arrived), Arrive = `bar.arrive id, count` (count this warp, do not wait).
enum class NamedBarrierKind : uint8_t { Sync = 0, Arrive = 1 };

enum class CmpPredicate : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

const char* opcode_name(OpCode code);
const char* predicate_name(CmpPredicate p);
bool is_terminator(OpCode code);
// The two strings an InlineAsm op carries in its str_attr.
std::string inline_asm_constraints(const Op& op);
std::string inline_asm_text(const Op& op);

struct Value {
  Type type = nullptr;
  Op* def = nullptr;          // defining op, or null for a block argument
  Block* owner = nullptr;     // block the value is visible in (with its nested regions)
  int index = 0;              // result index or argument index
};

struct Block {
  std::vector<std::unique_ptr<Value>> args;
  std::vector<std::unique_ptr<Op>> ops;
  Op* parent_op = nullptr;          // null for a function body
  Function* parent_function = nullptr;

  Value* add_arg(Type t);
  Op* terminator() const;
  // True when `this` is `ancestor` or nested inside it.
  bool is_within(const Block* ancestor) const;
};

struct Region {
  std::unique_ptr<Block> block;
};

struct Op {
  OpCode code;
  std::vector<Value*> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::vector<Region> regions;
  Block* parent = nullptr;
  int64_t int_attr = 0;
  double float_attr = 0.0;
  std::string str_attr;
  std::vector<int64_t> ints;  // extra integer attributes (e.g. cluster launch flag)
  int line = 0;               // source line of the user's code, 0 when unknown
  std::string file;

  Value* result(int i = 0) const { return results[i].get(); }
  Block* region_block(int i) const { return regions[i].block.get(); }
  bool is_constant() const { return code == OpCode::Constant; }
};

enum class FunctionKind : uint8_t { Host, Kernel };

struct Function {
  std::string name;
  FunctionKind kind = FunctionKind::Host;
  std::unique_ptr<Block> body;
  std::vector<Type> result_types;
  int reqntid[3] = {0, 0, 0};  // static block size when known (nvvm.reqntid)
  int minctasm = 0;            // launch(min_blocks_per_mp=): blocks per SM to fit (nvvm.minctasm); 0: no hint

  Function();
  const std::vector<std::unique_ptr<Value>>& args() const { return body->args; }
};

struct Module {
  std::vector<std::unique_ptr<Function>> functions;

  Function* add_function(const std::string& name, FunctionKind kind);
  Function* find(const std::string& name) const;
  Function* host() const;  // the first host function, or null
};

// Constant helpers used by builder, folding and interpreters.
bool is_constant(const Value* v);
int64_t constant_int(const Value* v);
double constant_float(const Value* v);

}  // namespace opencute::ir
