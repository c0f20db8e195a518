// `_core._LaunchFloor`: the driver floor of benchmarks/bench_call_overhead.py inside the
// benchmark's process (runtime/launch_floor_kernel.h), so that batches of floor launches and of
// compiled calls can alternate and be compared pairwise under the same machine state.
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_launch_floor(nanobind::module_& m);

}  // namespace opencute::bindings
