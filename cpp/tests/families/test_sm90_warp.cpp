// The Hopper warp / CTA and cluster ops (ir.h "Hopper warp/CTA and cluster family"): their NVVM
// lowering compiled by libNVVM and linked by nvJitLink for sm_90a, the IR printer / parser round
// trip, and the emulator: prmt against the PTX ISA's byte-select rule, elect / warp_uniform, the
// cluster special registers, barrier.cluster across the blocks of a cluster, distributed shared
// memory through mapa, cluster-shape validation and the cluster-barrier deadlock report.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <string>
#include <vector>

#include "emulator/device_emulator.h"
#include "emulator/sm90_warp.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "target/nvvm/lower_to_nvvm.h"

namespace {

using namespace opencute;
using emulator::DeviceEmulator;
using emulator::EmulatorConfig;
using emulator::ExecutionError;
using emulator::LaunchRequest;
using ir::AddrSpace;
using ir::OpCode;
using ir::Scalar;
using ir::Type;
using ir::Value;
using nvvm_test::compile_for;
using nvvm_test::contains;
using nvvm_test::have_libnvvm;

struct Kernel : nvvm_test::KernelUnderTest {
  using KernelUnderTest::KernelUnderTest;
  Value* sreg(ir::ClusterSregKind k, int dim) {
    ir::Op* op = b.create(OpCode::ClusterSreg, {}, {ir::i32()});
    op->int_attr = int64_t(k);
    op->ints = {dim};
    return op->result();
  }
  void cluster_barrier(ir::ClusterBarrierKind k) {
    ir::Op* op = b.create(OpCode::ClusterBarrier, {}, {});
    op->int_attr = int64_t(k);
    op->ints = {1};
  }
  Value* op1(OpCode code, std::vector<Value*> operands, Type result) {
    return b.create(code, operands, {result})->result();
  }
  void finish() {
    b.set_block(f->body.get());
    b.ret({});
    ir::verify_or_throw(m);
  }
};

Type gptr(Type t) { return ir::pointer_type(t, AddrSpace::Gmem, 4); }

// Builds a kernel that uses every op of the family once, storing what has a result.
void build_all_ops(Kernel& k) {
  Value* out = k.arg(gptr(ir::i32()));
  Value* smem = k.b.smem_alloc(ir::i32(), 32, 16);
  k.f->minctasm = 1;
  Value* tid = k.b.special(OpCode::ThreadIdx, 0);
  k.b.store(tid, k.b.ptr_add(smem, tid));
  k.cluster_barrier(ir::ClusterBarrierKind::Arrive);
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  k.cluster_barrier(ir::ClusterBarrierKind::ArriveRelaxed);
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  Value* rank = k.sreg(ir::ClusterSregKind::CtaRank, 0);
  Value* size = k.sreg(ir::ClusterSregKind::ClusterSize, 0);
  Value* peer = k.b.binary(OpCode::Rem, k.b.binary(OpCode::Add, rank, k.c32(1)), size);
  Value* remote = k.op1(OpCode::MapSharedRank, {k.b.ptr_add(smem, tid), peer},
                        ir::pointer_type(ir::i32(), AddrSpace::Generic, 16));
  Value* sum = k.b.load(remote, ir::i32());
  for (int kind = 0; kind <= int(ir::ClusterSregKind::BlockInClusterDim); ++kind)
    for (int d = 0; d < 3; ++d) sum = k.b.binary(OpCode::Add, sum, k.sreg(ir::ClusterSregKind(kind), d));
  Value* elected = k.op1(OpCode::ElectOne, {k.c32(-1)}, ir::bool_type());
  sum = k.b.binary(OpCode::Add, sum, k.b.cast(elected, ir::i32()));
  k.b.create(OpCode::SyncWarp, {k.c32(-1)}, {});
  ir::Op* nreg = k.b.create(OpCode::SetMaxNReg, {}, {});
  nreg->int_attr = 232;
  nreg->ints = {1};
  ir::Op* dreg = k.b.create(OpCode::SetMaxNReg, {}, {});
  dreg->int_attr = 40;
  dreg->ints = {0};
  sum = k.op1(OpCode::Prmt, {sum, tid, k.c32(0x5410)}, ir::i32());
  Value* wid = k.op1(OpCode::WarpUniform, {k.b.special(OpCode::WarpIdx, 0)}, ir::i32());
  k.b.store(k.b.binary(OpCode::Add, sum, wid), k.b.ptr_add(out, tid));
  k.cluster_barrier(ir::ClusterBarrierKind::Arrive);
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  k.finish();
}

TEST(Sm90WarpOps, LowerToPtxThatNvJitLinkAcceptsForSm90a) {
  Kernel k("sm90_all_ops");
  build_all_ops(k);
  target::NvvmModuleText t = target::lower_kernels_to_nvvm(k.m);
  EXPECT_TRUE(contains(t.text, "!\"minctasm\", i32 1")) << t.text;
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  auto ptx = compile_for(t, {"sm_90a"});
  ASSERT_EQ(ptx.count("sm_90a"), 1u);
  const std::string& p = ptx["sm_90a"];
  for (const char* insn : {"barrier.cluster.arrive.aligned", "barrier.cluster.arrive.relaxed.aligned",
                           "barrier.cluster.wait.aligned", "mapa.u64", "%cluster_ctarank", "%cluster_nctarank",
                           "%clusterid.x", "%nclusterid.y", "%cluster_ctaid.z", "%cluster_nctaid.x", "elect.sync",
                           "bar.warp.sync", "setmaxnreg.inc.sync.aligned.u32 232", "setmaxnreg.dec.sync.aligned.u32 40",
                           "prmt.b32", ".minnctapersm 1"})
    EXPECT_TRUE(contains(p, insn)) << insn << "\n" << p;
}

TEST(Sm90WarpOps, PrintAndParseRoundTrip) {
  Kernel k("sm90_round_trip");
  build_all_ops(k);
  std::string text = ir::print_module(k.m);
  EXPECT_TRUE(contains(text, "minctasm(1)")) << text;
  EXPECT_EQ(ir::print_module(*ir::parse_module(text)), text);
}

TEST(Sm90WarpOps, PrmtSelectsBytesAsThePtxIsaDescribes) {
  // {b, a} = bytes 7..0 = 77 66 55 44 | 33 22 11 00
  const uint32_t a = 0x33221100u, b = 0x77665544u;
  EXPECT_EQ(emulator::prmt_b32(a, b, 0x3210), a);
  EXPECT_EQ(emulator::prmt_b32(a, b, 0x7654), b);
  EXPECT_EQ(emulator::prmt_b32(a, b, 0x5410), 0x55441100u);
  EXPECT_EQ(emulator::prmt_b32(a, b, 0x0123), 0x00112233u);
  // Bit 3 of a selector nibble replicates the selected byte's sign bit.
  EXPECT_EQ(emulator::prmt_b32(0x00008001u, 0, 0x0009), 0x010101ffu);
  EXPECT_EQ(emulator::prmt_b32(0x0000807Fu, 0, 0x0098), 0x7f7fff00u);
  EXPECT_EQ(emulator::prmt_b32(0x0000807Fu, 0, 0x0080), 0x7f7f007fu);
}

struct Launch {
  LaunchRequest r{};
  std::vector<Type> types;
  std::vector<Scalar> args;
  Launch(const Kernel& k, std::vector<Scalar> a, unsigned grid, unsigned block, unsigned cluster) : args(std::move(a)) {
    for (auto& v : k.f->body->args) types.push_back(v->type);
    r.grid[0] = grid, r.grid[1] = r.grid[2] = 1;
    r.block[0] = block, r.block[1] = r.block[2] = 1;
    r.cluster[0] = cluster, r.cluster[1] = r.cluster[2] = 1;
    r.has_cluster = cluster != 0;
    r.num_args = args.size();
    r.arg_types = types.data();
    r.args = args.data();
  }
};

Scalar ptr_arg(void* p) { return Scalar::of_int(int64_t(reinterpret_cast<uintptr_t>(p))); }

// Each CTA writes its rank into its shared memory, the cluster synchronises, then each reads its
// right neighbour's value through mapa; one host thread runs the whole cluster.
TEST(Sm90Cluster, NeighbourSharedMemoryAfterAClusterBarrier) {
  Kernel k("dsmem_ring");
  Value* out = k.arg(gptr(ir::i32()));
  Value* smem = k.b.smem_alloc(ir::i32(), 64, 16);
  Value* tid = k.b.special(OpCode::ThreadIdx, 0);
  Value* rank = k.sreg(ir::ClusterSregKind::CtaRank, 0);
  Value* size = k.sreg(ir::ClusterSregKind::ClusterSize, 0);
  k.b.store(k.b.binary(OpCode::Add, k.b.binary(OpCode::Mul, rank, k.c32(1000)), tid), k.b.ptr_add(smem, tid));
  k.cluster_barrier(ir::ClusterBarrierKind::Arrive);
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  Value* peer = k.b.binary(OpCode::Rem, k.b.binary(OpCode::Add, rank, k.c32(1)), size);
  Value* remote = k.op1(OpCode::MapSharedRank, {k.b.ptr_add(smem, tid), peer},
                        ir::pointer_type(ir::i32(), AddrSpace::Generic, 4));
  Value* v = k.b.load(remote, ir::i32());
  // Nobody may leave while a neighbour can still read its shared memory.
  k.cluster_barrier(ir::ClusterBarrierKind::Arrive);
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  Value* bid = k.b.special(OpCode::BlockIdx, 0);
  Value* gid = k.b.binary(OpCode::Add, k.b.binary(OpCode::Mul, bid, k.c32(64)), tid);
  k.b.store(v, k.b.ptr_add(out, gid));
  k.finish();
  const unsigned blocks = 8, cluster = 4;
  std::vector<int32_t> result(blocks * 64, -1);
  DeviceEmulator emu(*k.f);
  for (int threads : {1, 2}) {
    Launch l(k, {ptr_arg(result.data())}, blocks, 64, cluster);
    EmulatorConfig cfg;
    cfg.threads = threads;
    emu.launch(l.r, cfg);
    for (unsigned b = 0; b < blocks; ++b)
      for (unsigned t = 0; t < 64; ++t)
        EXPECT_EQ(result[b * 64 + t], int32_t(((b % cluster + 1) % cluster) * 1000 + t)) << b << " " << t;
  }
}

// A cluster_wait with no arrival pending (before the kernel's first cluster_arrive, or after the
// wait that completed its phase) goes on at once, as CUTLASS's bare pipeline_init_wait needs; an
// arrive / wait pair still orders each CTA's shared store before its neighbour's read.
TEST(Sm90Cluster, AWaitWithNoArrivalPendingGoesOn) {
  Kernel k("bare_cluster_wait");
  Value* out = k.arg(gptr(ir::i32()));
  Value* smem = k.b.smem_alloc(ir::i32(), 32, 16);
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  Value* tid = k.b.special(OpCode::ThreadIdx, 0);
  Value* rank = k.sreg(ir::ClusterSregKind::CtaRank, 0);
  k.b.store(k.b.binary(OpCode::Add, k.b.binary(OpCode::Mul, rank, k.c32(1000)), tid), k.b.ptr_add(smem, tid));
  k.cluster_barrier(ir::ClusterBarrierKind::Arrive);
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  Value* peer = k.b.binary(OpCode::Xor, rank, k.c32(1));
  Value* remote = k.op1(OpCode::MapSharedRank, {k.b.ptr_add(smem, tid), peer},
                        ir::pointer_type(ir::i32(), AddrSpace::Generic, 4));
  Value* v = k.b.load(remote, ir::i32());
  k.cluster_barrier(ir::ClusterBarrierKind::Arrive);
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  Value* bid = k.b.special(OpCode::BlockIdx, 0);
  k.b.store(v, k.b.ptr_add(out, k.b.binary(OpCode::Add, k.b.binary(OpCode::Mul, bid, k.c32(32)), tid)));
  k.finish();
  std::vector<int32_t> result(4 * 32, -1);
  DeviceEmulator emu(*k.f);
  Launch l(k, {ptr_arg(result.data())}, 4, 32, 2);
  emu.launch(l.r, EmulatorConfig{});
  for (unsigned b = 0; b < 4; ++b)
    for (unsigned t = 0; t < 32; ++t) EXPECT_EQ(result[b * 32 + t], int32_t(((b % 2) ^ 1) * 1000 + t)) << b << " " << t;
}

TEST(Sm90Cluster, SpecialRegistersDescribeTheClusterGrid) {
  Kernel k("cluster_regs");
  Value* out = k.arg(gptr(ir::i32()));
  Value* bid = k.b.special(OpCode::BlockIdx, 0);
  Value* base = k.b.binary(OpCode::Mul, bid, k.c32(6));
  auto put = [&](int slot, Value* v) { k.b.store(v, k.b.ptr_add(out, k.b.binary(OpCode::Add, base, k.c32(slot)))); };
  put(0, k.sreg(ir::ClusterSregKind::ClusterIdx, 0));
  put(1, k.sreg(ir::ClusterSregKind::ClusterDim, 0));
  put(2, k.sreg(ir::ClusterSregKind::BlockInCluster, 0));
  put(3, k.sreg(ir::ClusterSregKind::BlockInClusterDim, 0));
  put(4, k.sreg(ir::ClusterSregKind::CtaRank, 0));
  put(5, k.sreg(ir::ClusterSregKind::ClusterSize, 0));
  k.finish();
  std::vector<int32_t> r(6 * 6, -1);
  DeviceEmulator emu(*k.f);
  Launch l(k, {ptr_arg(r.data())}, 6, 32, 2);
  emu.launch(l.r, EmulatorConfig{});
  for (int b = 0; b < 6; ++b) {
    EXPECT_EQ(r[b * 6 + 0], b / 2);
    EXPECT_EQ(r[b * 6 + 1], 3);
    EXPECT_EQ(r[b * 6 + 2], b % 2);
    EXPECT_EQ(r[b * 6 + 3], 2);
    EXPECT_EQ(r[b * 6 + 4], b % 2);
    EXPECT_EQ(r[b * 6 + 5], 2);
  }
  // Without a cluster each block is a cluster of one.
  Launch plain(k, {ptr_arg(r.data())}, 6, 32, 0);
  emu.launch(plain.r, EmulatorConfig{});
  for (int b = 0; b < 6; ++b) {
    EXPECT_EQ(r[b * 6 + 0], b);
    EXPECT_EQ(r[b * 6 + 1], 6);
    EXPECT_EQ(r[b * 6 + 2], 0);
    EXPECT_EQ(r[b * 6 + 5], 1);
  }
}

TEST(Sm90Cluster, ShapesThatDoNotFitAreRejected) {
  Kernel k("cluster_shape");
  k.finish();
  DeviceEmulator emu(*k.f);
  Launch bad(k, {}, 6, 32, 4);
  try {
    emu.launch(bad.r, EmulatorConfig{});
    FAIL() << "expected an error";
  } catch (const ExecutionError& e) {
    EXPECT_TRUE(contains(e.what(), "does not divide the grid")) << e.what();
  }
  Launch big(k, {}, 32, 32, 32);
  try {
    emu.launch(big.r, EmulatorConfig{});
    FAIL() << "expected an error";
  } catch (const ExecutionError& e) {
    EXPECT_TRUE(contains(e.what(), "at most 16")) << e.what();
  }
}

TEST(Sm90Cluster, AClusterWaitThatCanNeverCompleteIsADeadlockNotAHang) {
  // Every warp arrives at the cluster barrier and waits, except warp 1 of CTA rank 1, which
  // instead waits at a named barrier that only it reaches: nobody can go on.
  Kernel k("cluster_deadlock");
  Value* rank = k.sreg(ir::ClusterSregKind::CtaRank, 0);
  Value* wid = k.b.special(OpCode::WarpIdx, 0);
  ir::Op* op = k.b.create_if(k.b.binary(OpCode::Or, k.b.cmp(ir::CmpPredicate::Eq, rank, k.c32(0)),
                                        k.b.cmp(ir::CmpPredicate::Eq, wid, k.c32(0))));
  k.b.set_block(op->region_block(0));
  k.cluster_barrier(ir::ClusterBarrierKind::Arrive);
  k.b.yield({});
  k.b.set_block(op->region_block(1));
  k.b.yield({});
  k.b.set_block(k.f->body.get());
  ir::Op* op2 = k.b.create_if(k.b.binary(OpCode::Or, k.b.cmp(ir::CmpPredicate::Eq, rank, k.c32(0)),
                                         k.b.cmp(ir::CmpPredicate::Eq, wid, k.c32(0))));
  k.b.set_block(op2->region_block(0));
  k.cluster_barrier(ir::ClusterBarrierKind::Wait);
  k.b.yield({});
  k.b.set_block(op2->region_block(1));
  k.b.named_barrier(k.c32(1), k.c32(64), ir::NamedBarrierKind::Sync);
  k.b.yield({});
  k.finish();
  DeviceEmulator emu(*k.f);
  Launch l(k, {}, 2, 64, 2);
  try {
    emu.launch(l.r, EmulatorConfig{});
    FAIL() << "expected a deadlock";
  } catch (const ExecutionError& e) {
    std::string s = e.what();
    EXPECT_TRUE(contains(s, "deadlock in kernel 'cluster_deadlock', cluster (0,0,0)")) << s;
    EXPECT_TRUE(contains(s, "block (0,0,0) warp 0 waits at cluster_wait (96 of 128 threads of the cluster arrived)"))
        << s;
    EXPECT_TRUE(contains(s, "block (1,0,0) warp 1 waits at named barrier 1 (32 of 64 threads arrived)")) << s;
  }
}

TEST(Sm90WarpOps, ElectPicksOneLaneAndWarpUniformChecksTheLanesAgree) {
  Kernel k("elect");
  Value* out = k.arg(gptr(ir::i32()));
  Value* tid = k.b.special(OpCode::ThreadIdx, 0);
  Value* e = k.op1(OpCode::ElectOne, {k.c32(-1)}, ir::bool_type());
  Value* u = k.op1(OpCode::WarpUniform, {k.b.special(OpCode::WarpIdx, 0)}, ir::i32());
  k.b.store(k.b.binary(OpCode::Add, k.b.cast(e, ir::i32()), k.b.binary(OpCode::Mul, u, k.c32(10))),
            k.b.ptr_add(out, tid));
  k.finish();
  std::vector<int32_t> r(64, -1);
  DeviceEmulator emu(*k.f);
  Launch l(k, {ptr_arg(r.data())}, 1, 64, 0);
  emu.launch(l.r, EmulatorConfig{});
  for (int t = 0; t < 64; ++t) EXPECT_EQ(r[t], (t % 32 == 0 ? 1 : 0) + (t / 32) * 10) << t;

  Kernel bad("not_uniform");
  bad.op1(OpCode::WarpUniform, {bad.b.special(OpCode::ThreadIdx, 0)}, ir::i32());
  bad.finish();
  DeviceEmulator emu2(*bad.f);
  Launch l2(bad, {}, 1, 32, 0);
  try {
    emu2.launch(l2.r, EmulatorConfig{});
    FAIL() << "expected an error";
  } catch (const ExecutionError& ex) {
    EXPECT_TRUE(contains(ex.what(), "make_warp_uniform of a value that differs across the warp (lane 0: 0, lane 1: 1)"))
        << ex.what();
  }
}

}  // namespace
