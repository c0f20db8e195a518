// dsl::layout_struct / smem_capacity_in_bytes: C struct and union layout (offsets checked
// against the layouts a C compiler gives the same members) and the capacity table.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "dsl/smem_layout.h"
#include "dsl/tracer.h"

using namespace opencute::dsl;

namespace {

struct CPair {
  float re, im;
};
struct CMixed {
  float values[32];
  int64_t count;
  CPair pair;
  int8_t flag;
  uint16_t half;
};
union CUnion {
  int32_t word;
  int8_t bytes[6];
  alignas(8) int16_t wide;
};

}  // namespace

TEST(SmemLayout, StructMatchesTheCompiler) {
  StorageLayout l = layout_struct({{128, 4}, {8, 8}, {8, 4}, {1, 1}, {2, 2}}, false, "Mixed");
  EXPECT_EQ(l.offsets, (std::vector<int64_t>{offsetof(CMixed, values), offsetof(CMixed, count), offsetof(CMixed, pair),
                                             offsetof(CMixed, flag), offsetof(CMixed, half)}));
  EXPECT_EQ(l.size, int64_t(sizeof(CMixed)));
  EXPECT_EQ(l.align, int64_t(alignof(CMixed)));
}

TEST(SmemLayout, UnionMatchesTheCompiler) {
  StorageLayout l = layout_struct({{4, 4}, {6, 1}, {2, 8}}, true, "U");
  EXPECT_EQ(l.offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(l.size, int64_t(sizeof(CUnion)));
  EXPECT_EQ(l.align, int64_t(alignof(CUnion)));
}

TEST(SmemLayout, Errors) {
  EXPECT_THROW(layout_struct({}, false, "Empty"), UserError);
  EXPECT_THROW(layout_struct({{4, 3}}, false, "Odd"), UserError);
  EXPECT_THROW(layout_struct({{-1, 4}}, false, "Negative"), UserError);
  EXPECT_EQ(align_up(129, 128, "x"), 256);
  EXPECT_EQ(align_up(128, 128, "x"), 128);
  EXPECT_THROW(align_up(1, 0, "x"), UserError);
}

TEST(SmemLayout, CapacityTable) {
  EXPECT_EQ(smem_capacity_in_bytes("sm_80"), 163 * 1024);
  EXPECT_EQ(smem_capacity_in_bytes("sm_87"), 163 * 1024);
  EXPECT_EQ(smem_capacity_in_bytes("sm_86"), 99 * 1024);
  EXPECT_EQ(smem_capacity_in_bytes("sm_89"), 99 * 1024);
  EXPECT_EQ(smem_capacity_in_bytes("sm_90a"), 232448);
  EXPECT_EQ(smem_capacity_in_bytes("sm_100a"), 227 * 1024);
  EXPECT_THROW(smem_capacity_in_bytes("sm_75"), UserError);
  EXPECT_THROW(smem_capacity_in_bytes("gfx90a"), UserError);
}
