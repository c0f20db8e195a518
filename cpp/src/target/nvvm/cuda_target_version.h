// The CUDA release whose compiler OpenCuTe's code generator targets: the NVVM IR dialect and the
// PTX it emits are what libNVVM and nvJitLink of that release accept (CUDA 13.0, the toolkit of the
// project's machines). It plays the part of "the CUDA version the DSL was built with" that
// NVIDIA's kernels query with `cutlass.target_version(...)` to pick code written for newer
// compilers; it does not depend on which toolkit (if any) is installed, so a kernel traces the
// same for the emulator and for the GPU.
#pragma once
#include <optional>
#include <string>

namespace opencute::target {

struct CudaVersion {
  int major = 0;
  int minor = 0;
};

CudaVersion targeted_cuda_version();

// "13" or "13.1" (a missing minor is 0). Throws dsl::UserError (VALUE_CUDA_VERSION) otherwise.
CudaVersion parse_cuda_version(const std::string& text);

// Whether the targeted version is `exact` (a major-only `exact` matches every minor of it) and
// lies within [min_version, max_version], each bound optional and inclusive.
bool target_version_matches(const std::optional<std::string>& exact, const std::optional<std::string>& min_version,
                            const std::optional<std::string>& max_version);

}  // namespace opencute::target
