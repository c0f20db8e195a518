#include "runtime/occupancy.h"

#include <dlfcn.h>

#include <string>

#include "runtime/cuda_driver.h"
#include "support/cuda_paths.h"

namespace opencute::runtime {
namespace {

// The driver API's types, as laid out in cuda.h (this project does not include cuda.h).
using CUresult = int;
using CUmodule = void*;
using CUfunction = void*;

union alignas(8) LaunchAttributeValue {
  char pad[64];
  struct {
    unsigned x, y, z;
  } cluster_dim;
};

struct LaunchAttribute {
  int id;
  char pad[8 - sizeof(int)];
  LaunchAttributeValue value;
};

struct LaunchConfig {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes;
  void* stream;
  LaunchAttribute* attrs;
  unsigned num_attrs;
};
static_assert(sizeof(LaunchAttribute) == 72, "CUlaunchAttribute layout");
static_assert(sizeof(LaunchConfig) == 56, "CUlaunchConfig layout");

constexpr int kAttrMultiprocessorCount = 16;            // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrComputeCapabilityMajor = 75;         // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrMaxSharedPerBlockOptin = 97;         // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
constexpr int kFuncMaxDynamicShared = 8;                // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int kFuncNonPortableClusterSizeAllowed = 14;  // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
constexpr int kLaunchAttrClusterDimension = 4;          // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
constexpr unsigned kProbeThreads = 128;

// An empty kernel; the driver JIT-compiles it for the device (sm_90 PTX runs on later archs).
constexpr const char* kProbePtx =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".visible .entry opencute_occupancy_probe()\n{\n  ret;\n}\n";

struct Api {
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*FuncSetAttribute)(CUfunction, int, int);
  CUresult (*OccupancyMaxActiveClusters)(int*, CUfunction, const LaunchConfig*);
  CUresult (*GetErrorName)(CUresult, const char**);
};

const Api& api() {
  static const Api a = [] {
    std::string searched;
    void* lib = support::open_library({"libcuda.so.1"}, &searched);
    if (!lib) throw CudaError("the CUDA driver (libcuda.so.1) could not be loaded", CudaError::kDriverNotLoaded);
    Api r{};
    auto bind = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      if (!fn) throw CudaError(std::string("the CUDA driver has no ") + name, CudaError::kDriverNotLoaded);
    };
    bind(r.ModuleLoadData, "cuModuleLoadData");
    bind(r.ModuleUnload, "cuModuleUnload");
    bind(r.ModuleGetFunction, "cuModuleGetFunction");
    bind(r.FuncSetAttribute, "cuFuncSetAttribute");
    bind(r.OccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters");
    bind(r.GetErrorName, "cuGetErrorName");
    return r;
  }();
  return a;
}

void check(const char* call, CUresult r) {
  if (r == 0) return;
  const char* name = nullptr;
  if (api().GetErrorName(r, &name) != 0 || !name) name = "unrecognized CUresult";
  throw CudaError(std::string(call) + " failed: " + name + " (" + std::to_string(r) + ")", r);
}

}  // namespace

int max_active_clusters(int device, int cluster_size) {
  if (cluster_size < 1) throw CudaError("max_active_clusters: cluster_size must be positive", 1);
  CudaDriver& driver = CudaDriver::get();
  driver.ensure_context(device);
  const int sm_count = driver.device_attribute(kAttrMultiprocessorCount, device);
  if (driver.device_attribute(kAttrComputeCapabilityMajor, device) < 9) {
    if (cluster_size == 1) return sm_count;
    throw CudaError("max_active_clusters: thread-block clusters need sm_90 or newer", 1);
  }
  const Api& a = api();
  CUmodule module = nullptr;
  check("cuModuleLoadData(occupancy probe)", a.ModuleLoadData(&module, kProbePtx));
  struct Unload {
    const Api& a;
    CUmodule m;
    ~Unload() { a.ModuleUnload(m); }
  } unload{a, module};
  CUfunction f = nullptr;
  check("cuModuleGetFunction(occupancy probe)", a.ModuleGetFunction(&f, module, "opencute_occupancy_probe"));
  const int smem = driver.device_attribute(kAttrMaxSharedPerBlockOptin, device);
  check("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", a.FuncSetAttribute(f, kFuncMaxDynamicShared, smem));
  if (cluster_size > 8)
    check("cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)",
          a.FuncSetAttribute(f, kFuncNonPortableClusterSizeAllowed, 1));
  LaunchAttribute attr{};
  attr.id = kLaunchAttrClusterDimension;
  attr.value.cluster_dim = {unsigned(cluster_size), 1, 1};
  LaunchConfig cfg{unsigned(cluster_size), 1, 1, kProbeThreads, 1, 1, unsigned(smem), nullptr, &attr, 1};
  int clusters = 0;
  check("cuOccupancyMaxActiveClusters", a.OccupancyMaxActiveClusters(&clusters, f, &cfg));
  return clusters;
}

}  // namespace opencute::runtime
