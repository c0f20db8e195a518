// cutlass._core.cute: MMA atoms, TiledMma / ThrMma, cute.gemm and the tiled copies derived
// from a TiledMma (cpp/src/cute/atom/mma_sm80, tiled_mma, algorithm/gemm).
#pragma once
#include <nanobind/nanobind.h>

namespace opencute::bindings {

void bind_mma(nanobind::module_& root);  // after bind_tensors

}  // namespace opencute::bindings
