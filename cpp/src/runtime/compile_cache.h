// The on-disk compile cache: the PTX and cubin of a compiled program, stored under
// CUTE_DSL_CACHE_DIR (default /tmp/{user}/cutlass_python_cache) and keyed by the text of
// everything that decides them — package version, target arch, code-generation options and the
// program's IR. CUTE_DSL_DISABLE_FILE_CACHING=True turns it off.
//
// Entries are written to a temporary file and renamed into place, so processes sharing the
// folder only ever see whole entries. Each entry carries its full key and a checksum; an entry
// that fails either is reported once on stderr, removed and recompiled, never used.
//
// The cache holds code that runs on the GPU, so only the user's own files are trusted: the
// folder (created 0700, with any parents OpenCuTe creates) must belong to the current user and
// be writable by no one else, and so must each entry read (checked with fstat on the opened
// file, never through a symbolic link). Entries are written 0600. When a check fails, the
// process warns once on stderr (kUntrustedWarning) and goes on with the in-memory cache only.
#pragma once
#include <atomic>
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

// The start of the warning an untrusted folder or entry gives; the whole line reads
// "opencute: not using the compile cache: <path> <why>; this process compiles without it (the
// cache must be a folder you own that group and others cannot write; see CUTE_DSL_CACHE_DIR)".
inline constexpr char kUntrustedWarning[] = "opencute: not using the compile cache: ";

class DiskCache {
 public:
  // The process-wide cache configured from the environment at first use.
  static DiskCache& instance();
  // A cache in `dir` (tests); an empty dir disables it.
  explicit DiskCache(std::string dir);
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  bool enabled() const { return !dir_.empty(); }
  // Whether the folder exists (or could be created) and passed the trust checks, and no entry
  // has failed them since; checks the folder on first use.
  bool usable();
  const std::string& dir() const { return dir_; }
  std::string path_for(const std::string& key) const;

  std::optional<CachedCode> load(const std::string& key);
  // Best effort: a cache that cannot be written (read-only folder, full disk) is not an error.
  void store(const std::string& key, const CachedCode& code);

 private:
  void report_corrupt_once(const std::string& path, const std::string& why);
  // The folder's descriptor (-1 when unusable), opening, creating and checking it on first use.
  int folder();
  // Warns once and turns the disk cache off for this object's lifetime.
  void refuse(const std::string& path, const std::string& why);

  std::string dir_;
  std::mutex mu_;
  std::set<std::string> reported_;
  // Entries are opened relative to the checked folder's descriptor, so a folder renamed or
  // replaced after the check is never read from or written into.
  std::once_flag folder_checked_;
  int dir_fd_ = -1;
  std::atomic<bool> refused_{false};
};

// Which build of OpenCuTe's own library is running (its file's size and modification time), for
// cache keys: a rebuilt or reinstalled library may lower the same IR differently under the same
// package version, and must not be handed the previous build's code.
const std::string& library_build_identity();

// The folder the environment asks for: "" when file caching is disabled.
std::string cache_dir_from_environment();

}  // namespace opencute::runtime
