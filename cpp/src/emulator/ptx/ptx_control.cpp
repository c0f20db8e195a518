// Control flow and CTA / cluster synchronisation: bra, ret, exit, trap, bar / barrier (CTA named
// barriers with ids and thread counts, and barrier.cluster), the fences and memory barriers
// (ordering is sequential in the executor: no-ops), nanosleep, setmaxnreg, griddepcontrol.
#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

Step run_bra(const Inst& i, ThreadCtx& t) {
  t.th.pc = uint32_t(i.ops[0].imm);
  return Step::Jumped;
}

Step run_exit(const Inst&, ThreadCtx&) { return Step::Exit; }

Step run_trap(const Inst&, ThreadCtx& t) { t.fail("trap: the kernel aborted"); }

Step run_nothing(const Inst&, ThreadCtx&) { return Step::Next; }

// bar.sync / barrier.sync id{, count}; bar.arrive id, count.
Step run_bar(const Inst& i, ThreadCtx& t) {
  const uint64_t id = i.ops.empty() ? 0 : t.get(i.ops[0]);
  if (id >= 16) t.fail("barrier id " + std::to_string(id) + " is not below 16");
  NamedBarrier& b = t.cta.bars[id];
  if (i.ops.size() > 1) {
    const int count = int(t.get(i.ops[1]));
    if (count <= 0 || count % 32) t.fail("barrier thread count " + std::to_string(count) + " is not a positive multiple of 32");
    if (b.arrived && b.expected && b.expected != count)
      t.fail("barrier " + std::to_string(id) + " used with thread counts " + std::to_string(b.expected) + " and " +
             std::to_string(count) + " in one phase");
    b.expected = count;
  }
  ++b.arrived;
  ++t.cl.changes;
  if (i.i0) return Step::Next;  // arrive only
  t.th.state = ThreadState::AtBarrier;
  t.th.barrier_id = int(id);
  return Step::Block;
}

Step run_cluster_arrive(const Inst&, ThreadCtx& t) {
  if (t.th.cluster_arrived) t.fail("barrier.cluster.arrive twice without a barrier.cluster.wait");
  t.th.cluster_arrived = true;
  t.th.cluster_phase = t.cl.cluster_phase;
  ++t.cl.cluster_arrived;
  ++t.cl.changes;
  return Step::Next;
}

// A wait completes the phase the thread arrived in. A thread with no arrival pending (none yet, or
// its last phase already waited for) has no phase to wait for and goes on, as on the GPU: CUTLASS's
// pipeline_init_wait is a bare cluster_wait, and quack's 2-CTA cp.async pipeline calls it before
// any arrive of the kernel.
Step run_cluster_wait(const Inst&, ThreadCtx& t) {
  if (!t.th.cluster_arrived) return Step::Next;
  if (t.cl.cluster_phase > t.th.cluster_phase) {
    t.th.cluster_arrived = false;
    return Step::Next;
  }
  t.th.state = ThreadState::AtClusterBarrier;
  return Step::Block;
}

void decode_bra(Inst& i) {
  if (i.ops.size() != 1 || i.ops[0].kind != Operand::Label) unsupported(i, "indirect branches");
  i.run = run_bra;
}

void decode_bar(Inst& i) {
  if (i.has_mod("warp")) return ptx_families().find("bar.warp")(i);
  if (i.has_mod("cluster")) {
    if (i.has_mod("arrive")) i.run = run_cluster_arrive;
    else if (i.has_mod("wait")) i.run = run_cluster_wait;
    else unsupported(i);
    return;
  }
  if (i.has_mod("red")) unsupported(i, "barrier reductions");
  i.i0 = i.has_mod("arrive");
  if (!i.i0 && !i.has_mod("sync") && !(i.mods.size() == 1 && i.mods[0] == "aligned") && !i.mods.empty())
    unsupported(i);
  i.run = run_bar;
}

void decode_nothing(Inst& i) { i.run = run_nothing; }

void decode_setmaxnreg(Inst& i) {
  // Register-count hints change nothing the executor models; the count must still be valid PTX.
  if (i.ops.size() != 1 || i.ops[0].kind != Operand::Imm || i.ops[0].imm < 24 || i.ops[0].imm > 256 || i.ops[0].imm % 8)
    unsupported(i, "setmaxnreg needs a multiple of 8 in [24, 256]");
  i.run = run_nothing;
}

void decode_call(Inst& i) {
  std::string callee;
  for (const Operand& o : i.ops)
    if (o.kind == Operand::Label) callee = o.symbol;
  unsupported(i, "calls (of '" + callee + "'): the executor runs kernels whose functions were inlined");
}

}  // namespace

void register_ptx_control(PtxFamilyTable& t) {
  t.add("bra", decode_bra);
  t.add("ret", [](Inst& i) { i.run = run_exit; });
  t.add("exit", [](Inst& i) { i.run = run_exit; });
  t.add("trap", [](Inst& i) { i.run = run_trap; });
  t.add("bar", decode_bar);
  t.add("barrier", decode_bar);
  t.add("membar", decode_nothing);
  t.add("fence", decode_nothing);
  t.add("nanosleep", decode_nothing);
  t.add("pmevent", decode_nothing);
  t.add("setmaxnreg", decode_setmaxnreg);
  t.add("griddepcontrol", decode_nothing);
  t.add("call", decode_call);
}

}  // namespace opencute::emulator::ptx
