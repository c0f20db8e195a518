#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "support/arch.h"
#include "support/cuda_paths.h"

namespace opencute::runtime {
namespace {

// The subset of cuda.h this file needs, declared by hand so that no CUDA header is
// required to build. Layouts follow the public driver API (cuda.h, CUDA 12/13).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;
using CUgraph = void*;
using CUgraphExec = void*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2;
constexpr int CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4;
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT = 7;
constexpr int CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT = 12;
constexpr int CU_STREAM_CAPTURE_STATUS_NONE = 0;

// CUlaunchAttributeValue is a 64-byte union whose widest members hold pointers.
union alignas(8) CUlaunchAttributeValue {
  char pad[64];
  struct {
    unsigned int x, y, z;
  } clusterDim;
  int cooperative;
  int programmaticStreamSerializationAllowed;
  struct {
    CUevent event;
    int flags;
    int triggerAtBlockStart;
  } programmaticEvent;
  struct {
    CUevent event;
    int flags;
  } launchCompletionEvent;
};

struct CUlaunchAttribute {
  int id;  // CUlaunchAttributeID
  char pad[8 - sizeof(int)];
  CUlaunchAttributeValue value;
};

struct CUlaunchConfig {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned int numAttrs;
};

static_assert(sizeof(CUlaunchAttributeValue) == 64, "CUlaunchAttributeValue layout");
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute layout");
static_assert(offsetof(CUlaunchAttribute, value) == 8, "CUlaunchAttribute layout");
static_assert(offsetof(CUlaunchConfig, hStream) == 32, "CUlaunchConfig layout");
static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig layout");

}  // namespace

struct CudaDriver::Api {
  CUresult (*Init)(unsigned int);
  CUresult (*GetErrorName)(CUresult, const char**);
  CUresult (*GetErrorString)(CUresult, const char**);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxGetCurrent)(CUcontext*);
  CUresult (*CtxSynchronize)();
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*FuncSetAttribute)(CUfunction, int, int);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, CUstream, void**, void**);
  CUresult (*LaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);  // optional
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamIsCapturing)(CUstream, int*);
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*PointerGetAttribute)(void*, int, CUdeviceptr);  // optional
  CUresult (*EventCreate)(CUevent*, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventDestroy)(CUevent);
  // CUDA 12.8 added a _v2 (the same signature); newer drivers may drop the old export.
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent);
  const char* event_elapsed_time_name;
  CUresult (*StreamBeginCapture)(CUstream, int);
  CUresult (*StreamEndCapture)(CUstream, CUgraph*);
  CUresult (*GraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*GraphDestroy)(CUgraph);
  // Optional: capture staging (has_capture_staging).
  CUresult (*MemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*LaunchHostFunc)(CUstream, void (*)(void*), void*);
  CUresult (*MemAllocHost)(void**, size_t);
  CUresult (*MemFreeHost)(void*);
  CUresult (*ThreadExchangeStreamCaptureMode)(int*);
  CUresult (*StreamGetCaptureInfo)(CUstream, int*, unsigned long long*, CUgraph*, const void**, size_t*);
  CUresult (*UserObjectCreate)(void**, void*, void (*)(void*), unsigned, unsigned);
  CUresult (*GraphRetainUserObject)(CUgraph, void*, unsigned, unsigned);
  CUresult (*TensorMapEncodeTiled)(void*, int, unsigned, void*, const uint64_t*, const uint64_t*, const uint32_t*,
                                   const uint32_t*, int, int, int, int);  // optional: CUDA 12.0+
};

namespace {

// Kept out of line and cold so the launch path stays a call plus a compare.
[[noreturn]] __attribute__((noinline, cold)) void throw_cuda_error(const CudaDriver::Api& api,
                                                                   const char* call,
                                                                   CUresult r) {
  const char* name = nullptr;
  const char* desc = nullptr;
  if (api.GetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "unrecognized CUresult";
  if (api.GetErrorString(r, &desc) != CUDA_SUCCESS || !desc) desc = "no description";
  throw CudaError(std::string(call) + " failed: " + name + " (" + std::to_string(r) + "): " +
                      desc,
                  r);
}

inline void check(const CudaDriver::Api& api, const char* call, CUresult r) {
  if (__builtin_expect(r != CUDA_SUCCESS, 0)) throw_cuda_error(api, call, r);
}

CUdeviceptr to_dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

// The context this thread is known to have current (read with cuCtxGetCurrent, or made current
// here): a launch from this thread needs no driver call to know it.
thread_local void* context_current_on_this_thread = nullptr;

}  // namespace

CudaDriver& CudaDriver::get() {
  // Never destroyed: kernels and contexts may outlive static destruction order, and the
  // driver tears itself down at process exit anyway.
  static CudaDriver* driver = new CudaDriver();
  return *driver;
}

const CudaDriver::Api& CudaDriver::api() {
  if (const Api* a = api_.load(std::memory_order_acquire)) return *a;
  std::lock_guard<std::mutex> lock(load_mu_);
  if (const Api* a = api_.load(std::memory_order_relaxed)) return *a;
  // The driver is installed system-wide, not in a toolkit root; toolkits only carry a
  // stub libcuda that fails every call, so only the loader path is searched.
  if (!load_tried_) {
    load_tried_ = true;
    std::string searched;
    void* lib = support::open_library({"libcuda.so.1"}, &searched);
    if (!lib) {
      load_error_ = "the CUDA driver (libcuda.so.1) could not be loaded. Searched:\n" +
                    searched + "Is an NVIDIA driver installed on this machine?";
    } else {
      auto* a = new Api();  // lives for the process, like the library
      const char* missing = nullptr;
      auto bind = [&](auto& fn, const char* name, bool required = true) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
        if (!fn && required && !missing) missing = name;
      };
      bind(a->Init, "cuInit");
      bind(a->GetErrorName, "cuGetErrorName");
      bind(a->GetErrorString, "cuGetErrorString");
      bind(a->DeviceGetCount, "cuDeviceGetCount");
      bind(a->DeviceGet, "cuDeviceGet");
      bind(a->DeviceGetAttribute, "cuDeviceGetAttribute");
      bind(a->DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
      bind(a->CtxSetCurrent, "cuCtxSetCurrent");
      bind(a->CtxGetCurrent, "cuCtxGetCurrent");
      bind(a->CtxSynchronize, "cuCtxSynchronize");
      bind(a->ModuleLoadData, "cuModuleLoadData");
      bind(a->ModuleUnload, "cuModuleUnload");
      bind(a->ModuleGetFunction, "cuModuleGetFunction");
      bind(a->FuncSetAttribute, "cuFuncSetAttribute");
      bind(a->LaunchKernel, "cuLaunchKernel");
      bind(a->LaunchKernelEx, "cuLaunchKernelEx", /*required=*/false);  // driver >= 11.8
      bind(a->StreamSynchronize, "cuStreamSynchronize");
      bind(a->StreamIsCapturing, "cuStreamIsCapturing");
      // cuda.h #defines these to their _v2 entry points; the unsuffixed exports keep the
      // old 32-bit-era ABI.
      bind(a->MemAlloc, "cuMemAlloc_v2");
      bind(a->MemFree, "cuMemFree_v2");
      bind(a->MemcpyHtoD, "cuMemcpyHtoD_v2");
      bind(a->MemcpyDtoH, "cuMemcpyDtoH_v2");
      bind(a->PointerGetAttribute, "cuPointerGetAttribute", /*required=*/false);  // staging only
      bind(a->EventCreate, "cuEventCreate");
      bind(a->EventRecord, "cuEventRecord");
      bind(a->EventSynchronize, "cuEventSynchronize");
      bind(a->EventDestroy, "cuEventDestroy_v2");
      a->event_elapsed_time_name = "cuEventElapsedTime_v2";
      bind(a->EventElapsedTime, "cuEventElapsedTime_v2", /*required=*/false);
      if (!a->EventElapsedTime) {
        a->event_elapsed_time_name = "cuEventElapsedTime";
        bind(a->EventElapsedTime, "cuEventElapsedTime");
      }
      bind(a->StreamBeginCapture, "cuStreamBeginCapture_v2");
      bind(a->StreamEndCapture, "cuStreamEndCapture");
      bind(a->GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
      bind(a->GraphLaunch, "cuGraphLaunch");
      bind(a->GraphExecDestroy, "cuGraphExecDestroy");
      bind(a->GraphDestroy, "cuGraphDestroy");
      bind(a->TensorMapEncodeTiled, "cuTensorMapEncodeTiled", /*required=*/false);
      bind(a->MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", /*required=*/false);
      bind(a->MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", /*required=*/false);
      bind(a->LaunchHostFunc, "cuLaunchHostFunc", /*required=*/false);
      bind(a->MemAllocHost, "cuMemAllocHost_v2", /*required=*/false);
      bind(a->MemFreeHost, "cuMemFreeHost", /*required=*/false);
      bind(a->ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", /*required=*/false);
      bind(a->StreamGetCaptureInfo, "cuStreamGetCaptureInfo_v2", /*required=*/false);
      bind(a->UserObjectCreate, "cuUserObjectCreate", /*required=*/false);
      bind(a->GraphRetainUserObject, "cuGraphRetainUserObject", /*required=*/false);
      if (missing) {
        load_error_ = "the CUDA driver at " + support::loaded_library_path(lib) +
                      " lacks " + missing + "; the driver is too old";
        delete a;
        ::dlclose(lib);
      } else {
        api_.store(a, std::memory_order_release);
        return *a;
      }
    }
  }
  throw CudaError(load_error_, CudaError::kDriverNotLoaded);
}

const CudaDriver::Api& CudaDriver::initialized() {
  const Api& a = api();
  std::call_once(init_once_, [&] { init_result_ = a.Init(0); });
  check(a, "cuInit", init_result_);
  return a;
}

bool CudaDriver::available() noexcept {
  std::call_once(available_once_, [this] {
    try {
      available_ = device_count() > 0;
    } catch (...) {
      available_ = false;
    }
  });
  return available_;
}

int CudaDriver::device_count() {
  const Api& a = initialized();
  int n = 0;
  check(a, "cuDeviceGetCount", a.DeviceGetCount(&n));
  return n;
}

void CudaDriver::initialize_context(int device_id) {
  const Api& a = initialized();
  if (device_id < 0 || device_id >= kMaxDevices)
    throw CudaError("initialize_context: device id " + std::to_string(device_id) +
                        " is out of range",
                    101 /* CUDA_ERROR_INVALID_DEVICE */);
  void* ctx = contexts_[device_id].load(std::memory_order_acquire);
  if (!ctx) {
    std::lock_guard<std::mutex> lock(ctx_mu_);
    ctx = contexts_[device_id].load(std::memory_order_relaxed);
    if (!ctx) {
      CUdevice dev = 0;
      check(a, "cuDeviceGet", a.DeviceGet(&dev, device_id));
      // Retained once and never released: the primary context is shared with the CUDA
      // runtime (PyTorch etc.), and keeping it alive avoids re-creating it per use.
      check(a, "cuDevicePrimaryCtxRetain", a.DevicePrimaryCtxRetain(&ctx, dev));
      contexts_[device_id].store(ctx, std::memory_order_release);
    }
  }
  // Called on every TVM-FFI call (the device of its first GPU tensor): reading the thread's
  // current context is cheaper than setting it, and setting the one already current is a no-op.
  CUcontext current = nullptr;
  if (a.CtxGetCurrent(&current) != 0 || current != ctx) check(a, "cuCtxSetCurrent", a.CtxSetCurrent(ctx));
  context_current_on_this_thread = ctx;
}

void CudaDriver::ensure_context(int device_id) {
  const Api& a = initialized();
  CUcontext ctx = nullptr;
  check(a, "cuCtxGetCurrent", a.CtxGetCurrent(&ctx));
  if (!ctx) initialize_context(device_id);
}

void* CudaDriver::current_context() {
  const Api& a = initialized();
  CUcontext ctx = nullptr;
  check(a, "cuCtxGetCurrent", a.CtxGetCurrent(&ctx));
  return ctx;
}

void CudaDriver::ensure_context_current_on_this_thread(void* context) {
  if (__builtin_expect(context_current_on_this_thread == context, 1) || !context) return;
  const Api& a = initialized();
  CUcontext current = nullptr;
  check(a, "cuCtxGetCurrent", a.CtxGetCurrent(&current));
  if (!current) {
    check(a, "cuCtxSetCurrent", a.CtxSetCurrent(context));
    current = context;
  }
  // Another context current: the thread's choice stands, and it is looked at again next time.
  if (current == context) context_current_on_this_thread = context;
}

void CudaDriver::forget_context_on_this_thread() { context_current_on_this_thread = nullptr; }

int CudaDriver::device_attribute(int attr, int device) {
  const Api& a = initialized();
  CUdevice dev = 0;
  check(a, "cuDeviceGet", a.DeviceGet(&dev, device));
  int value = 0;
  check(a, "cuDeviceGetAttribute", a.DeviceGetAttribute(&value, attr, dev));
  return value;
}

std::string CudaDriver::device_arch(int device) {
  int major = device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  int minor = device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  return support::arch_name(major, minor);
}

ModuleHandle CudaDriver::load_module(const std::vector<char>& cubin) {
  const Api& a = initialized();
  if (cubin.empty()) throw CudaError("load_module: empty cubin", 1 /* INVALID_VALUE */);
  // A process that has not touched CUDA yet (numpy inputs, no torch) has no current context:
  // use device 0's primary context, as the CUDA runtime would.
  CUcontext current = nullptr;
  if (a.CtxGetCurrent(&current) != CUDA_SUCCESS || current == nullptr) initialize_context(0);
  CUmodule mod = nullptr;
  check(a, "cuModuleLoadData", a.ModuleLoadData(&mod, cubin.data()));
  return mod;
}

void CudaDriver::unload_module(ModuleHandle module) {
  const Api& a = initialized();
  check(a, "cuModuleUnload", a.ModuleUnload(module));
}

FunctionHandle CudaDriver::get_function(ModuleHandle module, const std::string& name) {
  const Api& a = initialized();
  CUfunction f = nullptr;
  CUresult r = a.ModuleGetFunction(&f, module, name.c_str());
  if (r != CUDA_SUCCESS) {
    // Name the kernel: "not found" alone is useless when a module has several.
    std::string call = "cuModuleGetFunction(\"" + name + "\")";
    throw_cuda_error(a, call.c_str(), r);
  }
  return f;
}

void CudaDriver::set_max_dynamic_smem(FunctionHandle f, int bytes) {
  const Api& a = initialized();
  check(a, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
        a.FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
}

void CudaDriver::allow_non_portable_cluster_size(FunctionHandle f) {
  const Api& a = initialized();
  constexpr int kNonPortableClusterSizeAllowed = 14;  // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (cuda.h)
  check(a, "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)",
        a.FuncSetAttribute(f, kNonPortableClusterSizeAllowed, 1));
}

void CudaDriver::launch(FunctionHandle f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned smem_bytes, StreamHandle stream,
                        void** params) {
  // A FunctionHandle can only come from get_function(), so the driver is loaded and
  // initialized here; the acquire load is the only overhead beyond the driver call.
  const Api* a = api_.load(std::memory_order_acquire);
  if (__builtin_expect(a == nullptr, 0)) a = &initialized();
  check(*a, "cuLaunchKernel",
        a->LaunchKernel(f, gx, gy, gz, bx, by, bz, smem_bytes, stream, params, nullptr));
}

void CudaDriver::launch_cluster(FunctionHandle f, unsigned gx, unsigned gy, unsigned gz,
                                unsigned bx, unsigned by, unsigned bz, unsigned cx,
                                unsigned cy, unsigned cz, unsigned smem_bytes,
                                StreamHandle stream, void** params) {
  const Api* a = api_.load(std::memory_order_acquire);
  if (__builtin_expect(a == nullptr, 0)) a = &initialized();
  if (!a->LaunchKernelEx)
    throw CudaError("launch_cluster: the CUDA driver has no cuLaunchKernelEx (driver < 11.8)",
                    801 /* CUDA_ERROR_NOT_SUPPORTED */);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = cx;
  attr.value.clusterDim.y = cy;
  attr.value.clusterDim.z = cz;
  CUlaunchConfig cfg{gx, gy, gz, bx, by, bz, smem_bytes, stream, &attr, 1};
  check(*a, "cuLaunchKernelEx", a->LaunchKernelEx(&cfg, f, params, nullptr));
}

void CudaDriver::launch_ex(FunctionHandle f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                           unsigned bz, const LaunchAttributes& la, unsigned smem_bytes, StreamHandle stream,
                           void** params) {
  const Api* a = api_.load(std::memory_order_acquire);
  if (__builtin_expect(a == nullptr, 0)) a = &initialized();
  if (!a->LaunchKernelEx)
    throw CudaError("a launch with attributes (cluster, cooperative, PDL, events) needs cuLaunchKernelEx, which "
                    "this CUDA driver lacks (driver < 11.8)",
                    801 /* CUDA_ERROR_NOT_SUPPORTED */);
  CUlaunchAttribute attrs[5] = {};
  unsigned n = 0;
  if (la.has_cluster) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = la.cluster[0];
    attrs[n].value.clusterDim.y = la.cluster[1];
    attrs[n].value.clusterDim.z = la.cluster[2];
    ++n;
  }
  if (la.cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    ++n;
  }
  if (la.pdl) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n].value.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (la.programmatic_event) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
    attrs[n].value.programmaticEvent.event = static_cast<CUevent>(la.programmatic_event);
    attrs[n].value.programmaticEvent.flags = la.programmatic_event_flags;
    attrs[n].value.programmaticEvent.triggerAtBlockStart = la.programmatic_trigger_at_block_start;
    ++n;
  }
  if (la.completion_event) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
    attrs[n].value.launchCompletionEvent.event = static_cast<CUevent>(la.completion_event);
    attrs[n].value.launchCompletionEvent.flags = la.completion_event_flags;
    ++n;
  }
  CUlaunchConfig cfg{gx, gy, gz, bx, by, bz, smem_bytes, stream, attrs, n};
  check(*a, "cuLaunchKernelEx", a->LaunchKernelEx(&cfg, f, params, nullptr));
}

void CudaDriver::stream_synchronize(StreamHandle stream) {
  const Api& a = initialized();
  check(a, "cuStreamSynchronize", a.StreamSynchronize(stream));
}

void CudaDriver::context_synchronize() {
  const Api& a = initialized();
  check(a, "cuCtxSynchronize", a.CtxSynchronize());
}

bool CudaDriver::stream_is_capturing(StreamHandle stream) {
  const Api& a = initialized();
  int status = CU_STREAM_CAPTURE_STATUS_NONE;
  check(a, "cuStreamIsCapturing", a.StreamIsCapturing(stream, &status));
  // An invalidated capture still counts: work issued now would break it just the same.
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void* CudaDriver::mem_alloc(size_t bytes) {
  const Api& a = initialized();
  CUdeviceptr p = 0;
  check(a, "cuMemAlloc_v2", a.MemAlloc(&p, bytes));
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

void CudaDriver::mem_free(void* ptr) {
  const Api& a = initialized();
  check(a, "cuMemFree_v2", a.MemFree(to_dptr(ptr)));
}

void CudaDriver::memcpy_htod(void* dst_device, const void* src_host, size_t bytes) {
  const Api& a = initialized();
  check(a, "cuMemcpyHtoD_v2", a.MemcpyHtoD(to_dptr(dst_device), src_host, bytes));
}

void CudaDriver::memcpy_dtoh(void* dst_host, const void* src_device, size_t bytes) {
  const Api& a = initialized();
  check(a, "cuMemcpyDtoH_v2", a.MemcpyDtoH(dst_host, to_dptr(src_device), bytes));
}

bool CudaDriver::has_capture_staging() {
  const Api& a = initialized();
  return a.MemcpyDtoHAsync && a.MemcpyHtoDAsync && a.LaunchHostFunc;
}

void CudaDriver::memcpy_dtoh_async(void* dst_host, const void* src_device, size_t bytes, StreamHandle stream) {
  const Api& a = initialized();
  check(a, "cuMemcpyDtoHAsync_v2", a.MemcpyDtoHAsync(dst_host, to_dptr(src_device), bytes, stream));
}

void CudaDriver::memcpy_htod_async(void* dst_device, const void* src_host, size_t bytes, StreamHandle stream) {
  const Api& a = initialized();
  check(a, "cuMemcpyHtoDAsync_v2", a.MemcpyHtoDAsync(to_dptr(dst_device), src_host, bytes, stream));
}

void CudaDriver::launch_host_function(StreamHandle stream, void (*fn)(void*), void* data) {
  const Api& a = initialized();
  check(a, "cuLaunchHostFunc", a.LaunchHostFunc(stream, fn, data));
}

namespace {
// cuda.h's CUstreamCaptureMode: tolerates calls that are not stream-ordered during a capture.
constexpr int kCaptureModeRelaxed = 2;

// Runs `f` with the calling thread in relaxed capture mode, then restores its mode.
template <class F>
void in_relaxed_capture_mode(const CudaDriver::Api& a, F&& f) {
  int mode = kCaptureModeRelaxed;
  const bool exchanged = a.ThreadExchangeStreamCaptureMode && a.ThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
  f();
  if (exchanged) a.ThreadExchangeStreamCaptureMode(&mode);
}
}  // namespace

void* CudaDriver::mem_alloc_host(size_t bytes) noexcept {
  if (!available()) return nullptr;
  const Api& a = *api_.load(std::memory_order_acquire);
  if (!a.MemAllocHost) return nullptr;
  void* p = nullptr;
  in_relaxed_capture_mode(a, [&] {
    if (a.MemAllocHost(&p, bytes) != CUDA_SUCCESS) p = nullptr;
  });
  return p;
}

void CudaDriver::mem_free_host(void* ptr) noexcept {
  if (!ptr || !available()) return;
  const Api& a = *api_.load(std::memory_order_acquire);
  if (a.MemFreeHost) in_relaxed_capture_mode(a, [&] { a.MemFreeHost(ptr); });
}

bool CudaDriver::graph_keep_object(StreamHandle stream, void* object, void (*destroy)(void*)) {
  const Api& a = initialized();
  if (!a.StreamGetCaptureInfo || !a.UserObjectCreate || !a.GraphRetainUserObject) return false;
  int status = 0;
  unsigned long long id = 0;
  CUgraph graph = nullptr;
  const void* deps = nullptr;
  size_t num_deps = 0;
  if (a.StreamGetCaptureInfo(stream, &status, &id, &graph, &deps, &num_deps) != CUDA_SUCCESS || !graph) return false;
  constexpr unsigned kNoDestructorSync = 1;  // CU_USER_OBJECT_NO_DESTRUCTOR_SYNC
  constexpr unsigned kMove = 1;              // CU_GRAPH_USER_OBJECT_MOVE: the graph takes our reference
  void* user_object = nullptr;
  if (a.UserObjectCreate(&user_object, object, destroy, 1, kNoDestructorSync) != CUDA_SUCCESS) return false;
  // Should the graph refuse it, the user object keeps `object` unreleased: a leak, never a double free.
  return a.GraphRetainUserObject(graph, user_object, 1, kMove) == CUDA_SUCCESS;
}

CudaDriver::PointerInfo CudaDriver::pointer_info(const void* address) noexcept {
  PointerInfo info;
  if (!available()) return info;
  // cuda.h's CUpointer_attribute values.
  constexpr int kContext = 1, kMemoryType = 2, kIsManaged = 8, kRangeStart = 11, kRangeSize = 12;
  const Api& a = *api_.load(std::memory_order_acquire);
  if (!a.PointerGetAttribute) return info;  // a stand-in driver without it knows no address
  const CUdeviceptr p = to_dptr(address);
  unsigned int type = 0;
  if (a.PointerGetAttribute(&type, kMemoryType, p) != CUDA_SUCCESS) return info;  // not the driver's
  unsigned int managed = 0;
  CUdeviceptr begin = 0;
  size_t size = 0;
  CUcontext context = nullptr;
  if (a.PointerGetAttribute(&managed, kIsManaged, p) == CUDA_SUCCESS) info.managed = managed != 0;
  if (a.PointerGetAttribute(&begin, kRangeStart, p) == CUDA_SUCCESS &&
      a.PointerGetAttribute(&size, kRangeSize, p) == CUDA_SUCCESS) {
    info.range_begin = uintptr_t(begin);
    info.range_size = size;
  }
  if (a.PointerGetAttribute(&context, kContext, p) == CUDA_SUCCESS) info.context = context;
  info.memory_type = int(type);
  return info;
}

EventHandle CudaDriver::event_create() {
  const Api& a = initialized();
  CUevent e = nullptr;
  check(a, "cuEventCreate", a.EventCreate(&e, 0));
  return e;
}

void CudaDriver::event_record(EventHandle event, StreamHandle stream) {
  const Api& a = initialized();
  check(a, "cuEventRecord", a.EventRecord(event, stream));
}

void CudaDriver::event_synchronize(EventHandle event) {
  const Api& a = initialized();
  check(a, "cuEventSynchronize", a.EventSynchronize(event));
}

float CudaDriver::event_elapsed_ms(EventHandle start, EventHandle end) {
  const Api& a = initialized();
  float ms = 0;
  check(a, a.event_elapsed_time_name, a.EventElapsedTime(&ms, start, end));
  return ms;
}

void CudaDriver::event_destroy(EventHandle event) {
  const Api& a = initialized();
  check(a, "cuEventDestroy_v2", a.EventDestroy(event));
}

// Thread-local capture: other threads' CUDA calls neither join nor break the capture.
constexpr int kCaptureModeThreadLocal = 1;

void CudaDriver::stream_begin_capture(StreamHandle stream) {
  const Api& a = initialized();
  check(a, "cuStreamBeginCapture_v2", a.StreamBeginCapture(stream, kCaptureModeThreadLocal));
}

GraphHandle CudaDriver::stream_end_capture(StreamHandle stream) {
  const Api& a = initialized();
  CUgraph g = nullptr;
  check(a, "cuStreamEndCapture", a.StreamEndCapture(stream, &g));
  return g;
}

GraphExecHandle CudaDriver::graph_instantiate(GraphHandle graph) {
  const Api& a = initialized();
  CUgraphExec e = nullptr;
  check(a, "cuGraphInstantiateWithFlags", a.GraphInstantiateWithFlags(&e, graph, 0));
  return e;
}

void CudaDriver::graph_launch(GraphExecHandle exec, StreamHandle stream) {
  const Api& a = initialized();
  check(a, "cuGraphLaunch", a.GraphLaunch(exec, stream));
}

void CudaDriver::graph_exec_destroy(GraphExecHandle exec) {
  const Api& a = initialized();
  check(a, "cuGraphExecDestroy", a.GraphExecDestroy(exec));
}

void CudaDriver::graph_destroy(GraphHandle graph) {
  const Api& a = initialized();
  check(a, "cuGraphDestroy", a.GraphDestroy(graph));
}

void CudaDriver::encode_tensor_map_tiled(void* map, int data_type, unsigned rank, void* global_address,
                                         const uint64_t* dims, const uint64_t* strides, const uint32_t* box,
                                         const uint32_t* element_strides, int swizzle, int l2_promotion) {
  const Api& a = initialized();
  if (!a.TensorMapEncodeTiled)
    throw CudaError("cuTensorMapEncodeTiled is missing from the CUDA driver (TMA needs CUDA 12.0 or newer)", 0);
  constexpr int kInterleaveNone = 0, kOobFillZero = 0;
  check(a, "cuTensorMapEncodeTiled",
        a.TensorMapEncodeTiled(map, data_type, rank, global_address, dims, strides, box, element_strides, kInterleaveNone,
                               swizzle, l2_promotion, kOobFillZero));
}

}  // namespace opencute::runtime
