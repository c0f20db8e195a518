// The SM90 warpgroup MMA's shared-memory descriptors: the fields cute/atom/mma_sm90 derives from a
// canonical smem layout, read back by the emulator's descriptor decoding (an implementation of the
// PTX ISA's canonical layouts written separately, in bytes), must reach every element where the
// layout and the 16-byte-chunk swizzle put it. Also the hand-computed fields of one layout per
// swizzle and the rejection of a non-canonical layout.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "cute/atom/mma_sm90.h"
#include "dsl/tracer.h"
#include "emulator/sm90_mma.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "layout/layout.h"

namespace {

using namespace opencute;
namespace L = opencute::layout;
using cute::OperandMajor;
using L::IntTuple;
using L::Layout;

IntTuple T(std::initializer_list<IntTuple> e) { return IntTuple(std::vector<IntTuple>(e)); }

// A canonical (MN, K) tile: `b` swizzle bits (0..3), elements of `bits`, MN-extent `mn`, K of 32
// bytes, with the 8-row groups / swizzle atoms laid out at the given (element) strides.
Layout canonical_tile(OperandMajor major, int b, int bits, int64_t mn, int64_t group_stride, int64_t atom_stride) {
  const int64_t t = 128 / bits, w = int64_t(1) << b, k = 256 / bits;
  if (major == OperandMajor::K) {
    if (b == 0)  // ((8,m),(T,2)):((T,SBO),(1,LBO))
      return Layout(T({T({8, mn / 8}), T({t, 2})}), T({T({t, group_stride}), T({1, atom_stride})}));
    return Layout(T({T({8, mn / 8}), k}), T({T({w * t, group_stride}), 1}));  // ((8,m),K):((W*T,SBO),1)
  }
  if (b == 0)  // ((T,m),(8,k)):((1,SBO),(T,LBO))
    return Layout(T({T({t, mn / t}), T({8, k / 8})}), T({T({1, atom_stride}), T({t, group_stride})}));
  return Layout(T({T({w * t, mn / (w * t)}), T({8, k / 8})}), T({T({1, atom_stride}), T({w * t, group_stride})}));
}

uintptr_t swizzled(uintptr_t addr, int b) { return addr ^ ((addr >> 3) & (((uintptr_t(1) << b) - 1) << 4)); }

struct Case {
  OperandMajor major;
  int b, bits;
  int64_t mn, group_stride, atom_stride;
};

TEST(Sm90Descriptors, EmulatorDecodingReachesEveryElementOfTheLayout) {

  const std::vector<Case> cases = {
      // K-major: 8-row groups 8 rows of W*16 bytes apart (dense) or further (padded)
      {OperandMajor::K, 3, 16, 64, 512, 0}, {OperandMajor::K, 2, 16, 64, 256, 0}, {OperandMajor::K, 1, 16, 128, 256, 0},
      {OperandMajor::K, 3, 8, 64, 1024, 0}, {OperandMajor::K, 0, 16, 64, 64, 512}, {OperandMajor::K, 0, 8, 32, 128, 16},
      // MN-major: 8-row groups of K, M/N atoms
      {OperandMajor::MN, 3, 16, 128, 512, 1024}, {OperandMajor::MN, 2, 16, 64, 256, 512},
      {OperandMajor::MN, 1, 16, 64, 128, 256}, {OperandMajor::MN, 0, 16, 64, 64, 128},
  };
  // 1 KiB-aligned "shared memory" of 64 KiB; the operand starts 4 KiB in.
  std::vector<unsigned char> storage(64 * 1024 + 1024);
  const uintptr_t smem = (reinterpret_cast<uintptr_t>(storage.data()) + 1023) & ~uintptr_t(1023);
  const size_t smem_size = 64 * 1024;
  const uintptr_t base = smem + 4096;
  for (const Case& c : cases) {
    SCOPED_TRACE("major " + std::to_string(int(c.major)) + " swizzle " + std::to_string(c.b) + " bits " +
                 std::to_string(c.bits));
    Layout tile = canonical_tile(c.major, c.b, c.bits, c.mn, c.group_stride, c.atom_stride);
    cute::GmmaDescriptorFields f = cute::gmma_descriptor_fields(tile, c.bits, c.b, c.major, "A");
    uint64_t desc = cute::encode_gmma_descriptor(f, base);
    const int64_t k_extent = 256 / c.bits, eb = c.bits / 8;
    for (int64_t mn = 0; mn < c.mn; ++mn)
      for (int64_t k = 0; k < k_extent; ++k) {
        int64_t off = tile(IntTuple{mn, k}).as_int().value();
        uintptr_t want = swizzled(base + uintptr_t(off * eb), c.b);
        uintptr_t got = emulator::wgmma_operand_address(desc, c.major == OperandMajor::MN, c.bits, mn, k, smem, smem_size);
        ASSERT_EQ(got, want) << "element (" << mn << "," << k << ")";
      }
  }
}

TEST(Sm90Descriptors, FieldsByHand) {

  // f16 K-major 128B: rows of 128 bytes, 8-row groups 1024 bytes apart -> SBO 64, LBO 1, type 1.
  cute::GmmaDescriptorFields f =
      cute::gmma_descriptor_fields(canonical_tile(OperandMajor::K, 3, 16, 64, 512, 0), 16, 3, OperandMajor::K, "A");
  EXPECT_EQ(int(f.layout_type), 1);
  EXPECT_EQ(f.lbo, 1u);
  EXPECT_EQ(f.sbo, 64u);
  EXPECT_EQ(cute::encode_gmma_descriptor(f, 0x2470), (uint64_t(1) << 62) | (uint64_t(64) << 32) | (1u << 16) | 0x247u);
  // f16 MN-major 64B: M atoms 1024 bytes apart (LBO 64), K groups 512 bytes apart (SBO 32), type 2.
  f = cute::gmma_descriptor_fields(canonical_tile(OperandMajor::MN, 2, 16, 64, 256, 512), 16, 2, OperandMajor::MN, "B");
  EXPECT_EQ(int(f.layout_type), 2);
  EXPECT_EQ(f.lbo, 64u);
  EXPECT_EQ(f.sbo, 32u);
  // f16 K-major 32B: SBO 256 bytes, type 3.
  f = cute::gmma_descriptor_fields(canonical_tile(OperandMajor::K, 1, 16, 64, 128, 0), 16, 1, OperandMajor::K, "A");
  EXPECT_EQ(int(f.layout_type), 3);
  EXPECT_EQ(f.sbo, 16u);
  // No swizzle, K-major: 8-row groups 128 bytes apart (SBO 8), K chunks 1024 bytes apart (LBO 64).
  f = cute::gmma_descriptor_fields(canonical_tile(OperandMajor::K, 0, 16, 64, 64, 512), 16, 0, OperandMajor::K, "A");
  EXPECT_EQ(int(f.layout_type), 0);
  EXPECT_EQ(f.lbo, 64u);
  EXPECT_EQ(f.sbo, 8u);
}

TEST(Sm90Descriptors, NonCanonicalLayoutRaises) {

  // K-major 128B swizzle but rows only 64 elements... of 8-bit data (64 bytes): not a 128-byte row.
  Layout bad = Layout(T({T({8, 8}), 32}), T({T({64, 512}), 1}));
  EXPECT_THROW(cute::gmma_descriptor_fields(bad, 8, 3, OperandMajor::K, "A"), dsl::UserError);
}

// cute::smem_descriptor folds a constant offset of the pointer into an add on the base's
// descriptor (CuTe's descriptor iterator). The emulator's shared memory is a host buffer aligned to
// 1 KiB, so the base's 14-bit start field plus the offset may carry into the reserved bits 14 and
// 15: the decoding must still find every element where the descriptor of the moved pointer does,
// and the carry must stay out of LBO and SBO.
TEST(Sm90Descriptors, FoldedOffsetCarriesIntoReservedBitsOnly) {
  std::vector<unsigned char> storage(512 * 1024);
  const uintptr_t window = (reinterpret_cast<uintptr_t>(storage.data()) + 0x3FFFF) & ~uintptr_t(0x3FFFF);
  const uintptr_t smem = window + 0x30000;  // start field 0x3000
  const size_t smem_size = 64 * 1024;
  const uintptr_t base = smem + 0xF000;     // start field 0x3F00
  const uint64_t offset = 0x2000;           // 0x200 16-byte units: the field sum 0x4100 carries into bit 14
  Layout tile = canonical_tile(OperandMajor::K, 3, 16, 64, 512, 0);
  cute::GmmaDescriptorFields f = cute::gmma_descriptor_fields(tile, 16, 3, OperandMajor::K, "A");
  const uint64_t folded = cute::encode_gmma_descriptor(f, base) + offset / 16;
  const uint64_t moved = cute::encode_gmma_descriptor(f, base + offset);
  ASSERT_NE(folded & 0xC000, 0u);
  EXPECT_EQ(folded & 0x3FFF, moved & 0x3FFF);
  EXPECT_EQ(folded >> 16, moved >> 16);
  for (int64_t mn = 0; mn < 64; ++mn)
    for (int64_t k = 0; k < 16; ++k)
      ASSERT_EQ(emulator::wgmma_operand_address(folded, false, 16, mn, k, smem, smem_size),
                emulator::wgmma_operand_address(moved, false, 16, mn, k, smem, smem_size))
          << "element (" << mn << "," << k << ")";
}

TEST(Sm90Descriptors, ConstantOffsetFoldsIntoAnAdd) {
  auto m = std::make_unique<ir::Module>();
  ir::Function* k = m->add_function("kernel_desc", ir::FunctionKind::Kernel);
  ir::Builder b(k->body.get());
  ir::Value* smem = b.dyn_smem(ir::f16(), 1024);
  ir::Value* stage = b.ptr_add(smem, k->body->add_arg(ir::i32()));  // a dynamic stage
  const uint64_t fields = uint64_t(1) << 62;
  // 64 f16 = 128 bytes = 8 units: the stage's descriptor plus 8.
  ir::Value* d = cute::smem_descriptor(b, b.ptr_add(stage, b.const_int(ir::i32(), 64)), fields);
  ASSERT_EQ(d->def->code, ir::OpCode::Add);
  EXPECT_EQ(ir::constant_int(d->def->operands[1]), 8);
  const ir::Op* with_fields = d->def->operands[0]->def;
  ASSERT_EQ(with_fields->code, ir::OpCode::Or);
  EXPECT_EQ(uint64_t(ir::constant_int(with_fields->operands[1])), fields);
  // The start field is the stage pointer's, computed in 32 bits.
  const ir::Op* extend = with_fields->operands[0]->def;
  ASSERT_EQ(extend->code, ir::OpCode::Cast);
  const ir::Op* mask = extend->operands[0]->def;
  ASSERT_EQ(mask->code, ir::OpCode::And);
  EXPECT_EQ(mask->result()->type->width, 32);
  const ir::Op* to_int = mask->operands[0]->def->operands[0]->def;
  ASSERT_EQ(to_int->code, ir::OpCode::PtrToInt);
  EXPECT_EQ(to_int->operands[0], stage);
  // Offsets that are not whole non-negative 16-byte units stay in the pointer.
  for (int64_t elems : {int64_t(4), int64_t(-64)}) {
    ir::Value* e = cute::smem_descriptor(b, b.ptr_add(stage, b.const_int(ir::i32(), elems)), fields);
    EXPECT_EQ(e->def->code, ir::OpCode::Or) << elems;
  }
}

TEST(Sm90Ir, WgmmaOpsPrintParseAndVerify) {
  auto m = std::make_unique<ir::Module>();
  ir::Function* k = m->add_function("kernel_wgmma", ir::FunctionKind::Kernel);
  ir::Value* da = k->body->add_arg(ir::i64());
  ir::Value* db = k->body->add_arg(ir::i64());
  ir::Value* c = k->body->add_arg(ir::f32());
  ir::Builder b(k->body.get());
  b.create(ir::OpCode::WgmmaFence, {}, {});
  std::vector<ir::Value*> ops{da, db, b.const_bool(true)};
  for (int i = 0; i < 4; ++i) ops.push_back(c);
  ir::Op* w = b.create(ir::OpCode::Wgmma, ops, std::vector<ir::Type>(4, ir::f32()));
  w->ints = {64, 8, 16, int64_t(ir::FloatKind::F16), int64_t(ir::FloatKind::F16), 0, 1, 0};
  b.create(ir::OpCode::WgmmaCommit, {}, {});
  b.create(ir::OpCode::WgmmaWait, {}, {})->int_attr = 1;
  b.ret({});
  ir::verify_or_throw(*m);
  std::string text = ir::print_module(*m);
  EXPECT_NE(text.find("wgmma [0, 64, 8, 16"), std::string::npos) << text;
  auto parsed = ir::parse_module(text);
  ir::verify_or_throw(*parsed);
  EXPECT_EQ(ir::print_module(*parsed), text);
}

}  // namespace
