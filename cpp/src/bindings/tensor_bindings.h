// cutlass._core.cute: tensors, pointers, copy atoms and tiled copies (cpp/src/cute) for the
// Python DSL.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_tensors(nanobind::module_& m);

}  // namespace opencute::bindings
