// The SM80 MMA family's IR op (OpCode::MmaSync): its NVVM lowering is compiled by libNVVM for
// sm_80 and sm_90a and linked by nvJitLink (skipped when the toolkit is missing), the PTX names
// the instruction, and the emulator's fragment exchange matches a plain matrix product.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "emulator/device_emulator.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/scalar_semantics.h"
#include "ir/verifier.h"
#include "support/cuda_paths.h"
#include "target/nvvm/lower_sm80_mma.h"
#include "target/nvvm/lower_to_nvvm.h"
#include "target/nvvm/nvvm_compiler.h"

namespace {

using namespace opencute;
using nvvm_test::compile_for;
using nvvm_test::contains;
using nvvm_test::have_libnvvm;
using ir::AddrSpace;
using ir::OpCode;
using ir::Type;
using ir::Value;

struct Variant {
  int k;
  Type ab, acc;
  const char* ptx;
};

std::vector<Variant> variants() {
  return {
      {8, ir::f16(), ir::f32(), "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"},
      {16, ir::f16(), ir::f32(), "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
      {8, ir::bf16(), ir::f32(), "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32"},
      {16, ir::bf16(), ir::f32(), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"},
      {8, ir::f16(), ir::f16(), "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16"},
      {16, ir::f16(), ir::f16(), "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"},
  };
}

// kernel(A, B, C, D): each lane loads its fragment values (in PTX operand order) from
// A[lane * na + v] etc., runs one mma.sync and stores D[lane * nc + v].
struct MmaKernel {
  ir::Module m;
  ir::Function* f;
  int na, nb, nc;
  explicit MmaKernel(const Variant& v) : f(m.add_function("mma", ir::FunctionKind::Kernel)) {
    na = 16 * v.k / 32, nb = 8 * v.k / 32, nc = 4;
    ir::Builder b(f->body.get());
    Value* pa = f->body->add_arg(ir::pointer_type(v.ab, AddrSpace::Gmem, 2));
    Value* pb = f->body->add_arg(ir::pointer_type(v.ab, AddrSpace::Gmem, 2));
    Value* pc = f->body->add_arg(ir::pointer_type(v.acc, AddrSpace::Gmem, 2));
    Value* pd = f->body->add_arg(ir::pointer_type(v.acc, AddrSpace::Gmem, 2));
    Value* lane = b.special(OpCode::ThreadIdx);
    std::vector<Value*> operands;
    auto load_all = [&](Value* base, int count, Type t) {
      Value* first = b.binary(OpCode::Mul, lane, b.const_int(ir::i32(), count));
      for (int i = 0; i < count; ++i)
        operands.push_back(b.load(b.ptr_add(base, b.binary(OpCode::Add, first, b.const_int(ir::i32(), i))), t));
    };
    load_all(pa, na, v.ab);
    load_all(pb, nb, v.ab);
    load_all(pc, nc, v.acc);
    ir::Op* op = b.create(OpCode::MmaSync, operands, std::vector<Type>(size_t(nc), v.acc));
    op->ints = {16, 8, v.k};
    Value* first = b.binary(OpCode::Mul, lane, b.const_int(ir::i32(), nc));
    for (int i = 0; i < nc; ++i)
      b.store(op->result(i), b.ptr_add(pd, b.binary(OpCode::Add, first, b.const_int(ir::i32(), i))));
    b.ret({});
    ir::verify_or_throw(m);
  }
};

TEST(Sm80Mma, LowersToMmaSyncAcceptedForSm80AndSm90a) {
  for (const Variant& v : variants()) {
    MmaKernel k(v);
    target::NvvmModuleText t = target::lower_kernels_to_nvvm(k.m);
    EXPECT_NE(t.text.find(std::string("asm \"") + v.ptx + " {"), std::string::npos) << t.text;
    // PTX operand order is d, a, b, c, and the asm's outputs come first: $0.. must name d.
    // (m16n8kK: 4 (k16) or 2 (k8) A registers, k/8 B registers; D/C one per f32 or two f16 per reg.)
    int a_regs = v.k == 16 ? 4 : 2, b_regs = v.k == 16 ? 2 : 1, d_regs = v.acc == ir::f32() ? 4 : 2;
    auto list = [](int first, int count) {
      std::string s = "{";
      for (int i = 0; i < count; ++i) s += (i ? ",$" : "$") + std::to_string(first + i);
      return s + "}";
    };
    std::string operands = list(0, d_regs) + ", " + list(d_regs, a_regs) + ", " + list(d_regs + a_regs, b_regs) +
                           ", " + list(d_regs + a_regs + b_regs, d_regs) + ";";
    EXPECT_NE(t.text.find(std::string(v.ptx) + " " + operands), std::string::npos) << operands << "\n" << t.text;
    if (!have_libnvvm()) continue;
    for (const char* arch : {"sm_80", "sm_90a"}) {
      target::PtxResult p;
      try {
        p = target::compile_nvvm_ir_to_ptx(t.text, arch, 3, false, t.needs_libdevice);
      } catch (const target::CompileError& e) {
        ADD_FAILURE() << arch << " " << v.ptx << ": " << e.what() << "\n" << t.text;
        continue;
      }
      EXPECT_NE(p.ptx.find(v.ptx), std::string::npos) << p.ptx;
      try {
        target::CubinResult c = target::link_ptx_to_cubin(p.ptx, arch, 3, "");
        EXPECT_GE(c.cubin.size(), 4u);
      } catch (const support::CudaNotFoundError&) {
      } catch (const target::CompileError& e) {
        ADD_FAILURE() << arch << " " << v.ptx << ": " << e.what() << "\n" << p.ptx;
      }
    }
  }
}

// The PTX ISA's fragment figures, written out per shape (independent of the emulator's
// formulas): (row, col) of value i of lane l.
std::pair<int, int> ptx_a(int k, int lane, int i) {
  int g = lane / 4, t = lane % 4;
  if (k == 8) return {i < 2 ? g : g + 8, t * 2 + (i & 1)};
  // m16n8k16: a0,a1 (g, 2t..); a2,a3 (g+8, 2t..); a4,a5 (g, 2t+8..); a6,a7 (g+8, 2t+8..)
  int row = (i == 0 || i == 1 || i == 4 || i == 5) ? g : g + 8;
  int col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
  return {row, col};
}
std::pair<int, int> ptx_b(int k, int lane, int i) {
  int g = lane / 4, t = lane % 4;
  if (k == 8) return {t * 2 + i, g};
  return {t * 2 + (i & 1) + (i >= 2 ? 8 : 0), g};
}
std::pair<int, int> ptx_c(int lane, int i) {
  int g = lane / 4, t = lane % 4;
  return {i < 2 ? g : g + 8, t * 2 + (i & 1)};
}

void put(Type t, double v, std::vector<char>& buf, size_t index) {
  ir::store_scalar(t, ir::Scalar::of_float(v), buf.data() + index * size_t(t->byte_size()));
}
double get(Type t, const std::vector<char>& buf, size_t index) {
  return ir::load_scalar(t, buf.data() + index * size_t(t->byte_size())).f;
}

TEST(Sm80Mma, EmulatorMatchesMatrixProduct) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-8, 8);
  for (const Variant& v : variants()) {
    MmaKernel k(v);
    const int K = v.k;
    // Small integers times 1/8: every product and sum is exact in f16, bf16 and f32.
    std::vector<double> A(16 * size_t(K)), B(size_t(K) * 8), C(16 * 8);
    for (auto& x : A) x = small(rng) / 8.0;
    for (auto& x : B) x = small(rng) / 8.0;
    for (auto& x : C) x = small(rng) / 8.0;
    std::vector<char> ba(32 * size_t(k.na) * 2), bb(32 * size_t(k.nb) * 2), bc(32 * 4 * size_t(v.acc->byte_size())),
        bd(bc.size(), 0);
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < k.na; ++i) {
        auto [r, c] = ptx_a(K, lane, i);
        put(v.ab, A[size_t(r * K + c)], ba, size_t(lane * k.na + i));
      }
      for (int i = 0; i < k.nb; ++i) {
        auto [r, c] = ptx_b(K, lane, i);
        put(v.ab, B[size_t(r * 8 + c)], bb, size_t(lane * k.nb + i));
      }
      for (int i = 0; i < 4; ++i) {
        auto [r, c] = ptx_c(lane, i);
        put(v.acc, C[size_t(r * 8 + c)], bc, size_t(lane * 4 + i));
      }
    }
    emulator::DeviceEmulator emu(*k.m.functions[0]);
    emulator::LaunchRequest r{};
    r.grid[0] = r.grid[1] = r.grid[2] = 1;
    r.block[0] = 32, r.block[1] = r.block[2] = 1;
    r.cluster[0] = r.cluster[1] = r.cluster[2] = 1;
    std::vector<ir::Scalar> args;
    for (auto* buf : {&ba, &bb, &bc, &bd}) args.push_back(ir::Scalar::of_int(int64_t(reinterpret_cast<uintptr_t>(buf->data()))));
    std::vector<Type> types;
    for (auto& a : k.f->body->args) types.push_back(a->type);
    r.num_args = args.size();
    r.arg_types = types.data();
    r.args = args.data();
    std::vector<emulator::MemoryRegion> regions;
    emulator::EmulatorConfig cfg;
    cfg.regions = &regions;
    cfg.threads = 1;
    emu.launch(r, cfg);
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i) {
        auto [r, c] = ptx_c(lane, i);
        double want = C[size_t(r * 8 + c)];
        for (int kk = 0; kk < K; ++kk) want += A[size_t(r * K + kk)] * B[size_t(kk * 8 + c)];
        EXPECT_EQ(get(v.acc, bd, size_t(lane * 4 + i)), want) << v.ptx << " lane " << lane << " value " << i;
      }
  }
}

}  // namespace

// The printed IR is the compile cache's key and what an exported object carries: it must say
// everything about the op (shape, types) and parse back to the same module.
TEST(Sm80Mma, IrTextRoundTrips) {
  for (const Variant& v : variants()) {
    MmaKernel k(v);
    std::string text = ir::print_module(k.m);
    EXPECT_NE(text.find("mma_sync m16n8k" + std::to_string(v.k) + " "), std::string::npos) << text;
    EXPECT_EQ(text.find("sync %"), std::string::npos) << "another op's text follows the mma_sync line\n" << text;
    EXPECT_EQ(ir::print_module(*ir::parse_module(text)), text);
  }
}
