// The SM90 asynchronous machinery: mbarrier ops and fences lowered to NVVM IR, compiled by
// libNVVM and linked by nvJitLink for sm_90a (and sm_80 for the ops it has); printed IR that
// parses back; the emulator's mbarrier phases and its deadlock report.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <algorithm>
#include <string>

#include "emulator/device_emulator.h"
#include "emulator/sm90_async.h"
#include "ir/async_attributes.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "target/nvvm/lower_to_nvvm.h"

namespace {

using namespace opencute;
using nvvm_test::compile_for;
using nvvm_test::contains;
using nvvm_test::have_libnvvm;
using ir::AddrSpace;
using ir::OpCode;
using ir::Type;
using ir::Value;

struct Kernel : nvvm_test::KernelUnderTest {
  using KernelUnderTest::KernelUnderTest;
  Value* bar(int index = 0) {
    if (!bars) bars = b.smem_alloc(ir::i64(), 4, 8);
    return index ? b.ptr_add(bars, c32(index)) : bars;
  }
  void init(Value* p, int64_t count) { b.create(OpCode::MbarrierInit, {p, c32(count)}, {}); }
  void arrive(ir::MbarrierArriveKind kind, Value* p, Value* v, Value* rank = nullptr) {
    std::vector<Value*> ops = {p, v};
    if (rank) ops.push_back(rank);
    b.create(OpCode::MbarrierArrive, ops, {})->int_attr = int64_t(kind);
  }
  Value* wait(ir::MbarrierWaitKind kind, Value* p, Value* parity, bool sm80 = false) {
    bool blocking = kind == ir::MbarrierWaitKind::Wait;
    ir::Op* op = b.create(OpCode::MbarrierWait, {p, parity}, blocking ? std::vector<Type>{} : std::vector<Type>{ir::bool_type()});
    op->int_attr = int64_t(kind);
    if (sm80) op->ints = {1};
    return blocking ? nullptr : op->result();
  }
  void fence(ir::FenceKind k) { b.create(OpCode::Fence, {}, {})->int_attr = int64_t(k); }
  void finish() {
    b.set_block(f->body.get());
    b.ret({});
    ir::verify_or_throw(m);
  }
  target::NvvmModuleText lower() {
    finish();
    return target::lower_kernels_to_nvvm(m);
  }
  Value* bars = nullptr;
};

Type gptr(Type t) { return ir::pointer_type(t, AddrSpace::Gmem, 0); }

TEST(Mbarrier, EveryOpAndFenceCompilesForSm90a) {
  Kernel k("mbar_all");
  Value* out = k.arg(gptr(ir::i32()));
  Value* n = k.arg(ir::i32());
  k.init(k.bar(), 1);
  k.init(k.bar(1), 128);
  for (int f = 0; f < int(ir::FenceKind::NumKinds); ++f) k.fence(ir::FenceKind(f));
  k.arrive(ir::MbarrierArriveKind::Arrive, k.bar(), k.c32(1));
  k.arrive(ir::MbarrierArriveKind::Arrive, k.bar(1), n);
  k.arrive(ir::MbarrierArriveKind::ArriveExpectTx, k.bar(), k.c32(4096));
  k.arrive(ir::MbarrierArriveKind::ExpectTx, k.bar(), n);
  k.arrive(ir::MbarrierArriveKind::Arrive, k.bar(1), k.c32(1), n);
  k.arrive(ir::MbarrierArriveKind::ArriveExpectTx, k.bar(1), k.c32(64), k.c32(1));
  k.arrive(ir::MbarrierArriveKind::ExpectTx, k.bar(1), k.c32(64), k.c32(1));
  Value* t = k.wait(ir::MbarrierWaitKind::TryWait, k.bar(), k.c32(0));
  Value* s = k.wait(ir::MbarrierWaitKind::TestWait, k.bar(), n);
  k.wait(ir::MbarrierWaitKind::Wait, k.bar(1), k.c32(1));
  k.b.store(k.b.cast(t, ir::i32()), out);
  k.b.store(k.b.cast(s, ir::i32()), k.b.ptr_add(out, k.c32(1)));
  auto text = k.lower();
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  auto ptx = compile_for(text, {"sm_90a"});
  const std::string& p = ptx["sm_90a"];
  for (const char* want : {"mbarrier.init.shared.b64", "mbarrier.arrive.shared.b64", "mbarrier.arrive.shared::cta.b64",
                           "mbarrier.arrive.expect_tx.shared::cta.b64", "mbarrier.expect_tx.relaxed.cta.shared::cta.b64",
                           "mapa.shared::cluster.u32", "mbarrier.arrive.shared::cluster.b64",
                           "mbarrier.arrive.expect_tx.shared::cluster.b64",
                           "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.test_wait.parity.shared.b64",
                           "fence.mbarrier_init.release.cluster", "fence.proxy.async.shared::cta",
                           "fence.proxy.async.shared::cluster", "fence.proxy.async.global", "fence.proxy.alias",
                           "fence.acq_rel.cluster", "fence.proxy.tensormap::generic.release.gpu"})
    EXPECT_TRUE(contains(p, want)) << want << "\n" << p;
}

// TMA ops through a by-value (grid-constant) tensor-map parameter, linked by nvJitLink for sm_90a.
TEST(Tma, LoadsStoresAndDescriptorOpsCompileForSm90a) {
  Kernel k("tma_all");
  Value* desc = k.arg(ir::pointer_type(ir::f32(), AddrSpace::Param, 64));
  Value* x = k.arg(ir::i32());
  Value* tile = k.b.smem_alloc(ir::f32(), 1024, 1024);
  Value* bar = k.bar();
  k.init(bar, 1);
  k.b.create(OpCode::TmaDescOp, {desc}, {})->int_attr = int64_t(ir::TmaDescOpKind::Prefetch);
  k.b.create(OpCode::TmaDescOp, {desc}, {})->int_attr = int64_t(ir::TmaDescOpKind::FenceAcquire);
  ir::Op* load = k.b.create(OpCode::TmaLoad, {desc, tile, bar, x, k.c32(0)}, {});
  load->int_attr = 2;
  load->ints = {0};
  ir::Op* mcast = k.b.create(OpCode::TmaLoad, {desc, tile, bar, x, k.c32(8), k.c32(0), k.c32(3)}, {});
  mcast->int_attr = 3;
  mcast->ints = {1};
  k.b.create(OpCode::TmaStore, {desc, tile, k.c32(0), x}, {})->int_attr = 2;
  k.b.create(OpCode::BulkCommit, {}, {});
  ir::Op* wait = k.b.create(OpCode::BulkWait, {}, {});
  wait->int_attr = 1;
  wait->ints = {1};
  k.b.create(OpCode::BulkWait, {}, {})->int_attr = 0;
  auto text = k.lower();
  EXPECT_TRUE(contains(text.text, "byval align 64")) << text.text;
  EXPECT_TRUE(contains(text.text, "!\"grid_constant\"")) << text.text;
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  auto ptx = compile_for(text, {"sm_90a"});
  const std::string& p = ptx["sm_90a"];
  for (const char* want : {"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                           "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
                           "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.commit_group",
                           "cp.async.bulk.wait_group.read 1", "cp.async.bulk.wait_group 0", "prefetch.tensormap",
                           "fence.proxy.tensormap::generic.acquire.gpu", "elect.sync", ".param .align 64 .b8"})
    EXPECT_TRUE(contains(p, want)) << want << "\n" << p;
}

TEST(Mbarrier, TheSm80FormsCompileForSm80) {
  Kernel k("mbar_sm80");
  Value* out = k.arg(gptr(ir::i32()));
  k.init(k.bar(), 1);
  k.fence(ir::FenceKind::AcqRelCta);
  k.arrive(ir::MbarrierArriveKind::Arrive, k.bar(), k.c32(1));
  k.wait(ir::MbarrierWaitKind::Wait, k.bar(), k.c32(0), /*sm80=*/true);
  Value* s = k.wait(ir::MbarrierWaitKind::TestWait, k.bar(), k.c32(1));
  k.b.store(k.b.cast(s, ir::i32()), out);
  auto text = k.lower();
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  for (auto& [arch, p] : compile_for(text, {"sm_80", "sm_90a"})) {
    EXPECT_TRUE(contains(p, "mbarrier.test_wait.parity.shared.b64")) << arch;
    EXPECT_FALSE(contains(p, "try_wait")) << arch;
  }
}

TEST(Mbarrier, PrintedIrParsesBack) {
  Kernel k("mbar_text");
  Value* n = k.arg(ir::i32());
  k.init(k.bar(), 2);
  k.arrive(ir::MbarrierArriveKind::ArriveExpectTx, k.bar(), n, k.c32(1));
  k.wait(ir::MbarrierWaitKind::TryWait, k.bar(), n);
  k.wait(ir::MbarrierWaitKind::Wait, k.bar(), n, true);
  k.fence(ir::FenceKind::ProxyAsyncSharedCta);
  k.finish();
  std::string text = ir::print_module(k.m);
  auto parsed = ir::parse_module(text);
  EXPECT_EQ(ir::print_module(*parsed), text);
  EXPECT_TRUE(contains(text, "mbarrier_arrive [1]")) << text;
}

// try_wait with a suspend-time hint (fmha.py's nvvm.mbarrier_try_wait_parity_timelimit): the hint
// is PTX's fourth operand; the op prints and parses back; without the hint the verifier refuses it.
TEST(Mbarrier, TryWaitWithATimeLimitCompilesForSm90a) {
  Kernel k("mbar_timelimit");
  Value* out = k.arg(gptr(ir::i32()));
  Value* hint = k.arg(ir::i32());
  k.init(k.bar(), 1);
  ir::Op* op = k.b.create(OpCode::MbarrierWait, {k.bar(), k.c32(1), hint}, {ir::bool_type()});
  op->int_attr = int64_t(ir::MbarrierWaitKind::TryWaitTimeLimit);
  k.b.store(k.b.cast(op->result(), ir::i32()), out);
  k.finish();
  std::string text = ir::print_module(k.m);
  EXPECT_TRUE(contains(text, "mbarrier_wait [3]")) << text;
  EXPECT_EQ(ir::print_module(*ir::parse_module(text)), text);
  EXPECT_STREQ(ir::mbarrier_wait_kind_name(ir::MbarrierWaitKind::TryWaitTimeLimit), "try_wait_timelimit");
  auto nvvm = target::lower_kernels_to_nvvm(k.m);
  if (!have_libnvvm()) GTEST_SKIP() << "libNVVM not found";
  const std::string p = compile_for(nvvm, {"sm_90a"})["sm_90a"];
  // mbarrier.try_wait.parity.shared::cta.b64 p, [addr], parity, hint;
  size_t at = p.find("mbarrier.try_wait.parity.shared::cta.b64");
  ASSERT_NE(at, std::string::npos) << p;
  std::string line = p.substr(at, p.find('\n', at) - at);
  EXPECT_EQ(std::count(line.begin(), line.end(), ','), 3) << line;
}

TEST(Mbarrier, VerifierRejectsATimedTryWaitWithoutItsHint) {
  Kernel k("mbar_timelimit_bad");
  k.init(k.bar(), 1);
  ir::Op* op = k.b.create(OpCode::MbarrierWait, {k.bar(), k.c32(0)}, {ir::bool_type()});
  op->int_attr = int64_t(ir::MbarrierWaitKind::TryWaitTimeLimit);
  k.b.set_block(k.f->body.get());
  k.b.ret({});
  auto errors = ir::verify_module(k.m);
  ASSERT_FALSE(errors.empty());
  EXPECT_TRUE(contains(errors[0], "suspend-time hint")) << errors[0];
}

TEST(Mbarrier, VerifierRejectsABarrierThatIsNotEightBytes) {
  Kernel k("mbar_bad");
  Value* p = k.b.smem_alloc(ir::i32(), 4, 8);
  k.b.create(OpCode::MbarrierInit, {p, k.c32(1)}, {});
  k.b.set_block(k.f->body.get());
  k.b.ret({});
  auto errors = ir::verify_module(k.m);
  ASSERT_FALSE(errors.empty());
  EXPECT_TRUE(contains(errors[0], "8-byte mbarrier")) << errors[0];
}

// The emulator: 2 warps; warp 1 waits on a barrier that warp 0 completes after a store, and
// warp 0 then waits for warp 1's arrival on the second barrier (one phase each way).
TEST(MbarrierEmulator, PhasesHandOverDataBetweenWarps) {
  Kernel k("mbar_handover");
  Value* out = k.arg(gptr(ir::i32()));
  Value* data = k.b.smem_alloc(ir::i32(), 1, 4);
  Value* tid = k.b.special(OpCode::ThreadIdx, 0);
  Value* warp = k.b.binary(OpCode::Div, tid, k.c32(32));
  Value* bar0 = k.bar(), *bar1 = k.bar(1);
  ir::Op* first = k.b.create_if(k.b.cmp(ir::CmpPredicate::Eq, tid, k.c32(0)));
  k.b.set_block(first->region_block(0));
  k.init(bar0, 1);
  k.init(bar1, 32);
  k.b.yield({});
  k.b.set_block(first->region_block(1));
  k.b.yield({});
  k.b.set_block(k.f->body.get());
  k.b.barrier();
  ir::Op* role = k.b.create_if(k.b.cmp(ir::CmpPredicate::Eq, warp, k.c32(0)));
  k.b.set_block(role->region_block(0));
  {
    ir::Op* one = k.b.create_if(k.b.cmp(ir::CmpPredicate::Eq, tid, k.c32(0)));
    k.b.set_block(one->region_block(0));
    k.b.store(k.c32(42), data);
    k.arrive(ir::MbarrierArriveKind::Arrive, bar0, k.c32(1));
    k.b.yield({});
    k.b.set_block(one->region_block(1));
    k.b.yield({});
    k.b.set_block(role->region_block(0));
    k.wait(ir::MbarrierWaitKind::Wait, bar1, k.c32(0));
    k.b.store(k.b.load(data, ir::i32()), k.b.ptr_add(out, tid));
    k.b.yield({});
  }
  k.b.set_block(role->region_block(1));
  {
    k.wait(ir::MbarrierWaitKind::Wait, bar0, k.c32(0));
    Value* v = k.b.load(data, ir::i32());
    k.b.store(k.b.binary(OpCode::Add, v, tid), k.b.ptr_add(out, tid));
    ir::Op* last = k.b.create_if(k.b.cmp(ir::CmpPredicate::Eq, tid, k.c32(63)));
    k.b.set_block(last->region_block(0));
    k.b.store(k.c32(7), data);
    k.b.yield({});
    k.b.set_block(last->region_block(1));
    k.b.yield({});
    k.b.set_block(role->region_block(1));
    k.arrive(ir::MbarrierArriveKind::Arrive, bar1, k.c32(1));
    k.b.yield({});
  }
  k.finish();
  emulator::DeviceEmulator emu(*k.f);
  std::vector<int32_t> host(64, -1);
  ir::Scalar args[1];
  args[0].i = int64_t(reinterpret_cast<uintptr_t>(host.data()));
  Type types[1] = {gptr(ir::i32())};
  emulator::LaunchRequest r{nullptr, {1, 1, 1}, {64, 1, 1}, {1, 1, 1}, false};
  r.smem = 0;
  r.stream = nullptr;
  r.num_args = 1;
  r.arg_types = types;
  r.args = args;
  emulator::EmulatorConfig cfg;
  cfg.threads = 1;
  emu.launch(r, cfg);
  for (int t = 0; t < 32; ++t) EXPECT_EQ(host[size_t(t)], 7) << t;   // after warp 1's phase
  for (int t = 32; t < 64; ++t) EXPECT_EQ(host[size_t(t)], 42 + t) << t;
}


// Device memory standing for a GPU's (runtime/host_staging.h): the 4 GiB from kDevice on name the
// bytes of `host`; other addresses are host memory, accessed in place.
constexpr uintptr_t kDevice = uintptr_t(0x7e0000000000);
struct FakeDeviceMap final : emulator::DeviceAddressMap {
  std::vector<float>* host = nullptr;
  mutable int device_lookups = 0;
  uintptr_t host_address(uintptr_t address, size_t bytes) const override {
    if (address < kDevice || address >= kDevice + (uintptr_t(1) << 32)) return address;
    ++device_lookups;
    if (address + bytes > kDevice + host->size() * 4) throw emulator::ExecutionError("not staged");
    return reinterpret_cast<uintptr_t>(host->data()) + (address - kDevice);
  }
};

TEST(TmaEmulator, ATensorMapWhoseGlobalAddressIsADeviceAddressLoadsItsHostCopy) {
  // Grouped GEMM points its tensor maps at device addresses it loads from a table: the TMA engine
  // reads each element at the host copy the launch's device map names.
  Kernel k("tma_from_device");
  Value* desc = k.arg(ir::pointer_type(ir::f32(), AddrSpace::Param, 64));
  Value* out = k.arg(gptr(ir::f32()));
  Value* tile = k.b.smem_alloc(ir::f32(), 8, 1024);
  Value* bar = k.bar();
  Value* tid = k.b.special(OpCode::ThreadIdx, 0);
  ir::Op* first = k.b.create_if(k.b.cmp(ir::CmpPredicate::Eq, tid, k.c32(0)));
  k.b.set_block(first->region_block(0));
  k.init(bar, 1);
  k.arrive(ir::MbarrierArriveKind::ArriveExpectTx, bar, k.c32(32));
  ir::Op* load = k.b.create(OpCode::TmaLoad, {desc, tile, bar, k.c32(0)}, {});
  load->int_attr = 1;
  load->ints = {0};
  k.b.yield({});
  k.b.set_block(first->region_block(1));
  k.b.yield({});
  k.b.set_block(k.f->body.get());
  k.b.barrier();
  k.wait(ir::MbarrierWaitKind::Wait, bar, k.c32(0));
  k.b.store(k.b.load(k.b.ptr_add(tile, tid), ir::f32()), k.b.ptr_add(out, tid));
  k.finish();

  emulator::TmaDescriptor d;
  d.rank = 1;
  d.elem_bytes = 4;
  d.global_address = kDevice + 8;  // elements 2..9 of the device buffer
  d.dims[0] = 8;
  d.strides[0] = 4;
  d.box[0] = 8;
  std::vector<float> device(10);
  for (int i = 0; i < 10; ++i) device[size_t(i)] = float(i) + 0.5f;
  FakeDeviceMap map;
  map.host = &device;
  std::vector<float> host(8, -1.0f);
  emulator::DeviceEmulator emu(*k.f);
  ir::Scalar args[2];
  args[0].i = int64_t(reinterpret_cast<uintptr_t>(&d));
  args[1].i = int64_t(reinterpret_cast<uintptr_t>(host.data()));
  Type types[2] = {ir::pointer_type(ir::f32(), AddrSpace::Param, 64), gptr(ir::f32())};
  emulator::LaunchRequest r{nullptr, {1, 1, 1}, {8, 1, 1}, {1, 1, 1}, false};
  r.smem = 0;
  r.stream = nullptr;
  r.num_args = 2;
  r.arg_types = types;
  r.args = args;
  emulator::EmulatorConfig cfg;
  cfg.threads = 1;
  cfg.device_memory = &map;
  emu.launch(r, cfg);
  for (int t = 0; t < 8; ++t) EXPECT_EQ(host[size_t(t)], float(t + 2) + 0.5f) << t;
  EXPECT_EQ(map.device_lookups, 1);  // one for the box's row: the map gives its 32 bytes at once

  // A tensor map reaching past the staged memory stops the launch with the map's reason.
  d.global_address = kDevice + 16;
  try {
    emu.launch(r, cfg);
    FAIL() << "expected an error";
  } catch (const emulator::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("an access of 4 bytes at address 0x7e0000000028: not staged in kernel "
                                         "'tma_from_device'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
