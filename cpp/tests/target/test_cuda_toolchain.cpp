// Tests for CUDA discovery, NVVM IR -> PTX -> cubin, and the driver wrapper. Each test
// skips when the piece it needs (libNVVM, libdevice, nvJitLink, ptxas, a GPU) is absent,
// so the suite passes on CPU-only CI and exercises everything on a GPU machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "support/cuda_paths.h"
#include "target/nvvm/nvvm_compiler.h"

namespace {

using opencute::runtime::CudaDriver;
using opencute::runtime::CudaError;
using opencute::support::CudaNotFoundError;
using opencute::target::CompileError;
using opencute::target::CubinResult;
using opencute::target::PtxResult;

const char* kDataLayout =
    "target datalayout = \"e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-"
    "i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64\"\n"
    "target triple = \"nvptx64-nvidia-cuda\"\n";

const char* kIrVersion =
    "!nvvmir.version = !{!1}\n"
    "!1 = !{i32 2, i32 0}\n";

// a[tid] += 1 for tid < n, one block.
std::string add_one_ir() {
  return std::string(kDataLayout) + R"(
define void @add_one(float addrspace(1)* %a, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %c = icmp slt i32 %tid, %n
  br i1 %c, label %body, label %exit
body:
  %p = getelementptr float, float addrspace(1)* %a, i32 %tid
  %v = load float, float addrspace(1)* %p, align 4
  %w = fadd float %v, 1.0
  store float %w, float addrspace(1)* %p, align 4
  br label %exit
exit:
  ret void
}
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, i32)* @add_one, !"kernel", i32 1}
)" + kIrVersion;
}

// a[i] = expf(a[i]) + ctaid.x for a grid of blocks, through libdevice's __nv_expf.
// Adding the block index makes a wrong grid/cluster mapping visible in the results.
std::string exp_grid_ir() {
  return std::string(kDataLayout) + R"(
define void @exp_grid(float addrspace(1)* %a, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %c = icmp slt i32 %i, %n
  br i1 %c, label %body, label %exit
body:
  %p = getelementptr float, float addrspace(1)* %a, i32 %i
  %v = load float, float addrspace(1)* %p, align 4
  %e = call float @__nv_expf(float %v)
  %b = sitofp i32 %bid to float
  %w = fadd float %e, %b
  store float %w, float addrspace(1)* %p, align 4
  br label %exit
exit:
  ret void
}
declare float @__nv_expf(float)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, i32)* @exp_grid, !"kernel", i32 1}
)" + kIrVersion;
}

bool is_elf(const std::vector<char>& image) {
  return image.size() > 4 && image[0] == '\x7f' && image[1] == 'E' && image[2] == 'L' &&
         image[3] == 'F';
}

// Sets (or unsets, for nullptr) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_old_)
      ::setenv(name_.c_str(), old_.c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_old_ = false;
};

// Runs `body`, turning "this machine lacks the piece" into a skip.
#define SKIP_IF_MISSING(...)                                   \
  try {                                                          \
    __VA_ARGS__;                                                 \
  } catch (const CudaNotFoundError& e) {                         \
    GTEST_SKIP() << "CUDA piece unavailable: " << e.what();      \
  }

PtxResult compile_o3(const std::string& ir, const std::string& arch,
                     bool libdevice) {
  return opencute::target::compile_nvvm_ir_to_ptx(ir, arch, 3, false, libdevice);
}

// ------------------------------------------------------------------------ discovery

TEST(CudaPathsTest, SearchRootsFollowDocumentedOrder) {
  ScopedEnv home("CUDA_HOME", "/opt/opencute-test-home");
  ScopedEnv path("CUDA_PATH", "/opt/opencute-test-path");
  opencute::support::add_cuda_search_root("/opt/opencute-test-registered");
  opencute::support::add_cuda_search_root("/opt/opencute-test-registered");  // deduplicated
  auto roots = opencute::support::cuda_search_roots();
  ASSERT_GE(roots.size(), 4u);
  EXPECT_EQ(roots[0], "/opt/opencute-test-home");
  EXPECT_EQ(roots[1], "/opt/opencute-test-path");
  // Registered roots follow the environment's, in registration order (another test of this binary
  // may have registered one first: the list is process-wide).
  auto registered = std::find(roots.begin(), roots.end(), "/opt/opencute-test-registered");
  ASSERT_NE(registered, roots.end());
  EXPECT_GE(registered - roots.begin(), 2);
  EXPECT_LT(registered - roots.begin(), std::ptrdiff_t(roots.size()) - 1);
  EXPECT_EQ(roots.back(), "/usr/local/cuda");
  EXPECT_EQ(std::count(roots.begin(), roots.end(), "/opt/opencute-test-registered"), 1);
}

TEST(CudaPathsTest, OverridesNamingMissingFilesAreReported) {
  ScopedEnv nvvm("OPENCUTE_LIBNVVM", "/nonexistent/opencute/libnvvm.so");
  ScopedEnv libdevice("OPENCUTE_LIBDEVICE", "/nonexistent/opencute/libdevice.10.bc");
  try {
    opencute::support::find_libnvvm();
    FAIL() << "expected CudaNotFoundError";
  } catch (const CudaNotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/opencute/libnvvm.so"), std::string::npos)
        << e.what();
  }
  try {
    opencute::support::find_libdevice();
    FAIL() << "expected CudaNotFoundError";
  } catch (const CudaNotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/opencute/libdevice.10.bc"),
              std::string::npos)
        << e.what();
  }
  // The override is authoritative: nothing else is offered to the loader.
  auto candidates = opencute::support::libnvvm_candidates();
  ASSERT_EQ(candidates.size(), 1u);
  std::string searched;
  EXPECT_EQ(opencute::support::open_library(candidates, &searched), nullptr);
  EXPECT_NE(searched.find("not found"), std::string::npos) << searched;
}

TEST(CudaPathsTest, OpenLibraryListsEveryFailedCandidate) {
  std::string searched;
  void* h = opencute::support::open_library(
      {"/nonexistent/libopencute_a.so", "libopencute_surely_missing.so.9"}, &searched);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(searched.find("/nonexistent/libopencute_a.so"), std::string::npos) << searched;
  EXPECT_NE(searched.find("libopencute_surely_missing.so.9"), std::string::npos) << searched;
}

TEST(CudaPathsTest, FindsToolkitPiecesWhenInstalled) {
  SKIP_IF_MISSING({
    std::string nvvm = opencute::support::find_libnvvm();
    std::string libdevice = opencute::support::find_libdevice();
    EXPECT_NE(nvvm.find("libnvvm"), std::string::npos);
    EXPECT_NE(libdevice.find("libdevice.10.bc"), std::string::npos);
    std::cout << "[paths] libnvvm=" << nvvm << " libdevice=" << libdevice << "\n";
  });
}

// ------------------------------------------------------------------------ libNVVM

TEST(NvvmCompilerTest, CompilesKernelForSm80AndSm90a) {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    PtxResult r;
    SKIP_IF_MISSING(r = compile_o3(add_one_ir(), arch, false));
    EXPECT_NE(r.ptx.find(".visible .entry add_one"), std::string::npos) << r.ptx;
    EXPECT_NE(r.ptx.find(std::string(".target ") + arch), std::string::npos) << r.ptx;
    EXPECT_GT(r.ms, 0.0);
    std::cout << "[timing] libNVVM add_one " << arch << ": " << r.ms << " ms\n";
  }
}

TEST(NvvmCompilerTest, OptionsOptLevelAndLineInfoAreAccepted) {
  for (int opt : {0, 1, 2, 3}) {
    PtxResult r;
    SKIP_IF_MISSING(r = opencute::target::compile_nvvm_ir_to_ptx(add_one_ir(), "sm_90a", opt,
                                                                 /*line_info=*/true,
                                                                 /*libdevice=*/false));
    EXPECT_NE(r.ptx.find(".visible .entry add_one"), std::string::npos);
  }
  EXPECT_THROW(opencute::target::compile_nvvm_ir_to_ptx(add_one_ir(), "sm_90a", 4, false, false),
               std::invalid_argument);
  EXPECT_THROW(opencute::target::compile_nvvm_ir_to_ptx(add_one_ir(), "gfx90a", 3, false, false),
               std::invalid_argument);
}

TEST(NvvmCompilerTest, LinksLibdeviceExpf) {
  PtxResult r;
  SKIP_IF_MISSING(r = compile_o3(exp_grid_ir(), "sm_90a", /*libdevice=*/true));
  EXPECT_NE(r.ptx.find(".visible .entry exp_grid"), std::string::npos);
  // __nv_expf is inlined from libdevice: no external call remains, ex2 does the work.
  EXPECT_EQ(r.ptx.find(".extern .func"), std::string::npos) << r.ptx;
  EXPECT_NE(r.ptx.find("ex2.approx"), std::string::npos) << r.ptx;
  std::cout << "[timing] libNVVM exp_grid+libdevice sm_90a: " << r.ms << " ms\n";
}

TEST(NvvmCompilerTest, MalformedIrThrowsCompileErrorWithLog) {
  std::string bad = std::string(kDataLayout) +
                    "define void @broken(float addrspace(1)* %a) {\n"
                    "entry:\n  %v = fadd float %undefined_value, 1.0\n  ret void\n}\n" +
                    kIrVersion;
  try {
    opencute::target::compile_nvvm_ir_to_ptx(bad, "sm_90a", 3, false, false);
    FAIL() << "malformed IR compiled";
  } catch (const CudaNotFoundError& e) {
    GTEST_SKIP() << e.what();
  } catch (const CompileError& e) {
    std::string what = e.what();
    EXPECT_FALSE(e.log().empty());
    EXPECT_NE(what.find(e.log()), std::string::npos) << what;
    EXPECT_NE(e.log().find("undefined_value"), std::string::npos) << e.log();
  }
}

// ------------------------------------------------------------------------ linking

TEST(CudaToolchainTest, LinksPtxToCubinWithNvJitLink) {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    PtxResult ptx;
    CubinResult cubin;
    SKIP_IF_MISSING(ptx = compile_o3(add_one_ir(), arch, false));
    SKIP_IF_MISSING(cubin = opencute::target::detail::link_with_nvjitlink(ptx.ptx, arch, 3, ""));
    EXPECT_TRUE(is_elf(cubin.cubin));
    EXPECT_EQ(cubin.linker, "nvJitLink");
    std::cout << "[timing] nvJitLink add_one " << arch << ": " << cubin.ms << " ms ("
              << cubin.cubin.size() << " bytes)\n";
    // The public entry point picks nvJitLink when it loads.
    CubinResult viaApi = opencute::target::link_ptx_to_cubin(ptx.ptx, arch, 3, "");
    EXPECT_TRUE(is_elf(viaApi.cubin));
    EXPECT_EQ(viaApi.linker, "nvJitLink");
  }
}

TEST(CudaToolchainTest, NvJitLinkPassesPtxasOptionsAndOptLevels) {
  PtxResult ptx;
  SKIP_IF_MISSING(ptx = compile_o3(add_one_ir(), "sm_90a", false));
  for (int opt : {0, 1, 2, 3}) {
    CubinResult r;
    SKIP_IF_MISSING(r = opencute::target::detail::link_with_nvjitlink(ptx.ptx, "sm_90a", opt,
                                                                      "-v  -warn-spills"));
    EXPECT_TRUE(is_elf(r.cubin));
    // -v makes ptxas report register use in the info log.
    EXPECT_NE(r.log.find("registers"), std::string::npos) << r.log;
  }
}

TEST(CudaToolchainTest, PtxasFallbackProducesCubin) {
  PtxResult ptx;
  CubinResult r;
  SKIP_IF_MISSING(ptx = compile_o3(add_one_ir(), "sm_90a", false));
  SKIP_IF_MISSING(r = opencute::target::detail::link_with_ptxas(ptx.ptx, "sm_90a", 3, "-v"));
  EXPECT_TRUE(is_elf(r.cubin));
  EXPECT_EQ(r.linker, "ptxas");
  EXPECT_NE(r.log.find("registers"), std::string::npos) << r.log;
  std::cout << "[timing] ptxas subprocess add_one sm_90a: " << r.ms << " ms\n";
}

// A warp-specialised kernel: its first warp group gives registers back, the others take 240.
const char* kSetmaxnregPtx =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry ws()\n.reqntid 384, 1, 1\n.minnctapersm 1\n{\n"
    "  .reg .b32 %r<2>;\n  .reg .pred %p<2>;\n"
    "  mov.u32 %r1, %tid.x;\n  setp.lt.u32 %p1, %r1, 128;\n  @%p1 bra PRODUCER;\n"
    "  setmaxnreg.inc.sync.aligned.u32 240;\n  ret;\n"
    "PRODUCER:\n  setmaxnreg.dec.sync.aligned.u32 24;\n  ret;\n}\n";

TEST(CudaToolchainTest, SetmaxnregIsDetected) {
  EXPECT_TRUE(opencute::target::redistributes_registers(kSetmaxnregPtx));
  EXPECT_FALSE(opencute::target::redistributes_registers(".visible .entry k() { ret; }"));
}

// nvJitLink compiles PTX as one relocatable unit of a program, and ptxas then ignores setmaxnreg
// (its info C7504); a kernel with setmaxnreg is linked by ptxas alone, which honours it.
TEST(CudaToolchainTest, SetmaxnregKernelsAreLinkedAsAWholeProgram) {
  CubinResult via_nvjitlink;
  bool have_nvjitlink = true;
  try {
    via_nvjitlink = opencute::target::detail::link_with_nvjitlink(kSetmaxnregPtx, "sm_90a", 3, "-v");
  } catch (const CudaNotFoundError&) {
    have_nvjitlink = false;
  }
  if (have_nvjitlink) {
    EXPECT_NE(via_nvjitlink.log.find("C7504"), std::string::npos) << via_nvjitlink.log;
  }
  CubinResult r;
  SKIP_IF_MISSING(opencute::support::find_ptxas());
  SKIP_IF_MISSING(r = opencute::target::link_ptx_to_cubin(kSetmaxnregPtx, "sm_90a", 3, "-v"));
  EXPECT_TRUE(is_elf(r.cubin));
  EXPECT_EQ(r.linker, "ptxas");
  EXPECT_EQ(r.log.find("C7504"), std::string::npos) << r.log;
}

TEST(CudaToolchainTest, BadPtxThrowsCompileErrorWithLog) {
  const std::string bad_ptx =
      ".version 8.0\n.target sm_90a\n.address_size 64\n"
      ".visible .entry k() { this is not ptx; }\n";
  for (bool use_ptxas : {false, true}) {
    try {
      if (use_ptxas)
        opencute::target::detail::link_with_ptxas(bad_ptx, "sm_90a", 3, "");
      else
        opencute::target::detail::link_with_nvjitlink(bad_ptx, "sm_90a", 3, "");
      ADD_FAILURE() << "bad PTX linked (ptxas=" << use_ptxas << ")";
    } catch (const CudaNotFoundError&) {
      continue;  // this back end is not installed
    } catch (const CompileError& e) {
      EXPECT_FALSE(e.log().empty()) << "ptxas=" << use_ptxas;
      EXPECT_NE(std::string(e.what()).find(e.log()), std::string::npos);
    }
  }
}

// ptxas runs with glibc's malloc on transparent huge pages (fewer page faults, the same cubin);
// a GLIBC_TUNABLES of the user's keeps its settings, and its own hugetlb choice wins.
TEST(CudaToolchainTest, PtxasEnvironmentAsksForHugePagesOnce) {
  using opencute::target::detail::ptxas_environment;
  using Env = std::vector<std::string>;
  const char* plain[] = {"PATH=/bin", "HOME=/root", nullptr};
  EXPECT_EQ(ptxas_environment(plain), (Env{"PATH=/bin", "HOME=/root", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}));
  const char* tuned[] = {"GLIBC_TUNABLES=glibc.malloc.arena_max=2", "PATH=/bin", nullptr};
  EXPECT_EQ(ptxas_environment(tuned),
            (Env{"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1", "PATH=/bin"}));
  const char* empty_tunables[] = {"GLIBC_TUNABLES=", nullptr};
  EXPECT_EQ(ptxas_environment(empty_tunables), (Env{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}));
  const char* chosen[] = {"GLIBC_TUNABLES=glibc.malloc.hugetlb=0", nullptr};
  EXPECT_EQ(ptxas_environment(chosen), (Env{"GLIBC_TUNABLES=glibc.malloc.hugetlb=0"}));
}

// ------------------------------------------------------------------------ driver

TEST(CudaDriverTest, AvailableNeverThrows) {
  bool available = false;
  EXPECT_NO_THROW(available = CudaDriver::get().available());
  EXPECT_EQ(available, CudaDriver::get().available());  // stable answer
  if (!available) {
    // Without a usable driver, calls fail loudly with a CudaError instead of crashing.
    EXPECT_THROW(CudaDriver::get().mem_alloc(16), CudaError);
  }
}

// Compiles IR for the current device, loads it and returns the kernel.
opencute::runtime::FunctionHandle build_kernel(const std::string& ir, const char* name,
                                              bool libdevice) {
  auto& drv = CudaDriver::get();
  std::string arch = drv.device_arch(0);
  PtxResult ptx = opencute::target::compile_nvvm_ir_to_ptx(ir, arch, 3, false, libdevice);
  CubinResult cubin = opencute::target::link_ptx_to_cubin(ptx.ptx, arch, 3, "");
  auto module = drv.load_module(cubin.cubin);
  return drv.get_function(module, name);
}

#define REQUIRE_GPU()                                                    \
  if (!CudaDriver::get().available()) GTEST_SKIP() << "no CUDA device"; \
  CudaDriver::get().initialize_context(0)

TEST(CudaDriverTest, RunsAddOneKernel) {
  REQUIRE_GPU();
  auto& drv = CudaDriver::get();
  opencute::runtime::FunctionHandle f = nullptr;
  SKIP_IF_MISSING(f = build_kernel(add_one_ir(), "add_one", false));
  std::cout << "[device] " << drv.device_arch(0) << ", " << drv.device_count() << " device(s)\n";

  const int n = 100;
  std::vector<float> host(128);
  for (int i = 0; i < 128; ++i) host[i] = float(i) * 0.5f;
  void* dev = drv.mem_alloc(host.size() * sizeof(float));
  drv.memcpy_htod(dev, host.data(), host.size() * sizeof(float));
  int n_arg = n;
  void* params[] = {&dev, &n_arg};
  drv.launch(f, 1, 1, 1, 128, 1, 1, 0, nullptr, params);
  drv.stream_synchronize(nullptr);
  std::vector<float> out(host.size());
  drv.memcpy_dtoh(out.data(), dev, out.size() * sizeof(float));
  drv.mem_free(dev);
  for (int i = 0; i < 128; ++i) {
    float expect = i < n ? host[i] + 1.0f : host[i];
    ASSERT_EQ(out[i], expect) << "at " << i;
  }
  EXPECT_FALSE(drv.stream_is_capturing(nullptr));
  drv.initialize_context(0);  // idempotent
  drv.context_synchronize();
}

TEST(CudaDriverTest, RunsLibdeviceKernelWithClusters) {
  REQUIRE_GPU();
  auto& drv = CudaDriver::get();
  opencute::runtime::FunctionHandle f = nullptr;
  SKIP_IF_MISSING(f = build_kernel(exp_grid_ir(), "exp_grid", true));

  const int blocks = 8, threads = 64, n = blocks * threads - 5;
  std::vector<float> host(blocks * threads);
  for (size_t i = 0; i < host.size(); ++i) host[i] = -2.0f + 0.01f * float(i);
  const size_t bytes = host.size() * sizeof(float);
  void* dev = drv.mem_alloc(bytes);
  int n_arg = n;
  void* params[] = {&dev, &n_arg};
  auto check = [&](const char* what) {
    std::vector<float> out(host.size());
    drv.memcpy_dtoh(out.data(), dev, bytes);
    for (size_t i = 0; i < host.size(); ++i) {
      float expect = int(i) < n ? std::exp(host[i]) + float(i / threads) : host[i];
      ASSERT_NEAR(out[i], expect, 1e-5f * std::fabs(expect) + 1e-6f) << what << " at " << i;
    }
  };

  drv.memcpy_htod(dev, host.data(), bytes);
  drv.launch(f, blocks, 1, 1, threads, 1, 1, 0, nullptr, params);
  drv.stream_synchronize(nullptr);
  check("launch");

  int major = drv.device_attribute(75 /* COMPUTE_CAPABILITY_MAJOR */, 0);
  if (major >= 9) {
    drv.memcpy_htod(dev, host.data(), bytes);
    drv.set_max_dynamic_smem(f, 1024);
    drv.launch_cluster(f, blocks, 1, 1, threads, 1, 1, /*cluster=*/2, 1, 1, 1024, nullptr,
                       params);
    drv.stream_synchronize(nullptr);
    check("launch_cluster");
  }
  drv.mem_free(dev);
}

TEST(CudaDriverTest, ErrorsNameTheCallAndCode) {
  REQUIRE_GPU();
  auto& drv = CudaDriver::get();
  std::string arch = drv.device_arch(0);
  PtxResult ptx;
  CubinResult cubin;
  SKIP_IF_MISSING(ptx = compile_o3(add_one_ir(), arch.c_str(), false);
                  cubin = opencute::target::link_ptx_to_cubin(ptx.ptx, arch, 3, ""));
  auto module = drv.load_module(cubin.cubin);
  try {
    drv.get_function(module, "no_such_kernel");
    FAIL() << "expected CudaError";
  } catch (const CudaError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cuModuleGetFunction"), std::string::npos) << what;
    EXPECT_NE(what.find("no_such_kernel"), std::string::npos) << what;
    EXPECT_NE(what.find("CUDA_ERROR_NOT_FOUND"), std::string::npos) << what;
    EXPECT_EQ(e.code(), 500);
  }
  drv.unload_module(module);
}

}  // namespace
