// The emulator's report of a tcgen05.ld result used before tcgen05.wait::ld (PTX ISA: tcgen05.ld
// is asynchronous; its destination registers hold the values only after tcgen05.wait::ld). The
// DSL's cute.copy waits for its own loads, so the IR is built here directly: a store -> load
// round trip through tensor memory, once with the wait and once without, the report naming the
// load's source file and line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/device_emulator.h"
#include "emulator/host_interpreter.h"
#include "ir/builder.h"
#include "ir/verifier.h"

namespace {

using namespace opencute::ir;
using opencute::emulator::DeviceEmulator;
using opencute::emulator::EmulatorConfig;
using opencute::emulator::ExecutionError;
using opencute::emulator::LaunchRequest;
using opencute::emulator::MemoryRegion;

// One warp: allocates 32 columns, stores 41 + lane to its lane's first column, loads it back,
// adds 1 and writes it to out[lane]; `wait` puts tcgen05.wait::ld between the load and the add.
std::unique_ptr<Module> round_trip(bool wait) {
  auto m = std::make_unique<Module>();
  Function* f = m->add_function("tmem_round_trip", FunctionKind::Kernel);
  Builder b(f->body.get());
  Value* out = f->body->add_arg(pointer_type(i32(), AddrSpace::Gmem, 4));
  Value* lane = b.special(OpCode::ThreadIdx, 0);
  Value* holder = b.smem_alloc(i32(), 1, 16);
  auto op = [&](OpCode code, std::vector<Value*> operands, size_t results, int64_t attr, std::vector<int64_t> ints) {
    Op* o = b.create(code, operands, std::vector<Type>(results, i32()));
    o->int_attr = attr;
    o->ints = std::move(ints);
    return o;
  };
  op(OpCode::TmemAlloc, {holder, b.const_int(i32(), 32)}, 0, 1, {});
  b.barrier();
  // Lane t of warp 0 reaches tensor-memory lane t: the warp's address is lane 0, column 0.
  Value* addr = b.load(holder, i32());
  const auto shape = int64_t(Tcgen05Shape::S32x32b);
  op(OpCode::Tcgen05St, {addr, b.binary(OpCode::Add, lane, b.const_int(i32(), 41))}, 0, shape, {1, 0, 1});
  op(OpCode::Tcgen05Wait, {}, 0, 1, {});
  Op* ld = op(OpCode::Tcgen05Ld, {addr}, 1, shape, {1, 0, 1});
  ld->file = "/src/epilogue.py", ld->line = 17;
  if (wait) op(OpCode::Tcgen05Wait, {}, 0, 0, {});
  b.store(b.binary(OpCode::Add, ld->result(0), b.const_int(i32(), 1)), b.ptr_add(out, lane));
  op(OpCode::TmemRelinquish, {}, 0, 1, {});
  op(OpCode::TmemDealloc, {addr, b.const_int(i32(), 32)}, 0, 1, {});
  b.ret({});
  verify_or_throw(*m);
  return m;
}

void launch(const Function& f, std::vector<int32_t>& out) {
  DeviceEmulator emu(f);
  LaunchRequest r{};
  r.grid[0] = r.grid[1] = r.grid[2] = 1;
  r.block[0] = 32, r.block[1] = r.block[2] = 1;
  r.cluster[0] = r.cluster[1] = r.cluster[2] = 1;
  Scalar arg = Scalar::of_int(int64_t(reinterpret_cast<uintptr_t>(out.data())));
  std::vector<Type> types{f.body->args[0]->type};
  r.num_args = 1;
  r.arg_types = types.data();
  r.args = &arg;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(out.data());
  std::vector<MemoryRegion> regions{{begin, begin + out.size() * 4, "out"}};
  EmulatorConfig cfg;
  cfg.regions = &regions;
  cfg.strict = true;
  emu.launch(r, cfg);
}

}  // namespace

TEST(TmemPendingLoads, ValuesWaitedForRoundTrip) {
  auto m = round_trip(true);
  std::vector<int32_t> out(32, -1);
  launch(*m->functions[0], out);
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[size_t(t)], 42 + t) << t;
}

TEST(TmemPendingLoads, ValueUsedBeforeTheWaitIsReportedAtTheLoad) {
  auto m = round_trip(false);
  std::vector<int32_t> out(32, -1);
  try {
    launch(*m->functions[0], out);
    FAIL() << "expected an error";
  } catch (const ExecutionError& e) {
    const std::string s = e.what();
    EXPECT_EQ(s.rfind("a tcgen05.ld result is used before tcgen05.wait::ld (cute.arch.fence_view_async_tmem_load): "
                      "in kernel 'tmem_round_trip' (line 17), block (0,0,0) thread (0,0,0)", 0),
              0u)
        << s;
    EXPECT_EQ(e.file, "/src/epilogue.py");
    EXPECT_EQ(e.line, 17);
  }
}
