// cutlass._core.layout: the CuTe layout algebra (cpp/src/layout) for the Python DSL.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_layouts(nanobind::module_& m);

}  // namespace opencute::bindings
