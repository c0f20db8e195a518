// `_core` functions of the trace-key cache (runtime/traced_program_cache.h): store a compiled
// function under a trace key, and rebuild one from such an entry without tracing.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_traced_programs(nanobind::module_& m);

}  // namespace opencute::bindings
