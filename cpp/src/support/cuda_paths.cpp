#include "support/cuda_paths.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <system_error>

#include "support/file_trust.h"
#include "support/log.h"

namespace fs = std::filesystem;

namespace opencute::support {
namespace {

std::mutex& roots_mutex() {
  static std::mutex m;
  return m;
}

std::vector<std::string>& registered_roots() {
  static std::vector<std::string> roots;
  return roots;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool is_regular_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);  // follows symlinks, so soname links count
}

bool is_executable_file(const std::string& path) {
  return is_regular_file(path) && ::access(path.c_str(), X_OK) == 0;
}

void push_unique(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// Files in `dir` whose name is `stem` or `stem.<version>`: the unversioned name first
// (it is the developer symlink when present), then versions from newest to oldest, so
// libnvvm.so.4 is chosen over a stale libnvvm.so.3 left beside it.
std::vector<std::string> versioned_files(const std::string& dir, const std::string& stem) {
  std::vector<std::string> versioned;
  std::string exact;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name == stem) {
      exact = it->path().string();
    } else if (name.size() > stem.size() + 1 && name.compare(0, stem.size(), stem) == 0 &&
               name[stem.size()] == '.') {
      versioned.push_back(it->path().string());
    }
  }
  // Lexicographic descending is good enough for the single-digit sonames NVIDIA ships.
  std::sort(versioned.begin(), versioned.end(), std::greater<std::string>());
  if (!exact.empty()) versioned.insert(versioned.begin(), exact);
  std::vector<std::string> files;
  for (const auto& p : versioned)
    if (is_regular_file(p)) files.push_back(p);  // drops dangling symlinks
  return files;
}

// Whether `path` lies under a toolkit root the user named ($CUDA_HOME, $CUDA_PATH) or beside a
// library the user named (`named_file`, e.g. $OPENCUTE_LIBNVVM for the libdevice next to it).
bool named_by_user(const std::string& path, const std::string& named_file = "") {
  std::error_code ec;
  fs::path real = fs::weakly_canonical(path, ec);
  if (ec) return false;
  std::vector<std::string> roots = {env_or_empty("CUDA_HOME"), env_or_empty("CUDA_PATH")};
  if (!named_file.empty()) roots.push_back(fs::path(named_file).parent_path().parent_path().string());
  for (const auto& root : roots) {
    if (root.empty()) continue;
    fs::path r = fs::weakly_canonical(root, ec);
    if (ec) continue;
    auto [r_end, p_end] = std::mismatch(r.begin(), r.end(), real.begin(), real.end());
    if (r_end == r.end()) return true;
  }
  return false;
}

// Whether a piece found in a default place may be used; when not, says why on stderr (once per
// file) and in `probed`. `hint` names the switch that makes OpenCuTe use it anyway.
bool trusted_default(const std::string& path, const char* hint, std::string* probed,
                     const std::string& named_file = "") {
  if (named_by_user(path, named_file)) return true;
  std::string why = why_not_trusted_install(path);
  if (why.empty()) return true;
  if (probed) *probed += "  " + path + ": not used: it " + why + "\n";
  static std::mutex mu;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!warned.insert(path).second) return false;
  }
  std::string line = "opencute: not using " + path + ": it " + why +
                     "; another user could have put it there (set CUDA_HOME or " + hint + " to use it anyway)";
  std::fprintf(stderr, "%s\n", line.c_str());
  log(LogLevel::Warning, line);
  return false;
}

struct LibrarySpec {
  const char* override_env;              // exact path; authoritative when set
  const char* stem;                      // e.g. "libnvvm.so"
  std::vector<const char*> subdirs;      // relative to each toolkit root
  std::vector<const char*> sonames;      // tried through the loader path last
  const char* what;                      // human name for messages
  const char* hint;                      // how to fix it, for messages
};

const LibrarySpec& nvvm_spec() {
  static const LibrarySpec spec{
      "OPENCUTE_LIBNVVM",
      "libnvvm.so",
      // Toolkit layout keeps libNVVM under nvvm/; flattened layouts (pip cu13 wheels,
      // distro packages) put it beside the other libraries.
      {"nvvm/lib64", "nvvm/lib", "lib64", "lib"},
      {"libnvvm.so.4", "libnvvm.so"},
      "libNVVM",
      "set CUDA_HOME to a CUDA toolkit, OPENCUTE_LIBNVVM to the library, or install the "
      "nvidia-cuda-nvcc wheel"};
  return spec;
}

const LibrarySpec& nvjitlink_spec() {
  static const LibrarySpec spec{
      "OPENCUTE_LIBNVJITLINK",
      "libnvJitLink.so",
      {"lib64", "lib", "targets/x86_64-linux/lib"},
      {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"},
      "nvJitLink",
      "set CUDA_HOME to a CUDA toolkit, OPENCUTE_LIBNVJITLINK to the library, or install "
      "the nvidia-nvjitlink wheel"};
  return spec;
}

// Candidates for a library plus a description of where they were looked for, so that
// failures can name the directories that did not contain the library at all.
std::vector<std::string> library_candidates(const LibrarySpec& spec, std::string* probed) {
  std::vector<std::string> out;
  std::string forced = env_or_empty(spec.override_env);
  if (!forced.empty()) {
    if (probed) *probed += "  " + std::string(spec.override_env) + "=" + forced + "\n";
    out.push_back(forced);
    return out;
  }
  std::vector<std::string> dirs_seen;
  for (const auto& root : cuda_search_roots()) {
    for (const char* sub : spec.subdirs) {
      std::string dir = root + "/" + sub;
      // Toolkits alias directories (lib -> lib64, cuda -> cuda-13.0); scan each real
      // directory once so candidate and error lists carry no duplicates.
      std::error_code ec;
      fs::path real = fs::canonical(dir, ec);
      if (!ec) {
        if (std::find(dirs_seen.begin(), dirs_seen.end(), real.string()) != dirs_seen.end())
          continue;
        dirs_seen.push_back(real.string());
      }
      auto files = versioned_files(dir, spec.stem);
      if (files.empty() && probed) *probed += "  " + dir + "/" + spec.stem + "*: not found\n";
      for (auto& f : files)
        if (trusted_default(f, spec.override_env, probed)) push_unique(out, f);
    }
  }
  for (const char* so : spec.sonames) out.push_back(so);
  return out;
}

// Resolves a library to a path, loading it through the loader only for bare sonames.
std::string find_library(const LibrarySpec& spec) {
  std::string searched;
  auto candidates = library_candidates(spec, &searched);
  for (const auto& c : candidates) {
    if (c.find('/') != std::string::npos) {
      if (is_regular_file(c)) return c;
      searched += "  " + c + ": not found\n";
      continue;
    }
    void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = ::dlerror();
      searched += "  " + c + " (loader path): " + (err ? err : "not found") + "\n";
      continue;
    }
    std::string path = loaded_library_path(h);
    ::dlclose(h);
    return path.empty() ? c : path;
  }
  throw CudaNotFoundError(std::string(spec.what) + " was not found. Searched:\n" + searched +
                          "Fix: " + spec.hint + ".");
}

std::string parent_dir(const std::string& path) {
  return fs::path(path).parent_path().string();
}

}  // namespace

void add_cuda_search_root(const std::string& root) {
  if (root.empty()) return;
  std::lock_guard<std::mutex> lock(roots_mutex());
  push_unique(registered_roots(), root);
}

std::vector<std::string> cuda_search_roots() {
  std::vector<std::string> roots;
  push_unique(roots, env_or_empty("CUDA_HOME"));
  push_unique(roots, env_or_empty("CUDA_PATH"));
  {
    std::lock_guard<std::mutex> lock(roots_mutex());
    for (const auto& r : registered_roots()) push_unique(roots, r);
  }
  push_unique(roots, "/usr/local/cuda");
  return roots;
}

std::vector<std::string> libnvvm_candidates() { return library_candidates(nvvm_spec(), nullptr); }

std::vector<std::string> libnvjitlink_candidates() {
  return library_candidates(nvjitlink_spec(), nullptr);
}

std::string find_libnvvm() { return find_library(nvvm_spec()); }

std::string find_libnvjitlink() { return find_library(nvjitlink_spec()); }

std::string find_libdevice() {
  static const char* kName = "libdevice.10.bc";
  std::string forced = env_or_empty("OPENCUTE_LIBDEVICE");
  if (!forced.empty()) {
    if (is_regular_file(forced)) return forced;
    throw CudaNotFoundError("libdevice was not found: OPENCUTE_LIBDEVICE=" + forced +
                            " does not exist.");
  }
  std::vector<std::string> candidates;
  std::string nvvm_override = env_or_empty("OPENCUTE_LIBNVVM");
  // libdevice must match the libNVVM that links it, so look beside that one first
  // (<x>/nvvm/lib64/libnvvm.so -> <x>/nvvm/libdevice/libdevice.10.bc).
  try {
    std::string nvvm_dir = parent_dir(find_libnvvm());
    push_unique(candidates, nvvm_dir + "/../libdevice/" + kName);
    push_unique(candidates, nvvm_dir + "/../nvvm/libdevice/" + kName);
  } catch (const CudaNotFoundError&) {
    // No libNVVM: the roots below still name useful places in the error message.
  }
  for (const auto& root : cuda_search_roots()) {
    push_unique(candidates, root + "/nvvm/libdevice/" + kName);
    push_unique(candidates, root + "/libdevice/" + kName);
  }
  std::string searched;
  for (const auto& c : candidates) {
    if (is_regular_file(c)) {
      if (!trusted_default(c, "OPENCUTE_LIBDEVICE", &searched, nvvm_override)) continue;
      return fs::path(c).lexically_normal().string();
    }
    searched += "  " + c + ": not found\n";
  }
  throw CudaNotFoundError("libdevice (" + std::string(kName) + ") was not found. Searched:\n" +
                          searched +
                          "Fix: set CUDA_HOME to a CUDA toolkit, OPENCUTE_LIBDEVICE to the "
                          "file, or install the nvidia-cuda-nvcc wheel.");
}

std::string find_ptxas() {
  std::string forced = env_or_empty("OPENCUTE_PTXAS");
  if (!forced.empty()) {
    if (is_executable_file(forced)) return forced;
    throw CudaNotFoundError("ptxas was not found: OPENCUTE_PTXAS=" + forced +
                            " is not an executable file.");
  }
  std::vector<std::string> candidates;
  for (const auto& root : cuda_search_roots()) push_unique(candidates, root + "/bin/ptxas");
  const size_t num_root_candidates = candidates.size();  // the rest come from the user's $PATH
  std::string path_env = env_or_empty("PATH");
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    if (end > start) push_unique(candidates, path_env.substr(start, end - start) + "/ptxas");
    start = end + 1;
  }
  std::string searched;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string& c = candidates[i];
    if (is_executable_file(c)) {
      if (i < num_root_candidates && !trusted_default(c, "OPENCUTE_PTXAS", &searched)) continue;
      return c;
    }
    searched += "  " + c + ": not found\n";
  }
  throw CudaNotFoundError("ptxas was not found. Searched:\n" + searched +
                          "Fix: set CUDA_HOME to a CUDA toolkit, OPENCUTE_PTXAS to the "
                          "executable, or install the nvidia-cuda-nvcc wheel.");
}

void* open_library(const std::vector<std::string>& candidates, std::string* searched) {
  for (const auto& c : candidates) {
    bool is_path = c.find('/') != std::string::npos;
    // Distinguish "absent" from "present but unloadable" (wrong arch, missing deps):
    // the second needs a different fix and dlerror() alone is often vague about it.
    if (is_path && !is_regular_file(c)) {
      if (searched) *searched += "  " + c + ": not found\n";
      continue;
    }
    void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    const char* err = ::dlerror();
    if (searched) {
      *searched += "  " + c + (is_path ? "" : " (loader path)") + ": " +
                   (err ? err : "dlopen failed") + "\n";
    }
  }
  return nullptr;
}

std::string loaded_library_path(void* handle) {
  if (!handle) return {};
  struct link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return {};
  return map->l_name;
}

}  // namespace opencute::support
