#include "runtime/compile_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ir/printer.h"
#include "support/env.h"
#include "support/file_trust.h"
#include "support/log.h"

namespace opencute::runtime {
namespace {

constexpr char kMagic[] = "OPENCUTE-CACHE 1\n";

std::string user_name() {
  if (const passwd* pw = getpwuid(geteuid())) return pw->pw_name;
  if (const char* u = std::getenv("USER")) return u;
  return "user" + std::to_string(geteuid());
}

void put_u64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(char((v >> (8 * i)) & 0xff));
}

bool get_u64(const std::string& in, size_t* pos, uint64_t* v) {
  if (*pos + 8 > in.size()) return false;
  *v = 0;
  for (int i = 0; i < 8; ++i) *v |= uint64_t(static_cast<unsigned char>(in[*pos + size_t(i)])) << (8 * i);
  *pos += 8;
  return true;
}

// Creates the folders of `dir` that do not exist yet, each with mode 0700 (umask may only take
// bits away): a folder OpenCuTe makes is the user's alone from its first moment.
void make_private_folders(const std::string& dir) {
  for (size_t end = dir.find('/', 1);; end = dir.find('/', end + 1)) {
    std::string part = end == std::string::npos ? dir : dir.substr(0, end);
    if (!part.empty()) ::mkdir(part.c_str(), 0700);  // EEXIST and the like: opening it will tell
    if (end == std::string::npos) break;
  }
}

// Reads all of an open file; false on a read error.
bool read_all(int fd, std::string* out) {
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buf, size_t(n));
  }
}

bool get_bytes(const std::string& in, size_t* pos, std::string* out) {
  uint64_t n = 0;
  if (!get_u64(in, pos, &n) || n > in.size() - *pos) return false;
  out->assign(in, *pos, size_t(n));
  *pos += size_t(n);
  return true;
}

}  // namespace

std::string cache_dir_from_environment() {
  if (support::env_flag("CUTE_DSL_DISABLE_FILE_CACHING")) return "";
  if (const char* d = std::getenv("CUTE_DSL_CACHE_DIR"); d && *d) return d;
  return "/tmp/" + user_name() + "/cutlass_python_cache";
}

DiskCache& DiskCache::instance() {
  static DiskCache* cache = new DiskCache(cache_dir_from_environment());
  return *cache;
}

DiskCache::DiskCache(std::string dir) : dir_(std::move(dir)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
}

DiskCache::~DiskCache() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

namespace {
std::string entry_name(const std::string& key) {
  // Two independent 64-bit hashes name the file; the key stored inside settles collisions.
  char name[48];
  std::snprintf(name, sizeof name, "%016llx%016llx.ocache", (unsigned long long)ir::fnv1a64(key),
                (unsigned long long)ir::fnv1a64(key, 0x9e3779b97f4a7c15ull));
  return name;
}
}  // namespace

std::string DiskCache::path_for(const std::string& key) const { return dir_ + "/" + entry_name(key); }

void DiskCache::refuse(const std::string& path, const std::string& why) {
  if (refused_.exchange(true)) return;
  std::string line = kUntrustedWarning + path + " " + why +
                     "; this process compiles without it (the cache must be a folder you own that group and "
                     "others cannot write; see CUTE_DSL_CACHE_DIR)";
  std::fprintf(stderr, "%s\n", line.c_str());
  support::log(support::LogLevel::Warning, line);
}

int DiskCache::folder() {
  if (!enabled()) return -1;
  std::call_once(folder_checked_, [this] {
    make_private_folders(dir_);
    int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      // A folder that cannot be made or opened (read-only file system, no permission) is not a
      // threat, only no cache: the log says so, as for entries that cannot be written.
      support::log(support::LogLevel::Warning, "compile cache: cannot open " + dir_ + ": " + std::strerror(errno));
      refused_ = true;
      return;
    }
    struct stat st{};
    std::string why = ::fstat(fd, &st) != 0 ? std::string("cannot be checked: ") + std::strerror(errno)
                                            : support::why_not_private(st);
    if (!why.empty()) {
      ::close(fd);
      refuse(dir_, why);
      return;
    }
    dir_fd_ = fd;
  });
  return refused_ ? -1 : dir_fd_;
}

bool DiskCache::usable() { return folder() >= 0; }

void DiskCache::report_corrupt_once(const std::string& path, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!reported_.insert(path).second) return;
  }
  std::fprintf(stderr, "opencute: ignoring the corrupt compile-cache entry %s (%s); compiling again\n", path.c_str(),
               why.c_str());
  support::log(support::LogLevel::Warning, "corrupt compile-cache entry " + path + ": " + why);
}

std::optional<CachedCode> DiskCache::load(const std::string& key) {
  int dir_fd = folder();
  if (dir_fd < 0) return std::nullopt;
  const std::string name = entry_name(key);
  const std::string path = dir_ + "/" + name;
  // O_NOFOLLOW: a link planted under an entry's name could lead anywhere; O_NONBLOCK: nor may a
  // FIFO hang the process (a regular file ignores it).
  int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) {
      refuse(path, "is a symbolic link");
    } else {
      support::log(support::LogLevel::Debug, "compile cache miss: " + path);
    }
    return std::nullopt;
  }
  // The checks read the opened file itself, so it cannot be swapped between check and read.
  struct stat st{};
  std::string why = ::fstat(fd, &st) != 0 ? std::string("cannot be checked: ") + std::strerror(errno)
                    : !S_ISREG(st.st_mode) ? std::string("is not a regular file")
                                           : support::why_not_private(st);
  std::string data;
  bool read_ok = why.empty() && read_all(fd, &data);
  int read_errno = errno;
  ::close(fd);
  if (!why.empty()) {
    refuse(path, why);
    return std::nullopt;
  }
  if (!read_ok) {
    support::log(support::LogLevel::Warning, "compile cache: cannot read " + path + ": " + std::strerror(read_errno));
    return std::nullopt;
  }
  auto corrupt = [&](const std::string& why) -> std::optional<CachedCode> {
    report_corrupt_once(path, why);
    ::unlinkat(dir_fd, name.c_str(), 0);
    return std::nullopt;
  };
  const size_t magic_len = sizeof(kMagic) - 1;
  if (data.size() < magic_len + 8 || data.compare(0, magic_len, kMagic) != 0) return corrupt("bad header");
  size_t body_end = data.size() - 8;
  size_t pos = body_end;
  uint64_t checksum = 0;
  get_u64(data, &pos, &checksum);
  if (ir::fnv1a64(data.substr(0, body_end)) != checksum) return corrupt("checksum mismatch (truncated or damaged)");
  std::string body = data.substr(0, body_end);
  pos = magic_len;
  std::string stored_key, ptx, cubin;
  if (!get_bytes(body, &pos, &stored_key) || !get_bytes(body, &pos, &ptx) || !get_bytes(body, &pos, &cubin) ||
      pos != body.size())
    return corrupt("malformed sections");
  if (stored_key != key) {
    support::log(support::LogLevel::Info, "compile cache: hash collision at " + path + ", compiling");
    return std::nullopt;
  }
  support::log(support::LogLevel::Info, "compile cache hit: " + path);
  CachedCode code;
  code.ptx = std::move(ptx);
  code.cubin.assign(cubin.begin(), cubin.end());
  return code;
}

void DiskCache::store(const std::string& key, const CachedCode& code) {
  int dir_fd = folder();
  if (dir_fd < 0) return;
  std::string data = kMagic;
  put_u64(&data, key.size());
  data += key;
  put_u64(&data, code.ptx.size());
  data += code.ptx;
  put_u64(&data, code.cubin.size());
  data.append(code.cubin.data(), code.cubin.size());
  put_u64(&data, ir::fnv1a64(data));

  static std::atomic<unsigned> counter{0};
  const std::string name = entry_name(key);
  const std::string path = dir_ + "/" + name;
  const std::string tmp = name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    support::log(support::LogLevel::Warning,
                 "compile cache: cannot write " + dir_ + "/" + tmp + ": " + std::strerror(errno));
    return;
  }
  size_t done = 0;
  bool ok = true;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    done += size_t(n);
  }
  ok = ::close(fd) == 0 && ok;
  // rename() replaces atomically: a concurrent reader sees the old entry or the new one.
  if (!ok || ::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    support::log(support::LogLevel::Warning, "compile cache: cannot store " + path);
    return;
  }
  support::log(support::LogLevel::Debug, "compile cache stored: " + path);
}

const std::string& library_build_identity() {
  static const std::string identity = [] {
    Dl_info info{};
    struct stat st{};
    if (!dladdr(reinterpret_cast<void*>(&cache_dir_from_environment), &info) || !info.dli_fname ||
        stat(info.dli_fname, &st) != 0)
      return std::string("unknown");
    return std::to_string(st.st_size) + "." + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  }();
  return identity;
}

}  // namespace opencute::runtime
