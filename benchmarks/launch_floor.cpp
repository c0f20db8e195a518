// The CUDA driver's own host cost per launch, for comparison with a compiled OpenCuTe call:
// cuLaunchKernel of an add_one kernel with the same four parameters (two pointers, two ints),
// called from C++ with nothing else around it. Built with -DOPENCUTE_BUILD_BENCHMARKS=ON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/launch_floor_kernel.h"
#include "target/nvvm/nvvm_compiler.h"

namespace {

const char* kKernel = R"(target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
define void @add_one(float addrspace(1)* %a, i32 %n, float addrspace(1)* %b, i32 %m) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %c = icmp slt i32 %tid, %n
  br i1 %c, label %body, label %exit
body:
  %p = getelementptr float, float addrspace(1)* %a, i32 %tid
  %q = getelementptr float, float addrspace(1)* %b, i32 %tid
  %v = load float, float addrspace(1)* %p, align 4
  %w = fadd float %v, 1.0
  store float %w, float addrspace(1)* %q, align 4
  br label %exit
exit:
  ret void
}
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, i32, float addrspace(1)*, i32)* @add_one, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
)";

std::string empty_kernel(int tensors) { return opencute::runtime::launch_floor_kernel_ir(tensors); }

// Same method as benchmarks/bench_add_one.py: batches well under the pending-launch queue
// depth, synchronised outside the timed region; the median batch, in microseconds per launch.
double time_launches(opencute::runtime::CudaDriver& drv, void* f, void** params) {
  for (int i = 0; i < 500; ++i) drv.launch(f, 1, 1, 1, 128, 1, 1, 0, nullptr, params);
  drv.stream_synchronize(nullptr);
  const int batch = 400, reps = 201;
  std::vector<double> per_launch;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) drv.launch(f, 1, 1, 1, 128, 1, 1, 0, nullptr, params);
    auto t1 = std::chrono::steady_clock::now();
    drv.stream_synchronize(nullptr);
    per_launch.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
  }
  std::nth_element(per_launch.begin(), per_launch.begin() + reps / 2, per_launch.end());
  return per_launch[reps / 2];
}

}  // namespace

int main() {
  using namespace opencute;
  auto& drv = runtime::CudaDriver::get();
  if (!drv.available()) {
    // Still compile every kernel, so that a machine without a GPU checks this program.
    for (int tensors : {0, 3, 19}) {
      auto p = target::compile_nvvm_ir_to_ptx(empty_kernel(tensors), "sm_90a", 3, false, false);
      target::link_ptx_to_cubin(p.ptx, "sm_90a", 3, "");
    }
    std::printf("launch_floor: no CUDA device (the kernels compile)\n");
    return 0;
  }
  drv.initialize_context(0);
  std::string arch = drv.device_arch(0);
  auto ptx = target::compile_nvvm_ir_to_ptx(kKernel, arch, 3, false, false);
  auto cubin = target::link_ptx_to_cubin(ptx.ptx, arch, 3, "");
  auto f = drv.get_function(drv.load_module(cubin.cubin), "add_one");
  void* a = drv.mem_alloc(128 * sizeof(float));
  void* b = drv.mem_alloc(128 * sizeof(float));
  int n = 128, m = 128;
  void* params[] = {&a, &n, &b, &m};
  std::printf("| cuLaunchKernel from C++ (driver floor) | %.2f |\n", time_launches(drv, f, params));
  // The floor for bench_call_overhead.py's rows: empty kernels with 0, 3 and 19 tensors'
  // parameters (printed as "launch_floor tensors=N us=X" for that script to read).
  for (int tensors : {0, 3, 19}) {
    auto p = target::compile_nvvm_ir_to_ptx(empty_kernel(tensors), arch, 3, false, false);
    auto c = target::link_ptx_to_cubin(p.ptx, arch, 3, "");
    auto fe = drv.get_function(drv.load_module(c.cubin), "empty");
    std::vector<void*> ptrs(size_t(tensors), a);
    std::vector<int> lens(size_t(tensors), 128);
    std::vector<void*> ps;
    for (int i = 0; i < tensors; ++i) {
      ps.push_back(&ptrs[size_t(i)]);
      ps.push_back(&lens[size_t(i)]);
    }
    std::printf("launch_floor tensors=%d us=%.2f\n", tensors, time_launches(drv, fe, ps.empty() ? nullptr : ps.data()));
  }
  drv.mem_free(a);
  drv.mem_free(b);
  return 0;
}
