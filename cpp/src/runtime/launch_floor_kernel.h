// The driver floor of benchmarks/bench_call_overhead.py: the NVVM IR of an empty kernel taking
// `tensors` (pointer, i32 extent) parameter pairs, what an OpenCuTe kernel taking that many 1-D
// tensors of dynamic length passes per launch. Used by benchmarks/launch_floor.cpp (a process of
// its own) and by `_core._LaunchFloor` (the same launches timed inside the benchmark's process,
// interleaved with the calls they are compared with).
#pragma once
#include <string>

namespace opencute::runtime {

inline std::string launch_floor_kernel_ir(int tensors) {
  std::string params, types;
  for (int i = 0; i < tensors; ++i) {
    params += std::string(i ? ", " : "") + "float addrspace(1)* %p" + std::to_string(i) + ", i32 %n" + std::to_string(i);
    types += std::string(i ? ", " : "") + "float addrspace(1)*, i32";
  }
  return std::string(R"(target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
define void @empty()") + params + R"() {
entry:
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{void ()" + types + R"()* @empty, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
)";
}

}  // namespace opencute::runtime
