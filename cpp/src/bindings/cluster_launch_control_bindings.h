// cutlass._core.clc: Blackwell cluster launch control for cute.arch (dsl/cluster_launch_control).
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_cluster_launch_control(nanobind::module_& m);

}  // namespace opencute::bindings
