#include "bindings/launch_floor_bindings.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/launch_floor_kernel.h"
#include "target/nvvm/nvvm_compiler.h"

namespace opencute::bindings {
namespace {

namespace nb = nanobind;

// An empty kernel with `tensors` (pointer, i32) parameter pairs, loaded on the current device,
// and its launch by cuLaunchKernel with nothing else around it (as benchmarks/launch_floor.cpp).
class LaunchFloor {
 public:
  explicit LaunchFloor(int tensors) {
    if (tensors < 0 || tensors > 100) throw std::invalid_argument("_LaunchFloor: 0 to 100 tensors");
    runtime::CudaDriver& drv = runtime::CudaDriver::get();
    if (!drv.available()) throw std::runtime_error("_LaunchFloor needs a CUDA device");
    drv.ensure_context(0);  // the process's current context (torch's), else device 0's primary one
    const std::string arch = drv.device_arch(0);
    auto ptx = target::compile_nvvm_ir_to_ptx(runtime::launch_floor_kernel_ir(tensors), arch, 3, false, false);
    auto cubin = target::link_ptx_to_cubin(ptx.ptx, arch, 3, "");
    function_ = drv.get_function(drv.load_module(cubin.cubin), "empty");
    buffer_ = drv.mem_alloc(128 * sizeof(float));
    pointers_.assign(size_t(tensors), buffer_);
    lengths_.assign(size_t(tensors), 128);
    for (int i = 0; i < tensors; ++i) {
      params_.push_back(&pointers_[size_t(i)]);
      params_.push_back(&lengths_[size_t(i)]);
    }
  }
  ~LaunchFloor() {
    try {
      runtime::CudaDriver::get().mem_free(buffer_);
    } catch (...) {
      // the context may be gone at interpreter exit
    }
  }
  LaunchFloor(const LaunchFloor&) = delete;
  LaunchFloor& operator=(const LaunchFloor&) = delete;

  // One launch, for a Python call per launch (the floor plus the cost of any Python call).
  void launch() {
    runtime::CudaDriver::get().launch(function_, 1, 1, 1, 128, 1, 1, 0, nullptr, params_.empty() ? nullptr : params_.data());
  }

  // Microseconds per launch of `iters` back-to-back launches on the null stream, synchronised
  // after the timed region (bench_call_overhead.py's method for every row).
  // `spin_ns`: a busy wait before each launch that touches no memory, for telling how much a
  // launch costs more when launches are spaced out (as host work between them spaces them).
  double batch_us(int iters, int spin_ns) {
    runtime::CudaDriver& drv = runtime::CudaDriver::get();
    void** params = params_.empty() ? nullptr : params_.data();
    nb::gil_scoped_release release;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      if (spin_ns > 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns);
        while (std::chrono::steady_clock::now() < until) {
        }
      }
      drv.launch(function_, 1, 1, 1, 128, 1, 1, 0, nullptr, params);
    }
    auto t1 = std::chrono::steady_clock::now();
    drv.stream_synchronize(nullptr);
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / (iters > 0 ? iters : 1);
  }

 private:
  void* function_ = nullptr;
  void* buffer_ = nullptr;
  std::vector<void*> pointers_;
  std::vector<int> lengths_;
  std::vector<void*> params_;
};

}  // namespace

void bind_launch_floor(nb::module_& m) {
  nb::class_<LaunchFloor>(m, "_LaunchFloor",
                          "An empty kernel with N (pointer, int32) parameter pairs and its bare cuLaunchKernel "
                          "(benchmarks/bench_call_overhead.py's driver floor, in the benchmark's process)")
      .def(nb::init<int>(), nb::arg("tensors"))
      .def("batch_us", &LaunchFloor::batch_us, nb::arg("iters"), nb::arg("spin_ns") = 0,
           "Microseconds per launch of `iters` back-to-back launches, synchronised after the timing "
           "(with `spin_ns` of busy waiting before each launch, included)")
      .def("launch", [](LaunchFloor& f, nb::args) { f.launch(); },
           "One launch; the arguments are ignored (a Python call passing what a compiled call passes)");
}

}  // namespace opencute::bindings
