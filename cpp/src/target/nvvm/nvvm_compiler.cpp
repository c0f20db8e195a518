#include "target/nvvm/nvvm_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <thread>
#include <sstream>

#include "support/arch.h"
#include "support/cuda_paths.h"

extern char** environ;

namespace opencute::target {
namespace {

using support::CudaNotFoundError;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// ---------------------------------------------------------------------------------------
// Architecture names

struct Arch {
  std::string sm;       // "sm_90a": what nvJitLink / ptxas want
  std::string compute;  // "compute_90a": what libNVVM wants
};

// support::parse_arch reads the name; the compilers take only sm_/compute_ names of two or more
// digits with no suffix or an 'a' or 'f' one.
Arch parse_arch(const std::string& arch) {
  const support::Arch parsed = support::parse_arch(arch);
  const bool prefixed = arch.rfind("sm_", 0) == 0 || arch.rfind("compute_", 0) == 0;
  if (!prefixed || parsed.number < 10 || !(parsed.suffix == 0 || parsed.suffix == 'a' || parsed.suffix == 'f')) {
    throw std::invalid_argument("unsupported GPU arch '" + arch +
                                "': expected sm_<major><minor>[a|f], e.g. sm_80 or sm_90a");
  }
  const std::string rest = std::to_string(parsed.number) + (parsed.suffix ? std::string(1, parsed.suffix) : "");
  return Arch{"sm_" + rest, "compute_" + rest};
}

void check_opt_level(int opt_level) {
  if (opt_level < 0 || opt_level > 3)
    throw std::invalid_argument("opt_level must be in 0..3, got " + std::to_string(opt_level));
}

std::vector<std::string> split_options(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string tok;
  while (in >> tok) out.push_back(tok);
  return out;
}

// ---------------------------------------------------------------------------------------
// libNVVM, resolved by hand from the C API in nvvm.h (never linked).

using nvvmResult = int;
using nvvmProgram = void*;
constexpr nvvmResult NVVM_SUCCESS = 0;

struct NvvmApi {
  std::string path;
  const char* (*GetErrorString)(nvvmResult);
  nvvmResult (*CreateProgram)(nvvmProgram*);
  nvvmResult (*DestroyProgram)(nvvmProgram*);
  nvvmResult (*AddModuleToProgram)(nvvmProgram, const char*, size_t, const char*);
  nvvmResult (*LazyAddModuleToProgram)(nvvmProgram, const char*, size_t, const char*);
  nvvmResult (*CompileProgram)(nvvmProgram, int, const char**);
  nvvmResult (*GetCompiledResultSize)(nvvmProgram, size_t*);
  nvvmResult (*GetCompiledResult)(nvvmProgram, char*);
  nvvmResult (*GetProgramLogSize)(nvvmProgram, size_t*);
  nvvmResult (*GetProgramLog)(nvvmProgram, char*);
};

template <typename Fn>
bool bind(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  return fn != nullptr;
}

// Loaded once on success. A failure is not cached: the Python side may register a
// search root (pip wheel) after a first failed attempt, and a retry should then work.
const NvvmApi& nvvm_api() {
  static std::mutex mu;
  static std::unique_ptr<NvvmApi> api;
  std::lock_guard<std::mutex> lock(mu);
  if (api) return *api;

  std::string searched;
  void* lib = support::open_library(support::libnvvm_candidates(), &searched);
  if (!lib) {
    throw CudaNotFoundError(
        "libNVVM could not be loaded. Searched:\n" + searched +
        "Fix: set CUDA_HOME to a CUDA toolkit, OPENCUTE_LIBNVVM to the library, or install "
        "the nvidia-cuda-nvcc wheel.");
  }
  auto a = std::make_unique<NvvmApi>();
  a->path = support::loaded_library_path(lib);
  const char* missing = nullptr;
#define OPENCUTE_BIND_NVVM(field)                                  \
  if (!missing && !bind(lib, "nvvm" #field, a->field)) missing = "nvvm" #field;
  OPENCUTE_BIND_NVVM(GetErrorString)
  OPENCUTE_BIND_NVVM(CreateProgram)
  OPENCUTE_BIND_NVVM(DestroyProgram)
  OPENCUTE_BIND_NVVM(AddModuleToProgram)
  OPENCUTE_BIND_NVVM(LazyAddModuleToProgram)
  OPENCUTE_BIND_NVVM(CompileProgram)
  OPENCUTE_BIND_NVVM(GetCompiledResultSize)
  OPENCUTE_BIND_NVVM(GetCompiledResult)
  OPENCUTE_BIND_NVVM(GetProgramLogSize)
  OPENCUTE_BIND_NVVM(GetProgramLog)
#undef OPENCUTE_BIND_NVVM
  if (missing) {
    ::dlclose(lib);
    throw CudaNotFoundError("libNVVM at " + a->path + " lacks the symbol " + missing +
                            " (too old?)");
  }
  api = std::move(a);
  return *api;
}

// Owns an nvvmProgram so every exit path destroys it.
class NvvmProgram {
 public:
  explicit NvvmProgram(const NvvmApi& api) : api_(api) {
    nvvmResult r = api_.CreateProgram(&prog_);
    if (r != NVVM_SUCCESS)
      throw CompileError(std::string("nvvmCreateProgram failed: ") + api_.GetErrorString(r), "");
  }
  ~NvvmProgram() {
    if (prog_) api_.DestroyProgram(&prog_);
  }
  NvvmProgram(const NvvmProgram&) = delete;
  NvvmProgram& operator=(const NvvmProgram&) = delete;

  nvvmProgram get() const { return prog_; }

  std::string log() const {
    size_t size = 0;
    if (api_.GetProgramLogSize(prog_, &size) != NVVM_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    if (api_.GetProgramLog(prog_, &log[0]) != NVVM_SUCCESS) return {};
    log.resize(std::strlen(log.c_str()));  // size counts the terminating NUL
    return log;
  }

  [[noreturn]] void fail(const char* call, nvvmResult r, const std::string& target) const {
    std::string log = this->log();
    std::string msg = std::string("libNVVM ") + call + " failed (" + api_.GetErrorString(r) +
                      ") for " + target;
    msg += log.empty() ? std::string(" with an empty program log") : ":\n" + log;
    throw CompileError(msg, log);
  }

 private:
  const NvvmApi& api_;
  nvvmProgram prog_ = nullptr;
};

// libdevice is ~500 KB of bitcode; read it once per process (per path, should the
// override change) and share the bytes between concurrent compilations.
std::shared_ptr<const std::vector<char>> libdevice_bytes() {
  static std::mutex mu;
  static std::string cached_path;
  static std::shared_ptr<const std::vector<char>> cached;
  std::string path = support::find_libdevice();
  std::lock_guard<std::mutex> lock(mu);
  if (cached && cached_path == path) return cached;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CudaNotFoundError("libdevice at " + path + " could not be read");
  auto bytes = std::make_shared<std::vector<char>>(std::istreambuf_iterator<char>(in),
                                                   std::istreambuf_iterator<char>());
  if (bytes->empty()) throw CudaNotFoundError("libdevice at " + path + " is empty");
  cached = std::move(bytes);
  cached_path = path;
  return cached;
}

// ---------------------------------------------------------------------------------------
// nvJitLink, resolved by hand from nvJitLink.h (never linked).

using nvJitLinkResult = int;
using nvJitLinkHandle = void*;
constexpr nvJitLinkResult NVJITLINK_SUCCESS = 0;
constexpr int NVJITLINK_INPUT_PTX = 2;

struct NvJitLinkApi {
  std::string path;
  nvJitLinkResult (*Create)(nvJitLinkHandle*, uint32_t, const char**);
  nvJitLinkResult (*Destroy)(nvJitLinkHandle*);
  nvJitLinkResult (*AddData)(nvJitLinkHandle, int, const void*, size_t, const char*);
  nvJitLinkResult (*Complete)(nvJitLinkHandle);
  nvJitLinkResult (*GetLinkedCubinSize)(nvJitLinkHandle, size_t*);
  nvJitLinkResult (*GetLinkedCubin)(nvJitLinkHandle, void*);
  nvJitLinkResult (*GetErrorLogSize)(nvJitLinkHandle, size_t*);
  nvJitLinkResult (*GetErrorLog)(nvJitLinkHandle, char*);
  nvJitLinkResult (*GetInfoLogSize)(nvJitLinkHandle, size_t*);
  nvJitLinkResult (*GetInfoLog)(nvJitLinkHandle, char*);
};

bool bind_nvjitlink(void* lib, const std::string& prefix, const std::string& suffix,
                    NvJitLinkApi& a) {
  auto name = [&](const char* base) { return prefix + "nvJitLink" + base + suffix; };
  return bind(lib, name("Create").c_str(), a.Create) &&
         bind(lib, name("Destroy").c_str(), a.Destroy) &&
         bind(lib, name("AddData").c_str(), a.AddData) &&
         bind(lib, name("Complete").c_str(), a.Complete) &&
         bind(lib, name("GetLinkedCubinSize").c_str(), a.GetLinkedCubinSize) &&
         bind(lib, name("GetLinkedCubin").c_str(), a.GetLinkedCubin) &&
         bind(lib, name("GetErrorLogSize").c_str(), a.GetErrorLogSize) &&
         bind(lib, name("GetErrorLog").c_str(), a.GetErrorLog) &&
         bind(lib, name("GetInfoLogSize").c_str(), a.GetInfoLogSize) &&
         bind(lib, name("GetInfoLog").c_str(), a.GetInfoLog);
}

// Returns nullptr (and fills `why`) when nvJitLink is unavailable, so the caller can fall
// back to ptxas. Success is cached; failure is retried (see nvvm_api()).
const NvJitLinkApi* nvjitlink_api(std::string* why) {
  static std::mutex mu;
  static std::unique_ptr<NvJitLinkApi> api;
  std::lock_guard<std::mutex> lock(mu);
  if (api) return api.get();

  std::string searched;
  void* lib = support::open_library(support::libnvjitlink_candidates(), &searched);
  if (!lib) {
    if (why) *why = "nvJitLink could not be loaded. Searched:\n" + searched;
    return nullptr;
  }
  auto a = std::make_unique<NvJitLinkApi>();
  a->path = support::loaded_library_path(lib);
  // The header maps each API to a versioned entry point (__nvJitLinkCreate_13_0); the
  // plain names are exported too. Take one complete set so versions are never mixed.
  bool ok = bind_nvjitlink(lib, "", "", *a) || bind_nvjitlink(lib, "__", "_13_0", *a) ||
            bind_nvjitlink(lib, "__", "_12_0", *a);
  if (!ok) {
    ::dlclose(lib);
    if (why) *why = "nvJitLink at " + a->path + " lacks the expected entry points";
    return nullptr;
  }
  api = std::move(a);
  return api.get();
}

const char* nvjitlink_result_name(nvJitLinkResult r) {
  // Order of the nvJitLinkResult enum in nvJitLink.h (CUDA 12.x/13.x).
  static const char* const kNames[] = {
      "NVJITLINK_SUCCESS",
      "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
      "NVJITLINK_ERROR_MISSING_ARCH",
      "NVJITLINK_ERROR_INVALID_INPUT",
      "NVJITLINK_ERROR_PTX_COMPILE",
      "NVJITLINK_ERROR_NVVM_COMPILE",
      "NVJITLINK_ERROR_INTERNAL",
      "NVJITLINK_ERROR_THREADPOOL",
      "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
      "NVJITLINK_ERROR_FINALIZE",
      "NVJITLINK_ERROR_NULL_INPUT",
      "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
      "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE",
      "NVJITLINK_ERROR_ARCH_MISMATCH",
      "NVJITLINK_ERROR_OUTDATED_LIBRARY",
      "NVJITLINK_ERROR_MISSING_FATBIN",
      "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
      "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
      "NVJITLINK_ERROR_LTO_NOT_ENABLED",
  };
  if (r >= 0 && r < static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[r];
  return "unknown nvJitLinkResult";
}

std::string nvjitlink_log(const NvJitLinkApi& api, nvJitLinkHandle h, bool error_log) {
  size_t size = 0;
  auto get_size = error_log ? api.GetErrorLogSize : api.GetInfoLogSize;
  auto get = error_log ? api.GetErrorLog : api.GetInfoLog;
  if (get_size(h, &size) != NVJITLINK_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (get(h, &log[0]) != NVJITLINK_SUCCESS) return {};
  log.resize(std::strlen(log.c_str()));
  return log;
}

// ---------------------------------------------------------------------------------------
// ptxas subprocess helpers

// A private temporary directory removed with everything in it on scope exit.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/opencute-ptxas-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      throw CompileError("could not create a temporary directory for ptxas: " +
                             std::string(std::strerror(errno)),
                         "");
    path_ = buf.data();
  }
  ~TempDir() {
    for (const char* f : {"/in.ptx", "/out.cubin", "/ptxas.log"}) ::unlink((path_ + f).c_str());
    ::rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

// -----------------------------------------------------------------------------------------

PtxResult compile_nvvm_ir_to_ptx(const std::string& llvm_ir_text, const std::string& arch,
                                 int opt_level, bool generate_line_info, bool link_libdevice) {
  Arch a = parse_arch(arch);
  check_opt_level(opt_level);
  const NvvmApi& api = nvvm_api();
  // Read libdevice before starting the clock: it is a one-time file read, not compilation.
  std::shared_ptr<const std::vector<char>> libdevice;
  if (link_libdevice) libdevice = libdevice_bytes();

  auto t0 = Clock::now();
  NvvmProgram prog(api);
  nvvmResult r = api.AddModuleToProgram(prog.get(), llvm_ir_text.data(), llvm_ir_text.size(),
                                        "opencute_module");
  if (r != NVVM_SUCCESS) prog.fail("nvvmAddModuleToProgram", r, a.compute);
  if (libdevice) {
    // Lazy: only the libdevice functions the module references are linked in.
    r = api.LazyAddModuleToProgram(prog.get(), libdevice->data(), libdevice->size(),
                                   "libdevice.10.bc");
    if (r != NVVM_SUCCESS) prog.fail("nvvmLazyAddModuleToProgram(libdevice)", r, a.compute);
  }

  std::string arch_opt = "-arch=" + a.compute;
  std::string opt_opt = "-opt=" + std::to_string(opt_level);
  std::vector<const char*> options{arch_opt.c_str(), opt_opt.c_str()};
  if (generate_line_info) options.push_back("-generate-line-info");
  r = api.CompileProgram(prog.get(), static_cast<int>(options.size()), options.data());
  if (r != NVVM_SUCCESS) {
    // OPENCUTE_NVVM_ERROR_DUMP=<file> keeps the NVVM IR libNVVM refused, for bug reports.
    if (const char* dump = std::getenv("OPENCUTE_NVVM_ERROR_DUMP")) std::ofstream(dump) << llvm_ir_text;
    prog.fail("nvvmCompileProgram", r, a.compute);
  }

  size_t size = 0;
  r = api.GetCompiledResultSize(prog.get(), &size);
  if (r != NVVM_SUCCESS) prog.fail("nvvmGetCompiledResultSize", r, a.compute);
  PtxResult result;
  result.ptx.assign(size, '\0');
  r = api.GetCompiledResult(prog.get(), &result.ptx[0]);
  if (r != NVVM_SUCCESS) prog.fail("nvvmGetCompiledResult", r, a.compute);
  result.ptx.resize(std::strlen(result.ptx.c_str()));  // drop the terminating NUL
  result.log = prog.log();
  result.ms = ms_since(t0);
  return result;
}

namespace detail {

CubinResult link_with_nvjitlink(const std::string& ptx, const std::string& arch,
                                int opt_level, const std::string& extra_ptxas_options) {
  Arch a = parse_arch(arch);
  check_opt_level(opt_level);
  std::string why;
  const NvJitLinkApi* api = nvjitlink_api(&why);
  if (!api) throw CudaNotFoundError(why);

  std::vector<std::string> opts{"-arch=" + a.sm};
  // nvJitLink's own -O accepts only 0 and 3; the intermediate ptxas levels go through
  // -Xptxas, which reaches the same ptxas optimizer.
  if (opt_level == 0 || opt_level == 3)
    opts.push_back("-O" + std::to_string(opt_level));
  else
    opts.push_back("-Xptxas=-O" + std::to_string(opt_level));
  for (const auto& o : split_options(extra_ptxas_options)) opts.push_back("-Xptxas=" + o);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  auto t0 = Clock::now();
  nvJitLinkHandle h = nullptr;
  nvJitLinkResult r = api->Create(&h, static_cast<uint32_t>(argv.size()), argv.data());
  // Create can fail after allocating a handle whose log explains the bad option.
  struct Guard {
    const NvJitLinkApi* api;
    nvJitLinkHandle* h;
    ~Guard() {
      if (*h) api->Destroy(h);
    }
  } guard{api, &h};
  auto fail = [&](const char* call) {
    std::string log = h ? nvjitlink_log(*api, h, true) : std::string();
    std::string info = h ? nvjitlink_log(*api, h, false) : std::string();
    if (!info.empty()) log += (log.empty() ? "" : "\n") + info;
    throw CompileError(std::string("nvJitLink ") + call + " failed (" +
                           nvjitlink_result_name(r) + ") for " + a.sm +
                           (log.empty() ? std::string(" with an empty log") : ":\n" + log),
                       log);
  };
  if (r != NVJITLINK_SUCCESS) fail("nvJitLinkCreate");
  // The size includes the PTX text's terminating NUL, which nvJitLink expects.
  r = api->AddData(h, NVJITLINK_INPUT_PTX, ptx.c_str(), ptx.size() + 1, "opencute.ptx");
  if (r != NVJITLINK_SUCCESS) fail("nvJitLinkAddData");
  r = api->Complete(h);
  if (r != NVJITLINK_SUCCESS) fail("nvJitLinkComplete");
  size_t size = 0;
  r = api->GetLinkedCubinSize(h, &size);
  if (r != NVJITLINK_SUCCESS) fail("nvJitLinkGetLinkedCubinSize");
  CubinResult result;
  result.cubin.resize(size);
  r = api->GetLinkedCubin(h, result.cubin.data());
  if (r != NVJITLINK_SUCCESS) fail("nvJitLinkGetLinkedCubin");
  result.log = nvjitlink_log(*api, h, false);
  result.ms = ms_since(t0);
  result.linker = "nvJitLink";
  return result;
}

std::vector<std::string> ptxas_environment(const char* const* parent) {
  // ptxas allocates ~50 MB in small pieces for a large kernel; 4 KiB pages cost FA4's SM90
  // forward ~13k page faults, huge pages ~2k: 6-9% less ptxas CPU, the same cubin. glibc before
  // 2.35 ignores the tunable, and where THP is off it changes nothing.
  static const std::string kHugePages = "glibc.malloc.hugetlb=1";
  static const std::string kTunables = "GLIBC_TUNABLES=";
  std::vector<std::string> env;
  bool has_tunables = false;
  for (const char* const* e = parent; e && *e; ++e) {
    std::string entry = *e;
    if (entry.compare(0, kTunables.size(), kTunables) == 0) {
      has_tunables = true;
      if (entry.find("glibc.malloc.hugetlb") == std::string::npos)
        entry += (entry.size() > kTunables.size() ? ":" : "") + kHugePages;
    }
    env.push_back(std::move(entry));
  }
  if (!has_tunables) env.push_back(kTunables + kHugePages);
  return env;
}

CubinResult link_with_ptxas(const std::string& ptx, const std::string& arch, int opt_level,
                            const std::string& extra_ptxas_options) {
  Arch a = parse_arch(arch);
  check_opt_level(opt_level);
  std::string ptxas = support::find_ptxas();

  auto t0 = Clock::now();
  TempDir dir;
  std::string in_path = dir.path() + "/in.ptx";
  std::string out_path = dir.path() + "/out.cubin";
  std::string log_path = dir.path() + "/ptxas.log";
  {
    std::ofstream out(in_path, std::ios::binary);
    out.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    if (!out) throw CompileError("could not write " + in_path, "");
  }

  // posix_spawn with an argv (no shell), so options and paths need no quoting.
  std::vector<std::string> args{ptxas, "-arch=" + a.sm, "-O" + std::to_string(opt_level)};
  for (const auto& o : split_options(extra_ptxas_options)) args.push_back(o);
  args.insert(args.end(), {"-o", out_path, in_path});
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(&s[0]);
  argv.push_back(nullptr);
  std::vector<std::string> env = ptxas_environment(environ);
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(&s[0]);
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  int err = ::posix_spawn(&pid, ptxas.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0)
    throw CompileError("could not run " + ptxas + ": " + std::strerror(err), "");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw CompileError("waitpid for ptxas failed", "");
  }
  std::string log = read_text(log_path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                        : std::string("was killed by a signal");
    throw CompileError(ptxas + " " + how + " for " + a.sm +
                           (log.empty() ? std::string() : ":\n" + log),
                       log);
  }
  std::string cubin = read_text(out_path);
  if (cubin.empty()) throw CompileError(ptxas + " produced no cubin", log);
  CubinResult result;
  result.cubin.assign(cubin.begin(), cubin.end());
  result.log = log;
  result.ms = ms_since(t0);
  result.linker = "ptxas";
  return result;
}

}  // namespace detail

bool redistributes_registers(const std::string& ptx) { return ptx.find("setmaxnreg.") != std::string::npos; }

CubinResult link_ptx_to_cubin(const std::string& ptx, const std::string& arch, int opt_level,
                              const std::string& extra_ptxas_options) {
  std::string why;
  // nvJitLink compiles PTX as a relocatable unit, and ptxas then ignores setmaxnreg "to maintain
  // compatibility across compilation units" (info C7504): a warp-specialised kernel keeps the
  // launch's register count (168 at 384 threads) where its math warps asked for 240, spills and
  // serialises its wgmmas (C7512). ptxas alone compiles the whole program and honours it.
  if (redistributes_registers(ptx)) {
    try {
      CubinResult r = detail::link_with_ptxas(ptx, arch, opt_level, extra_ptxas_options);
      r.log = "ptxas (whole program) used: the PTX has setmaxnreg\n" + r.log;
      return r;
    } catch (const std::exception& e) {
      if (!nvjitlink_api(&why)) throw;
      CubinResult r = detail::link_with_nvjitlink(ptx, arch, opt_level, extra_ptxas_options);
      r.log = std::string("the PTX has setmaxnreg, which nvJitLink ignores; ptxas could not be used: ") + e.what() +
              "\n" + r.log;
      return r;
    }
  }
  if (nvjitlink_api(&why))
    return detail::link_with_nvjitlink(ptx, arch, opt_level, extra_ptxas_options);
  try {
    return detail::link_with_ptxas(ptx, arch, opt_level, extra_ptxas_options);
  } catch (const CudaNotFoundError& e) {
    // Neither back end exists: report both searches, not just the last one.
    throw CudaNotFoundError("No PTX linker is available. " + why +
                            "The ptxas fallback failed too: " + e.what());
  }
}

namespace {
// Never destroyed: the exit path joins the thread through it after static destructors may have run.
std::mutex& preload_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::thread*& preload_thread() {
  static std::thread* t = nullptr;
  return t;
}
}  // namespace

void preload_toolchain_async() {
  std::lock_guard<std::mutex> lock(preload_mutex());
  static bool started = false;
  if (started) return;
  started = true;
  preload_thread() = new std::thread([] {
    try {
      nvvm_api();
    } catch (...) {
    }
    try {
      nvjitlink_api(nullptr);
    } catch (...) {
    }
  });
}

void wait_for_toolchain_preload() {
  std::lock_guard<std::mutex> lock(preload_mutex());
  if (preload_thread() && preload_thread()->joinable()) preload_thread()->join();
}

}  // namespace opencute::target
