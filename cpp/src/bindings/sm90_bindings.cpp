#include "bindings/sm90_bindings.h"

#include <string>

#include <nanobind/stl/string.h>

#include "bindings/num_convert.h"
#include "dsl/sm90_ops.h"
#include "dsl/tracer.h"

namespace nb = nanobind;

namespace opencute::bindings {

void bind_sm90(nb::module_& root) {
  nb::module_ m = root.def_submodule("sm90_warp", "Hopper warp, CTA and cluster ops");
  m.def("cluster_sreg", [](const std::string& what, int dim) {
    ir::ClusterSregKind k = what == "cluster_idx"            ? ir::ClusterSregKind::ClusterIdx
                            : what == "cluster_dim"          ? ir::ClusterSregKind::ClusterDim
                            : what == "block_in_cluster_idx" ? ir::ClusterSregKind::BlockInCluster
                            : what == "block_in_cluster_dim" ? ir::ClusterSregKind::BlockInClusterDim
                            : what == "cta_rank"             ? ir::ClusterSregKind::CtaRank
                            : what == "cluster_size"         ? ir::ClusterSregKind::ClusterSize
                                                             : throw nb::value_error(("unknown cluster register " + what).c_str());
    return dsl::cluster_sreg(k, dim);
  });
  m.def("cluster_barrier", [](const std::string& what, bool aligned, const std::string& file, int line) {
    ir::ClusterBarrierKind k = what == "arrive"           ? ir::ClusterBarrierKind::Arrive
                               : what == "arrive_relaxed" ? ir::ClusterBarrierKind::ArriveRelaxed
                               : what == "wait"           ? ir::ClusterBarrierKind::Wait
                                                          : throw nb::value_error(("unknown cluster barrier " + what).c_str());
    dsl::cluster_barrier(k, aligned, file, line);
  });
  m.def("map_shared_rank", [](nb::handle ptr, nb::handle rank) { return dsl::map_shared_rank(to_num(ptr), to_num(rank)); });
  m.def("elect_one", [](nb::handle mask) { return dsl::elect_one(to_num(mask)); });
  m.def("sync_warp", [](nb::handle mask) { dsl::sync_warp(to_num(mask)); });
  m.def("setmaxnreg", &dsl::setmaxnreg);
  m.def("prmt", [](nb::handle a, nb::handle b, nb::handle sel) { return dsl::prmt(to_num(a), to_num(b), to_num(sel)); });
  // launch(min_blocks_per_mp=): called while the kernel's function is being traced.
  m.def("set_minctasm", [](int blocks) {
    if (blocks < 0) throw dsl::UserError("LAUNCH_INVALID_ATTRIBUTE", "min_blocks_per_mp must not be negative");
    dsl::Tracer::require("launch").current_function()->minctasm = blocks;
  });
  m.def("warp_uniform", [](nb::handle v) { return dsl::warp_uniform(to_num(v)); });
}

}  // namespace opencute::bindings
