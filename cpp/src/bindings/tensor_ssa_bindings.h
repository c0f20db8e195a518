// cutlass._core.TensorSSA and the ssa_* functions behind cutlass.cute.TensorSSA.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_tensor_ssa(nanobind::module_& m);

}  // namespace opencute::bindings
