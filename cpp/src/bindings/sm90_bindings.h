// cutlass._core.sm90_warp: the Hopper warp / CTA and cluster ops of cute.arch (dsl/sm90_ops).
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_sm90(nanobind::module_& m);

}  // namespace opencute::bindings
