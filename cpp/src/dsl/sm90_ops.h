// The DSL side of the Hopper warp / CTA and cluster ops of cute.arch (elect_one, sync_warp,
// setmaxregister_*, prmt, make_warp_uniform, the cluster special registers, the cluster barrier
// and distributed shared memory addressing): checks the arguments and the target architecture,
// then emits the typed IR ops (ir.h, "Hopper warp/CTA and cluster family").
#pragma once
#include <string>

#include "dsl/num.h"
#include "ir/ir.h"

namespace opencute::dsl {

// One of the cluster special registers (%clusterid.x, %cluster_ctarank, ...); `dim` 0..2 for the
// per-dimension ones, ignored otherwise.
Num cluster_sreg(ir::ClusterSregKind kind, int dim);
// `file` / `line`: where the user wrote it (a deadlock report names it); empty / 0 when unknown.
void cluster_barrier(ir::ClusterBarrierKind kind, bool aligned, const std::string& file = "", int line = 0);
// A generic pointer to the same shared-memory offset as `ptr` in the CTA of rank `cta_rank` of
// this cluster (mapa). `ptr` must point into shared memory.
Num map_shared_rank(const Num& ptr, const Num& cta_rank);
Num elect_one(const Num& member_mask);  // Boolean: true in one active lane of the mask
void sync_warp(const Num& member_mask);
// setmaxnreg.inc / .dec: `count` in [24, 256], a multiple of 8 (sm_90a).
void setmaxnreg(int64_t count, bool increase);
Num prmt(const Num& a, const Num& b, const Num& selector);  // Int32 byte permute (prmt.b32)
Num warp_uniform(const Num& value);

}  // namespace opencute::dsl
