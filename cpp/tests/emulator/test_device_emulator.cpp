// The CPU SIMT emulator: lock-step divergence, loops with divergent trip counts, barriers over
// shared state, printf formatting, local arrays, the out-of-bounds / misaligned errors, and device
// addresses loaded from memory resolved through the launch's device map.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "emulator/device_emulator.h"
#include "emulator/host_interpreter.h"
#include "ir/builder.h"
#include "ir/verifier.h"

using namespace opencute::ir;
using opencute::emulator::DeviceEmulator;
using opencute::emulator::EmulatorConfig;
using opencute::emulator::AssertionFailure;
using opencute::emulator::ExecutionError;
using opencute::emulator::LaunchRequest;
using opencute::emulator::MemoryRegion;

namespace {

Type ptr_i32() { return pointer_type(i32(), AddrSpace::Gmem, 4); }

struct Kernel {
  Module m;
  Function* f;
  Builder b;
  explicit Kernel(const char* name) : f(m.add_function(name, FunctionKind::Kernel)), b(f->body.get()) {}
  Value* arg(Type t) { return f->body->add_arg(t); }
  Value* c(int64_t v) { return b.const_int(i32(), v); }
  Value* tid() { return b.special(OpCode::ThreadIdx, 0); }
  Value* global_tid() {
    return b.binary(OpCode::Add, b.binary(OpCode::Mul, b.special(OpCode::BlockIdx, 0), b.special(OpCode::BlockDim, 0)),
                    tid());
  }
  void store(Value* base, Value* index, Value* v) { b.store(v, b.ptr_add(base, index)); }
  Value* load(Value* base, Value* index) { return b.load(b.ptr_add(base, index), i32()); }
  void finish() {
    b.set_block(f->body.get());
    b.ret({});
    verify_or_throw(m);
  }
};

void run(const Kernel& k, unsigned grid, unsigned block, std::vector<Scalar> args, std::vector<MemoryRegion> regions = {},
         int threads = 1, unsigned smem = 0) {
  DeviceEmulator emu(*k.f);
  LaunchRequest r{};
  r.op = nullptr;
  r.grid[0] = grid, r.grid[1] = r.grid[2] = 1;
  r.block[0] = block, r.block[1] = r.block[2] = 1;
  r.cluster[0] = r.cluster[1] = r.cluster[2] = 1;
  r.num_args = args.size();
  r.smem = smem;
  std::vector<Type> types;
  for (auto& a : k.f->body->args) types.push_back(a->type);
  r.arg_types = types.data();
  r.args = args.data();
  EmulatorConfig cfg;
  cfg.regions = &regions;
  cfg.strict = !regions.empty();
  cfg.threads = threads;
  emu.launch(r, cfg);
}

Scalar ptr(const void* p) { return Scalar::of_int(int64_t(reinterpret_cast<uintptr_t>(p))); }

MemoryRegion region(const std::vector<int32_t>& v, const char* name) {
  uintptr_t b = reinterpret_cast<uintptr_t>(v.data());
  return MemoryRegion{b, b + v.size() * 4, name};
}

}  // namespace

TEST(DeviceEmulator, DivergentIfRunsEachSideWithItsMask) {
  Kernel k("diverge");
  Value* out = k.arg(ptr_i32());
  Value* t = k.global_tid();
  Value* even = k.b.cmp(CmpPredicate::Eq, k.b.binary(OpCode::Rem, t, k.c(2)), k.c(0));
  Op* op = k.b.create_if(even);
  k.b.set_block(op->region_block(0));
  k.b.yield({k.b.binary(OpCode::Mul, t, k.c(10))});
  k.b.set_block(op->region_block(1));
  k.b.yield({k.b.unary(OpCode::Neg, t)});
  k.b.set_block(k.f->body.get());
  k.b.set_results(op, {i32()});
  k.store(out, t, op->result());
  k.finish();
  std::vector<int32_t> v(3 * 48, 7);
  run(k, 3, 48, {ptr(v.data())}, {region(v, "out")}, 2);  // 48: the second warp is partial
  for (int i = 0; i < 3 * 48; ++i) EXPECT_EQ(v[size_t(i)], i % 2 == 0 ? i * 10 : -i) << i;
}

TEST(DeviceEmulator, LoopsWithDivergentTripCounts) {
  Kernel k("loops");
  Value* out = k.arg(ptr_i32());
  Value* steps = k.arg(ptr_i32());
  Value* t = k.tid();
  // for i in range(t): acc += i
  Op* loop = k.b.create_for(k.c(0), t, k.c(1), {k.c(0)}, 0);
  Block* body = loop->region_block(0);
  k.b.set_block(body);
  k.b.yield({k.b.binary(OpCode::Add, body->args[1].get(), body->args[0].get())});
  k.b.set_block(k.f->body.get());
  k.b.set_results(loop, {i32()});
  k.store(out, t, loop->result());
  // Collatz: while x != 1: x = x/2 if even else 3x+1; count steps
  Op* w = k.b.create_while({k.b.binary(OpCode::Add, t, k.c(1)), k.c(0)});
  Block* before = w->region_block(0);
  Block* after = w->region_block(1);
  k.b.set_block(before);
  k.b.condition(k.b.cmp(CmpPredicate::Ne, before->args[0].get(), k.c(1)), {before->args[0].get(), before->args[1].get()});
  k.b.set_block(after);
  Value* x = after->args[0].get();
  Value* ev = k.b.cmp(CmpPredicate::Eq, k.b.binary(OpCode::Rem, x, k.c(2)), k.c(0));
  Value* nx = k.b.select(ev, k.b.binary(OpCode::Div, x, k.c(2)), k.b.binary(OpCode::Add, k.b.binary(OpCode::Mul, x, k.c(3)), k.c(1)));
  k.b.yield({nx, k.b.binary(OpCode::Add, after->args[1].get(), k.c(1))});
  k.b.set_block(k.f->body.get());
  k.b.set_results(w, {i32(), i32()});
  k.store(steps, t, w->result(1));
  k.finish();
  const int n = 70;
  std::vector<int32_t> o(n), s(n);
  run(k, 1, n, {ptr(o.data()), ptr(s.data())}, {region(o, "out"), region(s, "steps")});
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(o[size_t(i)], i * (i - 1) / 2);
    int x = i + 1, c = 0;
    while (x != 1) x = x % 2 == 0 ? x / 2 : 3 * x + 1, ++c;
    EXPECT_EQ(s[size_t(i)], c) << i;
  }
}

TEST(DeviceEmulator, BarrierOrdersSharedState) {
  // Each thread writes its slot, waits, then reads its neighbour's (written by another warp for
  // warp boundaries), in two rounds inside a loop.
  Kernel k("rotate");
  Value* buf = k.arg(ptr_i32());
  Value* out = k.arg(ptr_i32());
  Value* t = k.tid();
  Value* n = k.b.special(OpCode::BlockDim, 0);
  Value* base = k.b.binary(OpCode::Mul, k.b.special(OpCode::BlockIdx, 0), n);
  Value* next = k.b.binary(OpCode::Rem, k.b.binary(OpCode::Add, t, k.c(1)), n);
  Op* loop = k.b.create_for(k.c(0), k.c(2), k.c(1), {k.b.binary(OpCode::Add, base, t)}, 0);
  Block* body = loop->region_block(0);
  k.b.set_block(body);
  k.store(buf, k.b.binary(OpCode::Add, base, t), body->args[1].get());
  k.b.barrier();
  Value* got = k.load(buf, k.b.binary(OpCode::Add, base, next));
  k.b.barrier();
  k.b.yield({got});
  k.b.set_block(k.f->body.get());
  k.b.set_results(loop, {i32()});
  k.store(out, k.b.binary(OpCode::Add, base, t), loop->result());
  k.finish();
  const unsigned blocks = 5, threads = 100;
  std::vector<int32_t> buf_v(blocks * threads), out_v(blocks * threads);
  run(k, blocks, threads, {ptr(buf_v.data()), ptr(out_v.data())}, {region(buf_v, "buf"), region(out_v, "out")}, 2);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned i = 0; i < threads; ++i) EXPECT_EQ(out_v[b * threads + i], int(b * threads + (i + 2) % threads));
}

TEST(DeviceEmulator, BarrierSkippedByAWarpIsReported) {
  Kernel k("deadlock");
  Op* op = k.b.create_if(k.b.cmp(CmpPredicate::Eq, k.b.special(OpCode::WarpIdx, 0), k.c(0)));
  k.b.set_block(op->region_block(0));
  k.b.barrier();
  k.b.yield({});
  k.b.set_block(op->region_block(1));
  k.b.yield({});
  k.finish();
  try {
    run(k, 1, 64, {});
    FAIL() << "expected an error";
  } catch (const ExecutionError& e) {
    std::string s = e.what();
    EXPECT_NE(s.find("deadlock"), std::string::npos) << s;
    EXPECT_NE(s.find("'deadlock'"), std::string::npos) << s;
    EXPECT_NE(s.find("block (0,0,0)"), std::string::npos) << s;
  }
}

TEST(DeviceEmulator, PrintfFormatsLikeTheDevice) {
  Kernel k("hello");
  Value* t = k.tid();
  Value* f = k.b.binary(OpCode::Mul, k.b.cast(t, f32()), k.b.const_float(f32(), 0.5));
  Op* op = k.b.create_if(k.b.cmp(CmpPredicate::Lt, t, k.c(3)));
  k.b.set_block(op->region_block(0));
  k.b.printf("t=%d lane=%d f=%.2f x=%08x\n", {t, k.b.special(OpCode::LaneIdx, 0), f, k.b.binary(OpCode::Add, t, k.c(255))});
  k.b.yield({});
  k.b.set_block(op->region_block(1));
  k.b.yield({});
  k.finish();
  testing::internal::CaptureStdout();
  run(k, 2, 40, {});
  std::string got = testing::internal::GetCapturedStdout();
  std::string want;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i) {
      char line[64];
      std::snprintf(line, sizeof line, "t=%d lane=%d f=%.2f x=%08x\n", i, i, i * 0.5, i + 255);
      want += line;
    }
  EXPECT_EQ(got, want);
}

TEST(DeviceEmulator, LocalArraysArePerThread) {
  Kernel k("local");
  Value* out = k.arg(ptr_i32());
  Value* t = k.tid();
  Value* arr = k.b.local_array(i32(), 4, 4);
  for (int j = 0; j < 4; ++j) k.store(arr, k.c(j), k.b.binary(OpCode::Add, t, k.c(j * 1000)));
  Value* s = k.c(0);
  for (int j = 0; j < 4; ++j) s = k.b.binary(OpCode::Add, s, k.load(arr, k.c(j)));
  k.store(out, t, s);
  k.finish();
  std::vector<int32_t> o(64);
  run(k, 1, 64, {ptr(o.data())}, {region(o, "out")});
  for (int i = 0; i < 64; ++i) EXPECT_EQ(o[size_t(i)], 4 * i + 6000);
}

TEST(DeviceEmulator, OutOfBoundsStoreNamesKernelThreadAndAddress) {
  Kernel k("oob_kernel");
  Value* out = k.arg(ptr_i32());
  Value* t = k.global_tid();
  k.store(out, t, t);  // no bounds check in the kernel
  k.finish();
  std::vector<int32_t> o(100, -1);
  try {
    run(k, 2, 64, {ptr(o.data())}, {region(o, "tensor argument #0")}, 2);
    FAIL() << "expected an error";
  } catch (const ExecutionError& e) {
    std::string s = e.what();
    char addr[32];
    std::snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)reinterpret_cast<uintptr_t>(o.data() + 100));
    EXPECT_NE(s.find("out-of-bounds store"), std::string::npos) << s;
    EXPECT_NE(s.find("'oob_kernel'"), std::string::npos) << s;
    EXPECT_NE(s.find("block (1,0,0) thread (36,0,0)"), std::string::npos) << s;
    EXPECT_NE(s.find(addr), std::string::npos) << s;
    EXPECT_NE(s.find("tensor argument #0"), std::string::npos) << s;
  }
  for (int i = 0; i < 100; ++i) EXPECT_EQ(o[size_t(i)], i);  // in-bounds stores still happened
}

TEST(DeviceEmulator, MisalignedLoadIsReported) {
  Kernel k("misaligned");
  Value* p = k.arg(ptr_i32());
  Value* q = k.b.create(OpCode::IntToPtr, {k.b.binary(OpCode::Add, k.b.create(OpCode::PtrToInt, {p}, {i64()})->result(),
                                                      k.b.const_int(i64(), 2))},
                        {ptr_i32()})
                 ->result();
  k.store(p, k.c(0), k.b.load(q, i32()));
  k.finish();
  std::vector<int32_t> o(4);
  try {
    run(k, 1, 1, {ptr(o.data())}, {region(o, "buf")});
    FAIL() << "expected an error";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("misaligned load"), std::string::npos) << e.what();
  }
}

TEST(DeviceEmulator, UnsupportedOpIsAClearError) {
  Kernel k("launcher");
  Value* one = k.c(1);
  k.b.launch("other", {one, one, one}, {one, one, one}, k.c(0), k.b.const_int(i64(), 0), {}, {});
  k.b.set_block(k.f->body.get());
  k.b.ret({});
  try {
    DeviceEmulator emu(*k.f);
    FAIL() << "expected an error";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("not supported by the CPU emulator"), std::string::npos) << e.what();
  }
}

TEST(DeviceEmulator, VectorLoadsStoresAndLanes) {
  // out[4t..4t+3] = reversed(in[4t..4t+3]) + (0,0,0,100) through a 16-byte vector access.
  Kernel k("vec");
  Type v4 = vector_type(i32(), 4);
  Value* in = k.arg(pointer_type(i32(), AddrSpace::Gmem, 16));
  Value* out = k.arg(pointer_type(i32(), AddrSpace::Gmem, 16));
  Value* t4 = k.b.binary(OpCode::Mul, k.tid(), k.c(4));
  Value* v = k.b.load(k.b.ptr_add(in, t4), v4);
  Value* r = k.b.vec_splat(k.c(0), 4);
  for (int j = 0; j < 4; ++j) r = k.b.vec_insert(r, k.b.vec_extract(v, 3 - j), j);
  r = k.b.vec_insert(r, k.b.binary(OpCode::Add, k.b.vec_extract(r, 3), k.c(100)), 3);
  k.b.store(r, k.b.ptr_add(out, t4));
  k.finish();
  alignas(16) static int32_t a[64 * 4], o[64 * 4];
  for (int i = 0; i < 256; ++i) a[i] = i;
  std::vector<MemoryRegion> regions = {{uintptr_t(a), uintptr_t(a + 256), "in"}, {uintptr_t(o), uintptr_t(o + 256), "out"}};
  run(k, 1, 64, {ptr(a), ptr(o)}, regions);
  for (int t = 0; t < 64; ++t)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(o[4 * t + j], 4 * t + 3 - j + (j == 3 ? 100 : 0));
}

TEST(DeviceEmulator, ShufflesFollowPtxLaneSelection) {
  // out[k * 64 + t]: shuffle k of in[t]; each checked against the PTX rule written out by hand.
  Kernel k("shuffles");
  Value* in = k.arg(ptr_i32());
  Value* out = k.arg(ptr_i32());
  Value* t = k.tid();
  Value* v = k.load(in, t);
  Value* full = k.c(-1);
  struct Case { ShuffleKind kind; int b, c; };
  const int seg8 = (32 - 8) << 8;
  std::vector<Case> cases = {{ShuffleKind::Idx, 3, 31},  {ShuffleKind::Idx, 5, seg8 | 31}, {ShuffleKind::Up, 2, 0},
                             {ShuffleKind::Up, 1, seg8}, {ShuffleKind::Down, 4, 31},       {ShuffleKind::Down, 2, seg8 | 31},
                             {ShuffleKind::Down, 1, 15}, {ShuffleKind::Bfly, 6, 31},       {ShuffleKind::Bfly, 8, 15}};
  for (size_t i = 0; i < cases.size(); ++i)
    k.store(out, k.b.binary(OpCode::Add, t, k.c(int64_t(i) * 64)),
            k.b.shuffle(cases[i].kind, v, k.c(cases[i].b), k.c(cases[i].c), full));
  k.finish();
  std::vector<int32_t> a(64), o(64 * cases.size());
  for (int i = 0; i < 64; ++i) a[size_t(i)] = 1000 + i;
  run(k, 1, 64, {ptr(a.data()), ptr(o.data())}, {region(a, "in"), region(o, "out")});
  auto expect_source = [](const Case& c, int lane) {  // the lane read, or -1 for the own value
    int width = 32 - ((c.c >> 8) & 31), seg_lo = lane / width * width, clamp = c.c & 31;
    switch (c.kind) {
      case ShuffleKind::Idx: return seg_lo + c.b % width;
      case ShuffleKind::Up: return lane - c.b >= seg_lo ? lane - c.b : -1;
      case ShuffleKind::Down: {
        int last = ((c.c >> 8) & 31) ? seg_lo + width - 1 : clamp;
        return lane + c.b <= last ? lane + c.b : -1;
      }
      case ShuffleKind::Bfly: return (lane ^ c.b) <= clamp ? lane ^ c.b : -1;
    }
    return -1;
  };
  for (size_t i = 0; i < cases.size(); ++i)
    for (int tid = 0; tid < 64; ++tid) {
      int src = expect_source(cases[i], tid % 32);
      EXPECT_EQ(o[i * 64 + size_t(tid)], 1000 + (src < 0 ? tid : tid / 32 * 32 + src)) << "case " << i << " thread " << tid;
    }
}

TEST(DeviceEmulator, ShuffleInDivergentCodeReadsOnlyActiveLanes) {
  // Only even lanes run the shuffle; reading an odd (inactive) lane gives the own value.
  Kernel k("divergent_shuffle");
  Value* out = k.arg(ptr_i32());
  Value* t = k.tid();
  Op* op = k.b.create_if(k.b.cmp(CmpPredicate::Eq, k.b.binary(OpCode::Rem, t, k.c(2)), k.c(0)));
  k.b.set_block(op->region_block(0));
  k.store(out, t, k.b.shuffle(ShuffleKind::Down, t, k.c(1), k.c(31), k.c(0x55555555)));
  k.b.yield({});
  k.b.set_block(op->region_block(1));
  k.b.yield({});
  k.finish();
  std::vector<int32_t> o(32, -1);
  run(k, 1, 32, {ptr(o.data())}, {region(o, "out")});
  for (int i = 0; i < 32; ++i) EXPECT_EQ(o[size_t(i)], i % 2 == 0 ? i : -1) << i;
}

TEST(DeviceEmulator, VotesOverActiveLanesInTheMask) {
  Kernel k("votes");
  Value* in = k.arg(ptr_i32());
  Value* out = k.arg(ptr_i32());
  Value* t = k.tid();
  Value* pred = k.b.cmp(CmpPredicate::Ne, k.load(in, t), k.c(0));
  Value* mask = k.c(0x0000FFFF);
  Op* op = k.b.create_if(k.b.cmp(CmpPredicate::Lt, k.b.special(OpCode::LaneIdx), k.c(16)));
  k.b.set_block(op->region_block(0));
  Value* base = k.b.binary(OpCode::Mul, t, k.c(4));
  k.store(out, base, k.b.vote(VoteKind::Ballot, pred, mask));
  for (int j = 1; j <= 3; ++j)
    k.store(out, k.b.binary(OpCode::Add, base, k.c(j)), k.b.cast(k.b.vote(VoteKind(j), pred, mask), i32()));
  k.b.yield({});
  k.b.set_block(op->region_block(1));
  k.b.yield({});
  k.finish();
  // warp 0: lanes 3 and 9 true; warp 1: all 16 true; warp 2: none (the upper half does not vote)
  std::vector<int32_t> a(96, 0), o(96 * 4, -7);
  a[3] = a[9] = 1;
  for (int i = 32; i < 48; ++i) a[size_t(i)] = 1;
  a[70 + 16] = 1;
  run(k, 1, 96, {ptr(a.data()), ptr(o.data())}, {region(a, "in"), region(o, "out")});
  const int32_t ballots[3] = {(1 << 3) | (1 << 9), 0xFFFF, 0};
  for (int w = 0; w < 3; ++w)
    for (int l = 0; l < 16; ++l) {
      const int32_t* r = &o[size_t(w * 32 + l) * 4];
      EXPECT_EQ(r[0], ballots[w]);
      EXPECT_EQ(r[1], ballots[w] != 0);
      EXPECT_EQ(r[2], ballots[w] == 0xFFFF);
      EXPECT_EQ(r[3], ballots[w] == 0 || ballots[w] == 0xFFFF);
    }
}

TEST(DeviceEmulator, AtomicsAreAtomicAcrossHostThreads) {
  Kernel k("counter");
  Value* counter = k.arg(ptr_i32());
  Value* olds = k.arg(ptr_i32());
  Value* fsum = k.arg(pointer_type(f64(), AddrSpace::Gmem, 8));
  Value* i = k.global_tid();
  k.store(olds, i, k.b.atomic(AtomicKind::Add, MemoryOrder::Relaxed, MemoryScope::Gpu, counter, k.c(1)));
  k.b.atomic(AtomicKind::Add, MemoryOrder::Relaxed, MemoryScope::Gpu, fsum, k.b.cast(i, f64()));
  k.b.atomic(AtomicKind::Max, MemoryOrder::Relaxed, MemoryScope::Gpu, k.b.ptr_add(counter, k.c(1)), i);
  k.finish();
  const unsigned blocks = 64, threads = 64, n = blocks * threads;
  std::vector<int32_t> c(2, 0), o(n, -1);
  std::vector<double> s(1, 0.0);
  std::vector<MemoryRegion> regions = {region(c, "counter"), region(o, "olds"),
                                       {uintptr_t(s.data()), uintptr_t(s.data() + 1), "sum"}};
  run(k, blocks, threads, {ptr(c.data()), ptr(o.data()), ptr(s.data())}, regions, 4);
  EXPECT_EQ(c[0], int(n));
  EXPECT_EQ(c[1], int(n) - 1);
  EXPECT_EQ(s[0], double(n) * (n - 1) / 2);
  std::vector<int32_t> sorted = o;
  std::sort(sorted.begin(), sorted.end());
  for (unsigned j = 0; j < n; ++j) ASSERT_EQ(sorted[j], int(j));
}

TEST(DeviceEmulator, SharedMemoryStaticThenDynamic) {
  // Warp w writes its ids into static and dynamic shared memory; after the barrier each thread
  // reads the slot of the mirrored thread, which another warp wrote.
  Kernel k("smem");
  Value* out = k.arg(ptr_i32());
  Value* t = k.tid();
  Value* st = k.b.smem_alloc(i32(), 100, 16);
  Value* dyn = k.b.dyn_smem(i32(), 256);
  k.store(st, t, k.b.binary(OpCode::Mul, t, k.c(3)));
  k.store(dyn, t, k.b.binary(OpCode::Add, t, k.c(500)));
  k.b.barrier();
  Value* mirror = k.b.binary(OpCode::Sub, k.c(99), t);
  k.store(out, t, k.b.binary(OpCode::Add, k.load(st, mirror), k.load(dyn, mirror)));
  k.store(out, k.b.binary(OpCode::Add, t, k.c(100)), k.b.dyn_smem_size());
  k.finish();
  std::vector<int32_t> o(200);
  run(k, 3, 100, {ptr(o.data())}, {region(o, "out")}, 2, 400);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(o[size_t(i)], (99 - i) * 3 + (99 - i) + 500) << i;
    EXPECT_EQ(o[size_t(100 + i)], 400);
  }
  // Past the dynamic bytes the launch asked for.
  Kernel bad("smem_oob");
  Value* d = bad.b.dyn_smem(f32(), 16);
  bad.b.store(bad.b.const_float(f32(), 1.0), bad.b.ptr_add(d, bad.tid()));
  bad.finish();
  try {
    run(bad, 1, 32, {}, {}, 1, 64);
    FAIL() << "expected an error";
  } catch (const ExecutionError& e) {
    std::string s = e.what();
    EXPECT_NE(s.find("out-of-bounds shared-memory store of 4 bytes at offset 64 of the block's 64 bytes"), std::string::npos) << s;
    EXPECT_NE(s.find("thread (16,0,0)"), std::string::npos) << s;
  }
}

TEST(DeviceEmulator, FailedAssertionNamesThreadMessageAndSource) {
  Kernel k("checked");
  Value* t = k.global_tid();
  k.b.assertion(k.b.cmp(CmpPredicate::Ne, t, k.c(77)), "t is not 77", "/src/kernel.py", 12);
  k.finish();
  try {
    run(k, 4, 32, {});
    FAIL() << "expected an error";
  } catch (const AssertionFailure& e) {
    EXPECT_EQ(std::string(e.what()),
              "device assertion failed in kernel 'checked', block (2,0,0) thread (13,0,0): t is not 77 (/src/kernel.py:12)");
    EXPECT_EQ(e.file, "/src/kernel.py");
    EXPECT_EQ(e.line, 12);
  }
}

TEST(HostInterpreter, FailedAssertionNamesMessageAndSource) {
  Module m;
  Function* f = m.add_function("host", FunctionKind::Host);
  Value* n = f->body->add_arg(i32());
  Builder b(f->body.get());
  b.assertion(b.cmp(CmpPredicate::Gt, n, b.const_int(i32(), 0)), "n > 0", "/src/host.py", 3);
  b.assertion(b.const_bool(true), "never emitted", "/src/host.py", 4);
  b.ret({});
  int asserts = 0;
  for (auto& op : f->body->ops) asserts += op->code == OpCode::Assert;
  ASSERT_EQ(asserts, 1);  // a constant-true condition emits nothing
  opencute::emulator::HostInterpreter interp(*f);
  interp.run({Scalar::of_int(1)}, nullptr);
  try {
    interp.run({Scalar::of_int(0)}, nullptr);
    FAIL() << "expected an error";
  } catch (const AssertionFailure& e) {
    EXPECT_EQ(std::string(e.what()), "host assertion failed: n > 0 (/src/host.py:3)");
    EXPECT_EQ(e.line, 3);
  }
}

namespace {

// Device memory standing for a GPU's: addresses from kDevice on name `host`'s bytes, as GPU
// memory staged through host memory does (runtime/host_staging.h); any other unknown address is refused.
constexpr uintptr_t kDevice = uintptr_t(0x7e0000000000);
struct FakeDeviceMap final : opencute::emulator::DeviceAddressMap {
  std::vector<int32_t>* host = nullptr;
  uintptr_t host_address(uintptr_t address, size_t bytes) const override {
    if (address >= kDevice && address + bytes <= kDevice + host->size() * 4)
      return reinterpret_cast<uintptr_t>(host->data()) + (address - kDevice);
    throw ExecutionError("the address is neither host memory nor device memory staged for the emulated launch");
  }
};

// out_table[0] holds a device address; each thread t stores t at ((int32*)out_table[0])[t].
Kernel& store_through_loaded_pointer(Kernel& k) {
  Value* table = k.arg(pointer_type(i64(), AddrSpace::Gmem, 8));
  Value* address = k.b.load(table, i64());
  Op* to_ptr = k.b.create(OpCode::IntToPtr, {address}, {ptr_i32()});
  to_ptr->line = 42;
  Value* out = to_ptr->result();
  Value* t = k.tid();
  Op* store = nullptr;
  k.store(out, t, t);
  store = k.f->body->ops.back().get();
  store->line = 43;
  k.finish();
  return k;
}

void run_with_device_map(const Kernel& k, unsigned block, int64_t* table, const FakeDeviceMap& map) {
  DeviceEmulator emu(*k.f);
  LaunchRequest r{};
  r.grid[0] = r.grid[1] = r.grid[2] = 1;
  r.block[0] = block, r.block[1] = r.block[2] = 1;
  r.cluster[0] = r.cluster[1] = r.cluster[2] = 1;
  std::vector<Scalar> args = {ptr(table)};
  r.num_args = args.size();
  std::vector<Type> types = {k.f->body->args[0]->type};
  r.arg_types = types.data();
  r.args = args.data();
  std::vector<MemoryRegion> regions = {MemoryRegion{uintptr_t(table), uintptr_t(table + 1), "tensor argument `table`"}};
  EmulatorConfig cfg;
  cfg.regions = &regions;
  cfg.strict = true;
  cfg.device_memory = &map;
  cfg.threads = 1;
  emu.launch(r, cfg);
}

}  // namespace

TEST(DeviceEmulator, ADeviceAddressLoadedFromMemoryIsAccessedThroughItsHostCopy) {
  // A table of device pointers (grouped GEMM's): the kernel loads the address and stores through
  // it; the launch's DeviceAddressMap serves the device memory's host copy.
  Kernel k("through_table");
  store_through_loaded_pointer(k);
  std::vector<int32_t> staged(40, -1);
  FakeDeviceMap map;
  map.host = &staged;
  int64_t table = int64_t(kDevice + 8);  // element 2 of the device buffer
  run_with_device_map(k, 32, &table, map);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(staged[size_t(i)], i >= 2 && i < 34 ? i - 2 : -1) << i;
}

TEST(DeviceEmulator, AnAddressTheDeviceMapRefusesStopsTheLaunchAtTheKernelLine) {
  // A kernel that forges pointers runs without bounds checks (its buffers' extents are unknown),
  // but never dereferences an address the device map refuses (a device address nobody staged
  // would crash the process): the error names the store's line and the map's reason.
  Kernel k("through_table");
  store_through_loaded_pointer(k);
  std::vector<int32_t> staged(8, -1);
  FakeDeviceMap map;
  map.host = &staged;
  int64_t table = int64_t(kDevice + 16);
  try {
    run_with_device_map(k, 32, &table, map);
    FAIL() << "expected an error";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "an access of 4 bytes at address 0x7e0000000020: the address is neither host memory nor device memory "
              "staged for the emulated launch in kernel 'through_table' (line 43), block (0,0,0) thread (4,0,0)");
  }
}
