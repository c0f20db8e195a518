// cutlass._core.smem: the C layout rules of `cute.struct` / `cute.union` and the shared-memory
// capacity table (cpp/src/dsl/smem_layout) for the Python DSL.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_smem(nanobind::module_& m);

}  // namespace opencute::bindings
