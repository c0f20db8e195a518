// cutlass._core.sm90_tensormap: TMA descriptors in device memory and the NVVM-level predicated TMA
// load (cute/atom/tensormap_sm90).
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_tensormap(nanobind::module_& root);

}  // namespace opencute::bindings
