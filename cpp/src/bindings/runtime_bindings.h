// cutlass._core.runtime: host-side tensor specs (from_dlpack and its mark_* methods), pointer
// alignment, and CUDA events for benchmarking.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_runtime(nanobind::module_& m);

}  // namespace opencute::bindings
