// NVVM IR -> PTX through libNVVM, and PTX -> cubin through nvJitLink (or ptxas as a
// fallback). Both libraries are dlopen()ed on first use, so nothing here needs CUDA at
// build or load time; a missing piece raises support::CudaNotFoundError naming what was
// searched, and a compiler/linker rejection raises CompileError carrying the tool's log.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace opencute::target {

class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& message, std::string log)
      : std::runtime_error(message), log_(std::move(log)) {}
  // The tool's own diagnostic output (also embedded in what()).
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

struct PtxResult {
  std::string ptx;
  std::string log;  // libNVVM program log; warnings may be present on success
  double ms = 0;    // libNVVM work only (program creation to result), not library loading
};

// `arch` is "sm_XX" with an optional "a"/"f" suffix ("sm_80", "sm_90a", "sm_100f"); the
// libNVVM target is the matching compute_XX[a|f]. opt_level is 0..3 (passed as -opt=N).
// link_libdevice lazily links libdevice.10.bc so __nv_* math functions resolve.
PtxResult compile_nvvm_ir_to_ptx(const std::string& llvm_ir_text, const std::string& arch,
                                 int opt_level, bool generate_line_info, bool link_libdevice);

struct CubinResult {
  std::vector<char> cubin;  // ELF image for cuModuleLoadData
  std::string log;          // linker/assembler info and warnings
  double ms = 0;
  std::string linker;       // "nvJitLink" or "ptxas"
};

// Whether the PTX redistributes registers between warp groups (setmaxnreg).
bool redistributes_registers(const std::string& ptx);

// `arch` is "sm_XX[a|f]". opt_level 0..3 is the ptxas optimization level.
// extra_ptxas_options is a space-separated list of ptxas flags (e.g. "-v -maxrregcount=128").
// Uses nvJitLink in process; only when nvJitLink cannot be loaded does it run ptxas. PTX with
// setmaxnreg goes to ptxas first (whole program: nvJitLink's relocatable compile ignores
// setmaxnreg), then to nvJitLink when ptxas is missing or fails.
CubinResult link_ptx_to_cubin(const std::string& ptx, const std::string& arch, int opt_level,
                              const std::string& extra_ptxas_options);

// Loads libNVVM and nvJitLink on a background thread, once per process, so that the first
// compile finds them loaded (the libraries are ~150 MB; from a cold disk loading them costs
// more than compiling a small kernel). Failures are left for the compile to report.
void preload_toolchain_async();
// Waits for that thread. Called when the interpreter exits: a process that ends while the thread
// is still inside dlopen tears down the loader's and our statics under it (heap corruption seen as
// "malloc_consolidate(): unaligned fastbin chunk" in short-lived processes on a loaded machine).
void wait_for_toolchain_preload();

namespace detail {
// The two linker back ends, exposed so tests can exercise each one directly.
CubinResult link_with_nvjitlink(const std::string& ptx, const std::string& arch,
                                int opt_level, const std::string& extra_ptxas_options);
CubinResult link_with_ptxas(const std::string& ptx, const std::string& arch, int opt_level,
                            const std::string& extra_ptxas_options);
// The environment ptxas runs in: `parent` (a NULL-terminated `environ`) with glibc's malloc asked
// for transparent huge pages (GLIBC_TUNABLES glibc.malloc.hugetlb=1), unless the user's
// GLIBC_TUNABLES already says how.
std::vector<std::string> ptxas_environment(const char* const* parent);
}  // namespace detail

}  // namespace opencute::target
