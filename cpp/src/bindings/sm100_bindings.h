// cutlass._core.sm100: Blackwell tensor memory and the tcgen05 ops without an atom (dsl/sm100_ops),
// and the tcgen05 MMA and copy atoms (cute/atom/mma_sm100, cute/atom/copy_sm100).
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_sm100(nanobind::module_& m);

}  // namespace opencute::bindings
