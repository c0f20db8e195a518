// Thin access to the CUDA driver API (libcuda.so.1), dlopen()ed on first use so that the
// library works, and imports, on machines without a GPU or driver.
//
// Every failing driver call throws CudaError naming the call, the CUresult code, its name
// and its description. launch()/launch_cluster() do no allocation and build no strings
// unless the driver reports an error, because they sit on the per-call hot path.
//
// Contexts: the driver's context is per thread. initialize_context(device) retains the
// device's primary context (once per device) and makes it current on the calling thread;
// call it from each thread that issues work before anything else on that thread. A launch of
// code loaded into a context calls ensure_context_current_on_this_thread(that context) first,
// so that a thread that never touched CUDA (a Python worker thread) can launch too.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace opencute::runtime {

using ModuleHandle = void*;    // CUmodule
using FunctionHandle = void*;  // CUfunction
using StreamHandle = void*;    // CUstream; nullptr is the legacy default stream
using EventHandle = void*;     // CUevent
using GraphHandle = void*;     // CUgraph
using GraphExecHandle = void*; // CUgraphExec

class CudaError : public std::runtime_error {
 public:
  // code() is the CUresult, or kDriverNotLoaded when libcuda itself could not be loaded.
  static constexpr int kDriverNotLoaded = -1;
  CudaError(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

class CudaDriver {
 public:
  static CudaDriver& get();

  // True when libcuda loads, cuInit(0) succeeds and at least one device exists.
  // Never throws; the answer is computed once.
  bool available() noexcept;
  int device_count();
  void initialize_context(int device_id);
  // Keeps the calling thread's current context (a C program's cudaSetDevice made one), or
  // makes `device_id`'s primary context current when there is none.
  void ensure_context(int device_id);
  // The calling thread's current context (CUcontext), or null when it has none.
  void* current_context();
  // Before launching code loaded into `context` (a CUcontext) from whatever thread calls: makes
  // it current on the calling thread when the thread has no current context (a thread that
  // never touched CUDA: launching there fails with CUDA_ERROR_INVALID_CONTEXT, 201). A thread
  // with another context current keeps it, as the CUDA runtime would (the launch then reports
  // the mismatch). Once the calling thread has `context` current, later calls cost one
  // thread_local compare; after a launch fails with 201 (the thread's context was popped or
  // unset since), forget_context_on_this_thread() makes the next call look again.
  void ensure_context_current_on_this_thread(void* context);
  void forget_context_on_this_thread();
  static constexpr int kInvalidContext = 201;  // CUDA_ERROR_INVALID_CONTEXT
  // "sm_<major><minor>", plus "a" from major 9 on (the arch-specific feature set: wgmma,
  // setmaxnreg, ... are only in sm_90a / sm_100a code), e.g. "sm_80", "sm_90a".
  std::string device_arch(int device);
  int device_attribute(int attr, int device);  // attr is a CUdevice_attribute value

  ModuleHandle load_module(const std::vector<char>& cubin);
  void unload_module(ModuleHandle module);
  FunctionHandle get_function(ModuleHandle module, const std::string& name);
  void set_max_dynamic_smem(FunctionHandle f, int bytes);
  // Lets `f` launch with clusters of more than the portable 8 CTAs (up to 16 on sm_90).
  void allow_non_portable_cluster_size(FunctionHandle f);

  // params: one pointer per kernel parameter, pointing at the argument's value.
  void launch(FunctionHandle f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
              unsigned by, unsigned bz, unsigned smem_bytes, StreamHandle stream,
              void** params);
  // As launch(), with a thread-block cluster of (cx, cy, cz) CTAs (sm_90+); the grid must
  // be divisible by the cluster shape.
  void launch_cluster(FunctionHandle f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                      unsigned by, unsigned bz, unsigned cx, unsigned cy, unsigned cz,
                      unsigned smem_bytes, StreamHandle stream, void** params);

  // Launch attributes beyond the grid (cuLaunchKernelEx); events are CUevent / cudaEvent_t handles.
  struct LaunchAttributes {
    bool has_cluster = false;
    unsigned cluster[3] = {1, 1, 1};
    bool cooperative = false;  // all blocks co-resident; too large a grid fails with 720
    bool pdl = false;          // programmatic stream serialization
    void* completion_event = nullptr;
    int completion_event_flags = 0;
    void* programmatic_event = nullptr;
    int programmatic_event_flags = 0;
    int programmatic_trigger_at_block_start = 0;
    bool any() const { return has_cluster || cooperative || pdl || completion_event || programmatic_event; }
  };
  void launch_ex(FunctionHandle f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                 const LaunchAttributes& attrs, unsigned smem_bytes, StreamHandle stream, void** params);

  void stream_synchronize(StreamHandle stream);
  void context_synchronize();
  bool stream_is_capturing(StreamHandle stream);

  // Events, for timing work on a stream (cute.testing.benchmark).
  EventHandle event_create();
  void event_record(EventHandle event, StreamHandle stream);
  void event_synchronize(EventHandle event);
  float event_elapsed_ms(EventHandle start, EventHandle end);
  void event_destroy(EventHandle event);

  // CUDA graphs, for timing launches without their CPU overhead (benchmark(use_cuda_graphs=)):
  // work issued to `stream` between begin and end capture is recorded, not run.
  void stream_begin_capture(StreamHandle stream);
  GraphHandle stream_end_capture(StreamHandle stream);
  GraphExecHandle graph_instantiate(GraphHandle graph);
  void graph_launch(GraphExecHandle exec, StreamHandle stream);
  void graph_exec_destroy(GraphExecHandle exec);
  void graph_destroy(GraphHandle graph);

  // Plain device memory, for tests and simple host-side plumbing.
  void* mem_alloc(size_t bytes);
  void mem_free(void* ptr);
  void memcpy_htod(void* dst_device, const void* src_host, size_t bytes);
  void memcpy_dtoh(void* dst_host, const void* src_device, size_t bytes);

  // Stream-ordered copies, page-locked host memory and host functions, for staging an emulated
  // launch that is captured into a CUDA graph (host_staging.h). Optional driver entry points:
  // has_capture_staging() says whether all are there.
  bool has_capture_staging();
  void memcpy_dtoh_async(void* dst_host, const void* src_device, size_t bytes, StreamHandle stream);
  void memcpy_htod_async(void* dst_device, const void* src_host, size_t bytes, StreamHandle stream);
  void launch_host_function(StreamHandle stream, void (*fn)(void*), void* data);
  // Page-locked host memory, allocated and freed in relaxed capture mode (neither call is
  // stream-ordered, and neither may break a capture in progress); null when the driver refuses.
  void* mem_alloc_host(size_t bytes) noexcept;
  void mem_free_host(void* ptr) noexcept;
  // Makes the graph being captured on `stream` own `object`: destroy(object) runs (on a driver
  // thread, where CUDA may not be called) when the graph is gone. False when the driver cannot
  // (no user objects: CUDA < 11.3), leaving `object` to the caller.
  bool graph_keep_object(StreamHandle stream, void* object, void (*destroy)(void*));

  // What the driver knows of an address (cuPointerGetAttribute): its memory type (cuda.h's
  // CUmemorytype: 1 host, 2 device, 4 unified; 0 when the driver does not know the address),
  // whether it is managed, its allocation and context. Never throws: without a driver, or for
  // an address no allocation holds, memory_type is 0.
  struct PointerInfo {
    int memory_type = 0;
    bool managed = false;
    uintptr_t range_begin = 0;
    size_t range_size = 0;
    void* context = nullptr;
  };
  PointerInfo pointer_info(const void* address) noexcept;

  // cuTensorMapEncodeTiled (CUDA 12.0+): writes the 128-byte CUtensorMap at `map` (64-byte
  // aligned). `strides` holds rank - 1 byte strides (of dims 1..rank-1); enums as cuda.h's
  // CUtensorMapDataType / Swizzle / L2promotion; no interleave, out-of-bounds elements read zero.
  void encode_tensor_map_tiled(void* map, int data_type, unsigned rank, void* global_address, const uint64_t* dims,
                               const uint64_t* strides, const uint32_t* box, const uint32_t* element_strides,
                               int swizzle, int l2_promotion);

  struct Api;  // resolved driver entry points; defined in the .cpp

 private:
  CudaDriver() = default;
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  const Api& api();          // loads libcuda on first use; throws CudaError
  const Api& initialized();  // api() plus a successful cuInit(0)

  std::atomic<const Api*> api_{nullptr};
  std::mutex load_mu_;
  std::string load_error_;  // why libcuda could not be loaded, once tried
  bool load_tried_ = false;

  std::once_flag init_once_;
  int init_result_ = 0;

  std::once_flag available_once_;
  bool available_ = false;

  static constexpr int kMaxDevices = 64;
  std::mutex ctx_mu_;
  std::atomic<void*> contexts_[kMaxDevices] = {};
};

}  // namespace opencute::runtime
