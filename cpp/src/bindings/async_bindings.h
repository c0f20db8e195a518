// cutlass._core.sm90: the SM90 asynchronous machinery (mbarrier ops, fences; dsl/mbarrier).
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_async(nanobind::module_& root);

}  // namespace opencute::bindings
