// The on-disk compile cache: the PTX and cubin of a compiled program, stored under
// CUTE_DSL_CACHE_DIR (default /tmp/{user}/cutlass_python_cache) and keyed by the text of
// everything that decides them — package version, target arch, code-generation options and the
// program's IR. CUTE_DSL_DISABLE_FILE_CACHING=True turns it off.
//
// Entries are written to a temporary file and renamed into place, so processes sharing the
// folder only ever see whole entries. Each entry carries its full key and a checksum; an entry
// that fails either is reported once on stderr, removed and recompiled, never used.
#pragma once
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace opencute::runtime {

struct CachedCode {
  std::string ptx;
  std::vector<char> cubin;
};

class DiskCache {
 public:
  // The process-wide cache configured from the environment at first use.
  static DiskCache& instance();
  // A cache in `dir` (tests); an empty dir disables it.
  explicit DiskCache(std::string dir);

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  std::string path_for(const std::string& key) const;

  std::optional<CachedCode> load(const std::string& key);
  // Best effort: a cache that cannot be written (read-only folder, full disk) is not an error.
  void store(const std::string& key, const CachedCode& code);

 private:
  void report_corrupt_once(const std::string& path, const std::string& why);

  std::string dir_;
  std::mutex mu_;
  std::set<std::string> reported_;
};

// Which build of OpenCuTe's own library is running (its file's size and modification time), for
// cache keys: a rebuilt or reinstalled library may lower the same IR differently under the same
// package version, and must not be handed the previous build's code.
const std::string& library_build_identity();

// The folder the environment asks for: "" when file caching is disabled.
std::string cache_dir_from_environment();

}  // namespace opencute::runtime
