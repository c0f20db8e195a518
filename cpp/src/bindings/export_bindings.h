// `_core` functions of ahead-of-time export: the C header and C source of an exported
// function, from the blob a compiled function gives (`JitCompiledFunction._export_blob`).
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_export(nanobind::module_& m);

}  // namespace opencute::bindings
