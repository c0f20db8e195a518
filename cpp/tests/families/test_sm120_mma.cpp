// The SM120 block-scaled MMA family's IR op (OpCode::MmaSyncBlockScaled): its text round-trips, its
// NVVM lowering names the PTX instruction with the operands in PTX order, and libNVVM + nvJitLink
// accept it for sm_120a (skipped when the toolkit is missing). The emulator's semantics are checked
// against numpy in tests/nvgpu/test_mma_sm120_block_scaled.py.
#include <gtest/gtest.h>

#include "nvvm_test_support.h"

#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "support/cuda_paths.h"
#include "target/nvvm/lower_to_nvvm.h"
#include "target/nvvm/nvvm_compiler.h"

namespace {

using namespace opencute;
using nvvm_test::have_libnvvm;
using ir::AddrSpace;
using ir::BlockScaledFormat;
using ir::OpCode;
using ir::Value;

struct Variant {
  ir::Tcgen05Kind kind;
  int k, scale_vec;
  BlockScaledFormat ab, sf;
  const char* ptx;
};

std::vector<Variant> variants() {
  return {
      {ir::Tcgen05Kind::MXF4NVF4, 64, 4, BlockScaledFormat::E2M1, BlockScaledFormat::UE4M3,
       "mma.sync.aligned.kind::mxf4nvf4.block_scale.scale_vec::4X.m16n8k64.row.col.f32.e2m1.e2m1.f32.ue4m3"},
      {ir::Tcgen05Kind::MXF4, 64, 2, BlockScaledFormat::E2M1, BlockScaledFormat::UE8M0,
       "mma.sync.aligned.kind::mxf4.block_scale.scale_vec::2X.m16n8k64.row.col.f32.e2m1.e2m1.f32.ue8m0"},
      {ir::Tcgen05Kind::MXF8F6F4, 32, 1, BlockScaledFormat::E4M3, BlockScaledFormat::UE8M0,
       "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e4m3.e4m3.f32.ue8m0"},
  };
}

// kernel(words, acc): each lane loads 4 A, 2 B, 4 C and the two factor registers, runs one MMA and
// stores D.
struct Kernel {
  ir::Module m;
  explicit Kernel(const Variant& v) {
    ir::Function* f = m.add_function("mma", ir::FunctionKind::Kernel);
    ir::Builder b(f->body.get());
    Value* pw = f->body->add_arg(ir::pointer_type(ir::i32(), AddrSpace::Gmem, 4));
    Value* pc = f->body->add_arg(ir::pointer_type(ir::f32(), AddrSpace::Gmem, 4));
    Value* lane = b.special(OpCode::ThreadIdx);
    std::vector<Value*> operands;
    for (int i = 0; i < 8; ++i)
      if (i < 6) operands.push_back(b.load(b.ptr_add(pw, b.binary(OpCode::Add, lane, b.const_int(ir::i32(), 32 * i))), ir::i32()));
    for (int i = 0; i < 4; ++i)
      operands.push_back(b.load(b.ptr_add(pc, b.binary(OpCode::Add, lane, b.const_int(ir::i32(), 32 * i))), ir::f32()));
    for (int i = 6; i < 8; ++i)
      operands.push_back(b.load(b.ptr_add(pw, b.binary(OpCode::Add, lane, b.const_int(ir::i32(), 32 * i))), ir::i32()));
    ir::Op* op = b.create(OpCode::MmaSyncBlockScaled, operands, std::vector<ir::Type>(4, ir::f32()));
    op->int_attr = int64_t(v.kind);
    op->ints = {16, 8, v.k, v.scale_vec, int64_t(v.ab), int64_t(v.ab), int64_t(v.sf)};
    for (int i = 0; i < 4; ++i) b.store(op->result(i), b.ptr_add(pc, b.binary(OpCode::Add, lane, b.const_int(ir::i32(), 32 * i))));
    b.ret({});
    ir::verify_or_throw(m);
  }
};

TEST(Sm120Mma, IrTextRoundTrips) {
  for (const Variant& v : variants()) {
    Kernel k(v);
    std::string text = ir::print_module(k.m);
    EXPECT_NE(text.find("mma_sync_block_scaled ["), std::string::npos) << text;
    EXPECT_EQ(ir::print_module(*ir::parse_module(text)), text);
  }
}

TEST(Sm120Mma, LowersToBlockScaledMmaSyncAcceptedForSm120a) {
  for (const Variant& v : variants()) {
    Kernel k(v);
    target::NvvmModuleText t = target::lower_kernels_to_nvvm(k.m);
    // PTX operand order: d, a, b, c, scale-a-data, {byte-id, thread-id}, scale-b-data, {...}.
    const std::string operands = " {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13}, $14, {0, 0}, $15, {0, 0};";
    EXPECT_NE(t.text.find(std::string(v.ptx) + operands), std::string::npos) << t.text;
    if (!have_libnvvm()) continue;
    target::PtxResult p;
    try {
      p = target::compile_nvvm_ir_to_ptx(t.text, "sm_120a", 3, false, t.needs_libdevice);
    } catch (const target::CompileError& e) {
      ADD_FAILURE() << v.ptx << ": " << e.what() << "\n" << t.text;
      continue;
    }
    EXPECT_NE(p.ptx.find(v.ptx), std::string::npos) << p.ptx;
    try {
      target::CubinResult c = target::link_ptx_to_cubin(p.ptx, "sm_120a", 3, "");
      EXPECT_GE(c.cubin.size(), 4u);
    } catch (const support::CudaNotFoundError&) {
    } catch (const target::CompileError& e) {
      ADD_FAILURE() << v.ptx << ": " << e.what() << "\n" << p.ptx;
    }
  }
}

}  // namespace
