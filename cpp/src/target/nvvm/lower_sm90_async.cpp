// NVVM lowering of the SM90 asynchronous ops, as inline PTX (the forms CUTLASS's barrier.h uses):
//   MbarrierInit    mbarrier.init.shared.b64 [bar], count;
//   MbarrierArrive  mbarrier.arrive.shared.b64 st, [bar];        (count 1, sm_80)
//                   mbarrier.arrive.shared::cta.b64 st, [bar], count;
//                   mbarrier.arrive.expect_tx.shared::cta.b64 st, [bar], bytes;
//                   mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], bytes;
//                   with a peer rank: mapa.shared::cluster.u32 remote, bar, rank; then the
//                   .shared::cluster form on `remote` (sink `_` as the state) with PTX's default
//                   .release.cta semantics, as CUTLASS's ClusterBarrier::arrive(cta_id): a
//                   .release.cluster arrive costs a MEMBAR.ALL.GPU per call in SASS, which stalled
//                   the multicast GEMM's consumers on every k-block
//   MbarrierWait    try_wait.parity in a loop (wait), once (try_wait), test_wait.parity (test)
//   Fence           the instruction of ir::fence_ptx
//   TmaLoad         cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes[.multicast::cluster]
//   TmaStore        cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group, or with ints[0] (a
//                   TmaReduceKind) cp.reduce.async.bulk.tensor.Nd.global.shared::cta.<op>.tile.bulk_group
//   BulkLoad        cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (one elected lane)
//   BulkCommit/Wait cp.async.bulk.commit_group / cp.async.bulk.wait_group[.read] N
//   TmaDescOp       prefetch.tensormap [desc] / fence.proxy.tensormap::generic.acquire.gpu [desc], 128
// Shared-memory operands are 32-bit shared-window addresses. Every form clobbers memory so that
// the compiler keeps ordinary accesses on their side of the synchronisation.
#include "ir/async_attributes.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {
namespace {

using ir::Op;
using ir::OpCode;

// The 32-bit shared-window address of the barrier pointer (generic pointers are converted).
std::string shared_address(KernelLowering& k, const Op& op, const ir::Value* ptr) {
  return k.shared_window_address(op, ptr, "an mbarrier pointer must point into shared memory");
}

void asm_void(KernelLowering& k, const std::string& text, const std::string& constraints, const std::string& args) {
  k.emit_asm_clobbering_memory(text, constraints, args);
}

// cp.async.mbarrier.arrive[.noinc].shared.b64 [bar] (sm_80+).
void lower_cp_async_arrive(const Op& op, KernelLowering& k) {
  std::string bar = shared_address(k, op, op.operands[0]);
  asm_void(k, std::string("cp.async.mbarrier.arrive") + (op.int_attr ? ".noinc" : "") + ".shared.b64 [$0];", "r",
           "i32 " + bar);
}

void lower_arrive(const Op& op, KernelLowering& k) {
  const auto kind = ir::MbarrierArriveKind(op.int_attr);
  std::string bar = shared_address(k, op, op.operands[0]);
  std::string value = k.operand(op.operands[1]);
  const bool remote = op.operands.size() == 3;
  std::string args = "i32 " + bar + ", i32 " + value;
  if (remote) {
    // The same offset in the peer CTA's shared memory, as a shared::cluster address.
    std::string insn;
    switch (kind) {
      case ir::MbarrierArriveKind::Arrive: insn = "mbarrier.arrive.shared::cluster.b64 _, [remAddr32], $1;"; break;
      case ir::MbarrierArriveKind::ArriveExpectTx:
        insn = "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [remAddr32], $1;";
        break;
      case ir::MbarrierArriveKind::ExpectTx: insn = "mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [remAddr32], $1;"; break;
    }
    asm_void(k, "{\\0A\\09.reg .b32 remAddr32;\\0A\\09mapa.shared::cluster.u32 remAddr32, $0, $2;\\0A\\09" + insn + "\\0A\\09}", "r,r,r",
             args + ", i32 " + k.operand(op.operands[2]));
    return;
  }
  switch (kind) {
    case ir::MbarrierArriveKind::Arrive:
      if (ir::is_constant(op.operands[1]) && ir::constant_int(op.operands[1]) == 1)
        asm_void(k, "{\\0A\\09.reg .b64 st;\\0A\\09mbarrier.arrive.shared.b64 st, [$0];\\0A\\09}", "r", "i32 " + bar);
      else
        asm_void(k, "{\\0A\\09.reg .b64 st;\\0A\\09mbarrier.arrive.shared::cta.b64 st, [$0], $1;\\0A\\09}", "r,r", args);
      return;
    case ir::MbarrierArriveKind::ArriveExpectTx:
      asm_void(k, "{\\0A\\09.reg .b64 st;\\0A\\09mbarrier.arrive.expect_tx.shared::cta.b64 st, [$0], $1;\\0A\\09}", "r,r",
               args);
      return;
    case ir::MbarrierArriveKind::ExpectTx:
      asm_void(k, "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;", "r,r", args);
      return;
  }
}

void lower_wait(const Op& op, KernelLowering& k) {
  const auto kind = ir::MbarrierWaitKind(op.int_attr);
  std::string bar = shared_address(k, op, op.operands[0]);
  std::string args = "i32 " + bar + ", i32 " + k.operand(op.operands[1]);
  if (kind == ir::MbarrierWaitKind::Wait) {
    // Labels inside a { } scope are local to it, so every inlined copy may use the same names.
    // ints = {1}: the target predates try_wait (sm_80), spin on test_wait.
    const bool test = !op.ints.empty() && op.ints[0];
    asm_void(k,
             std::string("{\\0A\\09.reg .pred p;\\0A\\09LAB_WAIT:\\0A\\09") +
                 (test ? "mbarrier.test_wait.parity.shared.b64" : "mbarrier.try_wait.parity.shared::cta.b64") +
                 " p, [$0], $1;\\0A\\09"
             "@p bra DONE;\\0A\\09bra LAB_WAIT;\\0A\\09DONE:\\0A\\09}",
             "r,r", args);
    return;
  }
  if (kind == ir::MbarrierWaitKind::TryWaitTimeLimit) {
    // The suspend-time hint (ns) bounds how long the thread may be suspended before try_wait
    // returns false.
    std::string r = k.emit_def(
        "call i32 asm sideeffect \"{\\0A\\09.reg .pred p;\\0A\\09mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2, $3;"
        "\\0A\\09selp.u32 $0, 1, 0, p;\\0A\\09}\", \"=r,r,r,r,~{memory}\"(" + args + ", i32 " + k.operand(op.operands[2]) + ")");
    k.define(op, 0, k.emit_def("icmp ne i32 " + r + ", 0"));
    return;
  }
  const char* insn = kind == ir::MbarrierWaitKind::TryWait ? "mbarrier.try_wait.parity.shared::cta.b64"
                                                            : "mbarrier.test_wait.parity.shared.b64";
  std::string r = k.emit_def(std::string("call i32 asm sideeffect \"{\\0A\\09.reg .pred p;\\0A\\09") + insn +
                             " p, [$1], $2;\\0A\\09selp.u32 $0, 1, 0, p;\\0A\\09}\", \"=r,r,r,~{memory}\"(" + args + ")");
  k.define(op, 0, k.emit_def("icmp ne i32 " + r + ", 0"));
}

// The 64-bit generic address of a pointer (the tensor map of a TMA op).
std::string generic_address(KernelLowering& k, const ir::Value* ptr) {
  return k.emit_def("ptrtoint " + llvm_type(ptr->type) + " " + k.operand(ptr) + " to i64");
}

// `{$first, $first+1, ...}` for `rank` coordinates.
// One elected lane of the active ones issues a TMA copy: the DSL's cute.copy is called by a
// whole warp, but each copy must be issued once.
std::string elected(const std::string& insn) {
  return "{\\0A\\09.reg .b32 am;\\0A\\09.reg .pred ep;\\0A\\09activemask.b32 am;\\0A\\09elect.sync _|ep, am;"
         "\\0A\\09@ep " + insn + "\\0A\\09}";
}

std::string coord_list(int first, int rank) {
  std::string s = "{";
  for (int d = 0; d < rank; ++d) s += (d ? ", $" : "$") + std::to_string(first + d);
  return s + "}";
}

void lower_tma(const Op& op, KernelLowering& k) {
  const int rank = int(op.int_attr);
  const std::string dims = std::to_string(rank) + "d";
  std::string desc = generic_address(k, op.operands[0]);
  std::string smem = shared_address(k, op, op.operands[1]);
  if (op.code == OpCode::TmaLoad) {
    const bool mcast = !op.ints.empty() && op.ints[0];
    // ints[1]: a trailing i1 predicate (the NVVM dialect op's predicate=): the lanes where it
    // holds issue the copy, no election. Its operands are computed by every lane, outside the
    // predicated instruction.
    const bool predicated = op.ints.size() > 1 && op.ints[1];
    // ints[2] == 2: cta_group::2 (a 2-CTA MMA's operand). The bytes complete the mbarrier of the CTA
    // pair's leader: the shared::cluster address with the peer bit (bit 24, the CTA rank's lowest
    // bit) cleared, as CUTLASS's SM100_TMA_2SM_LOAD does.
    const bool two_sm = op.ints.size() > 2 && op.ints[2] == 2;
    std::string bar = shared_address(k, op, op.operands[2]);
    if (two_sm) bar = k.emit_def("and i32 " + bar + ", -16777217");
    std::string args = "i32 " + smem + ", i64 " + desc + ", i32 " + bar, cons = "r,l,r";
    for (int d = 0; d < rank; ++d) args += ", i32 " + k.operand(op.operands[size_t(3 + d)]), cons += ",r";
    std::string text = "cp.async.bulk.tensor." + dims + (two_sm ? ".cta_group::2" : "") +
                       ".shared::cluster.global.mbarrier::complete_tx::bytes" + (mcast ? ".multicast::cluster" : "") +
                       " [$0], [$1, " + coord_list(3, rank) + "], [$2]";
    if (mcast) {
      const ir::Value* m = op.operands[size_t(3 + rank)];
      std::string mask = k.operand(m);
      if (m->type->width != 16)
        mask = k.emit_def((m->type->width > 16 ? "trunc " : "zext ") + llvm_type(m->type) + " " + mask + " to i16");
      args += ", i16 " + mask, cons += ",h";
      text += ", $" + std::to_string(3 + rank);
    }
    if (predicated) {
      const int n = 3 + rank + (mcast ? 1 : 0);
      std::string p = k.emit_def("zext i1 " + k.operand(op.operands.back()) + " to i32");
      args += ", i32 " + p, cons += ",r";
      asm_void(k, "{\\0A\\09.reg .pred tp;\\0A\\09setp.ne.b32 tp, $" + std::to_string(n) + ", 0;\\0A\\09@tp " + text +
                      ";\\0A\\09}", cons, args);
      return;
    }
    asm_void(k, elected(text + ";"), cons, args);
    return;
  }
  std::string args = "i64 " + desc + ", i32 " + smem, cons = "l,r";
  for (int d = 0; d < rank; ++d) args += ", i32 " + k.operand(op.operands[size_t(2 + d)]), cons += ",r";
  // ints[0]: a reduce-store's operation (ir::TmaReduceKind).
  const auto reduce = op.ints.empty() ? ir::TmaReduceKind::None : ir::TmaReduceKind(op.ints[0]);
  const std::string instr = reduce == ir::TmaReduceKind::None
                                ? "cp.async.bulk.tensor." + dims + ".global.shared::cta.bulk_group"
                                : "cp.reduce.async.bulk.tensor." + dims + ".global.shared::cta." +
                                      ir::tma_reduce_kind_name(reduce) + ".tile.bulk_group";
  asm_void(k, elected(instr + " [$0, " + coord_list(2, rank) + "], [$1];"), cons, args);
}

// The non-tensor bulk copy: `bytes` contiguous bytes of global memory to shared memory.
void lower_bulk_load(const Op& op, KernelLowering& k) {
  std::string smem = shared_address(k, op, op.operands[0]);
  // The source operand is a .global address: a generic pointer is converted (cvta.to.global).
  const ir::Value* from = op.operands[1];
  std::string src = k.operand(from), from_type = llvm_type(from->type);
  if (from->type->space != ir::AddrSpace::Gmem) {
    const std::string to = llvm_type(ir::pointer_type(from->type->element, ir::AddrSpace::Gmem, from->type->align));
    src = k.emit_def("addrspacecast " + from_type + " " + src + " to " + to);
    from_type = to;
  }
  src = k.emit_def("ptrtoint " + from_type + " " + src + " to i64");
  std::string bar = shared_address(k, op, op.operands[2]);
  asm_void(k, elected("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];"),
           "r,l,r,r", "i32 " + smem + ", i64 " + src + ", i32 " + k.operand(op.operands[3]) + ", i32 " + bar);
}

void lower_mbarrier_init(const Op& op, KernelLowering& k) {
  asm_void(k, "mbarrier.init.shared.b64 [$0], $1;", "r,r",
           "i32 " + shared_address(k, op, op.operands[0]) + ", i32 " + k.operand(op.operands[1]));
}

void lower_bulk_wait(const Op& op, KernelLowering& k) {
  const bool read = !op.ints.empty() && op.ints[0];
  asm_void(k, std::string("cp.async.bulk.wait_group") + (read ? ".read " : " ") + std::to_string(op.int_attr) + ";", "",
           "");
}

void lower_tma_desc_op(const Op& op, KernelLowering& k) {
  asm_void(k,
           op.int_attr == int64_t(ir::TmaDescOpKind::Prefetch) ? "prefetch.tensormap [$0];"
                                                               : "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;",
           "l", "i64 " + generic_address(k, op.operands[0]));
}

}  // namespace

void register_sm90_async_lowerings(LoweringTable& t) {
  t.add(OpCode::MbarrierInit, lower_mbarrier_init);
  t.add(OpCode::MbarrierArrive, lower_arrive);
  t.add(OpCode::CpAsyncMbarrierArrive, lower_cp_async_arrive);
  t.add(OpCode::MbarrierWait, lower_wait);
  t.add(OpCode::Fence, [](const Op& op, KernelLowering& k) { asm_void(k, ir::fence_ptx(ir::FenceKind(op.int_attr)), "", ""); });
  t.add(OpCode::TmaLoad, lower_tma);
  t.add(OpCode::TmaStore, lower_tma);
  t.add(OpCode::BulkLoad, lower_bulk_load);
  t.add(OpCode::BulkCommit, [](const Op&, KernelLowering& k) { asm_void(k, "cp.async.bulk.commit_group;", "", ""); });
  t.add(OpCode::BulkWait, lower_bulk_wait);
  t.add(OpCode::TmaDescOp, lower_tma_desc_op);
}

}  // namespace opencute::target
