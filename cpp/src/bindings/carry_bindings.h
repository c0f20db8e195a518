// cutlass._core.carry: the flatten / rebuild protocol of C++ values (tensors, layouts, pointers,
// TensorSSA) that cross dynamic control flow (cpp/src/cute/carry.h).
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_carry(nanobind::module_& m);

}  // namespace opencute::bindings
