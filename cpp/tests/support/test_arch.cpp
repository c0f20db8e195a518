// support::parse_arch and the arch feature table; ir type predicates; the target arch as the
// trace's fact (dsl::Tracer), not a process-wide one.
#include <gtest/gtest.h>

#include "dsl/tracer.h"
#include "ir/types.h"
#include "support/arch.h"

using opencute::support::Arch;
using opencute::support::arch_name;
using opencute::support::parse_arch;

TEST(ArchName, ParsesPrefixDigitsAndSuffix) {
  Arch a = parse_arch("sm_90a");
  EXPECT_EQ(a.number, 90);
  EXPECT_EQ(a.suffix, 'a');
  EXPECT_EQ(a.name, "sm_90a");
  EXPECT_EQ(parse_arch("sm_100a").number, 100);
  EXPECT_EQ(parse_arch("sm_80").number, 80);
  EXPECT_EQ(parse_arch("sm_80").suffix, 0);
  EXPECT_EQ(parse_arch("compute_90a").number, 90);
  EXPECT_EQ(parse_arch("90").number, 90);
  EXPECT_EQ(parse_arch("sm_100f").suffix, 'f');
}

TEST(ArchName, AnythingElseIsUnknown) {
  for (const char* bad : {"", "gfx90a", "sm_", "sm_90ab", "sm_90_", "sm_12345", "foo", "sm90a"}) {
    Arch a = parse_arch(bad);
    EXPECT_EQ(a.number, 0) << bad;
    EXPECT_FALSE(a.known()) << bad;
    EXPECT_FALSE(a.older_than(90)) << bad;  // unknown: the backend reports it
    EXPECT_EQ(a.name, bad);
  }
  EXPECT_TRUE(parse_arch("").empty());
  EXPECT_FALSE(parse_arch("foo").empty());
}

TEST(ArchName, FromComputeCapability) {
  EXPECT_EQ(arch_name(8, 0), "sm_80");
  EXPECT_EQ(arch_name(8, 6), "sm_86");
  EXPECT_EQ(arch_name(9, 0), "sm_90a");
  EXPECT_EQ(arch_name(10, 0), "sm_100a");
  EXPECT_EQ(parse_arch(arch_name(12, 0)).number, 120);
}

TEST(ArchFeatures, Table) {
  Arch sm80 = parse_arch("sm_80"), sm90 = parse_arch("sm_90"), sm90a = parse_arch("sm_90a"),
       sm100a = parse_arch("sm_100a"), sm120a = parse_arch("sm_120a");
  EXPECT_TRUE(sm80.has_cp_async());
  EXPECT_FALSE(sm80.has_stmatrix());
  EXPECT_FALSE(sm80.has_tma());
  EXPECT_TRUE(sm80.older_than(90));
  EXPECT_TRUE(sm90.has_tma());
  EXPECT_FALSE(sm90.has_wgmma());       // wgmma is in the arch-specific set only
  EXPECT_FALSE(sm90.has_setmaxnreg());
  EXPECT_TRUE(sm90a.has_wgmma());
  EXPECT_TRUE(sm90a.has_setmaxnreg());
  EXPECT_FALSE(sm90a.has_tcgen05());
  EXPECT_FALSE(sm100a.has_wgmma());
  EXPECT_TRUE(sm100a.has_setmaxnreg());
  EXPECT_TRUE(sm100a.has_tcgen05());
  EXPECT_FALSE(sm120a.has_tcgen05());   // GeForce Blackwell has no TMEM
  EXPECT_EQ(sm80.smem_capacity_bytes(), 163 * 1024);
  EXPECT_EQ(sm90a.smem_capacity_bytes(), 227 * 1024);
  EXPECT_EQ(sm120a.smem_capacity_bytes(), 99 * 1024);
  EXPECT_EQ(parse_arch("sm_75").smem_capacity_bytes(), -1);
}

TEST(ArchFeatures, NvvmDialect) {
  // libNVVM's parser for sm_100 and newer wants `byval(<type>)`; for sm_90 and older it rejects it.
  EXPECT_FALSE(parse_arch("sm_80").nvvm_byval_names_type());
  EXPECT_FALSE(parse_arch("sm_90a").nvvm_byval_names_type());
  EXPECT_TRUE(parse_arch("sm_100a").nvvm_byval_names_type());
  EXPECT_TRUE(parse_arch("sm_103a").nvvm_byval_names_type());
  EXPECT_TRUE(parse_arch("sm_120a").nvvm_byval_names_type());
  EXPECT_FALSE(parse_arch("").nvvm_byval_names_type());
}

TEST(EmulatedPart, BlackwellArchesStandForB200AndB300) {
  using opencute::support::emulated_part;
  for (const char* name : {"sm_100a", "sm_100f"}) {
    const opencute::support::EmulatedPart* p = emulated_part(parse_arch(name));
    ASSERT_NE(p, nullptr) << name;
    EXPECT_STREQ(p->name, "B200");
    EXPECT_EQ(p->sm_count, 148);
    EXPECT_EQ(p->smem_per_sm_bytes, 228 * 1024);
    EXPECT_EQ(p->smem_per_block_bytes, 227 * 1024);
    EXPECT_EQ(p->smem_per_block_bytes, parse_arch(name).smem_capacity_bytes());  // one figure, two tables agree
    EXPECT_EQ(p->max_cluster_size_portable, 8);
    EXPECT_EQ(p->max_cluster_size_non_portable, 16);
    EXPECT_EQ(p->max_active_clusters(1), 148);
    EXPECT_EQ(p->max_active_clusters(2), 74);
    EXPECT_EQ(p->max_active_clusters(4), 37);
    EXPECT_EQ(p->max_active_clusters(16), 9);
  }
  ASSERT_NE(emulated_part(parse_arch("sm_103a")), nullptr);
  EXPECT_STREQ(emulated_part(parse_arch("sm_103a"))->name, "B300");
  for (const char* name : {"sm_80", "sm_90a", "sm_100", "sm_120", "sm_121a", ""})
    EXPECT_EQ(emulated_part(parse_arch(name)), nullptr) << name;
}

TEST(EmulatedPart, GeForceBlackwellStandsForRtx5090) {
  for (const char* name : {"sm_120a", "sm_120f"}) {
    const opencute::support::EmulatedPart* p = opencute::support::emulated_part(parse_arch(name));
    ASSERT_NE(p, nullptr) << name;
    EXPECT_STREQ(p->name, "RTX 5090");
    EXPECT_EQ(p->sm_count, 170);
    EXPECT_EQ(p->smem_per_sm_bytes, 100 * 1024);
    EXPECT_EQ(p->smem_per_block_bytes, parse_arch(name).smem_capacity_bytes());  // one figure, two tables agree
    EXPECT_EQ(p->max_active_clusters(1), 170);
    EXPECT_EQ(p->max_active_clusters(4), 42);
  }
}

TEST(ArchOfTrace, EachTracerKeepsItsOwn) {
  using opencute::dsl::Tracer;
  EXPECT_TRUE(Tracer::current_target_arch().empty());  // outside tracing: nothing to check
  Tracer outer, inner;
  outer.set_target_arch("sm_80");
  inner.set_target_arch("sm_90a");
  outer.activate();
  EXPECT_EQ(Tracer::current_target_arch().number, 80);
  inner.activate();
  EXPECT_EQ(Tracer::current_target_arch().name, "sm_90a");
  inner.deactivate();
  EXPECT_EQ(Tracer::current_target_arch().name, "sm_80");
  outer.deactivate();
  EXPECT_TRUE(Tracer::current_target_arch().empty());
}

TEST(IrTypePredicates, FloatKindsAndInt8) {
  namespace ir = opencute::ir;
  EXPECT_TRUE(ir::f16()->is_f16());
  EXPECT_FALSE(ir::bf16()->is_f16());
  EXPECT_TRUE(ir::bf16()->is_bf16());
  EXPECT_TRUE(ir::f32()->is_f32());
  EXPECT_TRUE(ir::f64()->is_f64());
  EXPECT_TRUE(ir::f8e4m3()->is_fp8());
  EXPECT_TRUE(ir::f8e5m2()->is_fp8());
  EXPECT_FALSE(ir::f16()->is_fp8());
  EXPECT_FALSE(ir::int_type(8)->is_fp8());  // an 8-bit int is not an 8-bit float
  EXPECT_TRUE(ir::f4e2m1()->is_fp4());
  EXPECT_TRUE(ir::int_type(8)->is_int8());
  EXPECT_TRUE(ir::int_type(8, false)->is_int8());
  EXPECT_FALSE(ir::int_type(16)->is_int8());
  EXPECT_FALSE(ir::bool_type()->is_int8());
  EXPECT_FALSE(ir::vector_type(ir::f16(), 2)->is_f16());  // a vector is not its lane type
}
