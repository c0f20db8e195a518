// support/file_trust: which files found in default places may hold code OpenCuTe runs, and
// the toolkit search skipping pieces that fail the rule.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/cuda_paths.h"
#include "support/file_trust.h"

namespace fs = std::filesystem;
using opencute::support::why_not_private;
using opencute::support::why_not_trusted_install;

namespace {

// Sets (or unsets, for nullptr) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    set(value);
  }
  void set(const char* value) {
    if (value) ::setenv(name_.c_str(), value, 1);
    else ::unsetenv(name_.c_str());
  }
  ~ScopedEnv() { set(had_old_ ? old_.c_str() : nullptr); }

 private:
  std::string name_, old_;
  bool had_old_ = false;
};

// A fresh folder under /tmp (root-owned and sticky on the machines the tests run on).
fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("opencute_trust_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  ::chmod(d.c_str(), 0755);
  return fs::canonical(d);
}

fs::path touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "x";
  ::chmod(p.c_str(), 0644);
  return p;
}

struct stat stat_of(const fs::path& p) {
  struct stat st{};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st;
}

}  // namespace

TEST(FileTrust, PrivateMeansOwnedByYouAndWritableByNoOneElse) {
  fs::path d = fresh_dir("private");
  ::chmod(d.c_str(), 0700);
  EXPECT_EQ(why_not_private(stat_of(d)), "");
  ::chmod(d.c_str(), 0755);  // others may read, not write
  EXPECT_EQ(why_not_private(stat_of(d)), "");
  ::chmod(d.c_str(), 0720);
  EXPECT_EQ(why_not_private(stat_of(d)), "is writable by its group or by others (mode 0720)");
  ::chmod(d.c_str(), 0702);
  EXPECT_EQ(why_not_private(stat_of(d)), "is writable by its group or by others (mode 0702)");
}

TEST(FileTrust, AnInstallIsTrustedWhenNoFolderAboveItIsOpenToOthers) {
  fs::path root = fresh_dir("install");
  fs::path lib = touch(root / "nvvm" / "lib64" / "libnvvm.so");
  EXPECT_EQ(why_not_trusted_install(lib.string()), "");  // /tmp is sticky: allowed
  ::chmod((root / "nvvm").c_str(), 0777);
  EXPECT_EQ(why_not_trusted_install(lib.string()),
            "lies in " + (root / "nvvm").string() + ", which is writable by others (mode 0777)");
  ::chmod((root / "nvvm").c_str(), 0775);  // group write is allowed for installs
  EXPECT_EQ(why_not_trusted_install(lib.string()), "");
  ::chmod(lib.c_str(), 0666);
  EXPECT_EQ(why_not_trusted_install(lib.string()), "is writable by others (mode 0666)");
  ::chmod(lib.c_str(), 0644);
  // A link is judged by what it leads to.
  fs::path open_dir = root / "open";
  fs::create_directories(open_dir);
  ::chmod(open_dir.c_str(), 0777);
  fs::path target = touch(open_dir / "libnvvm.so.4");
  fs::create_symlink(target, root / "nvvm" / "lib64" / "libnvvm.so.4");
  EXPECT_EQ(why_not_trusted_install((root / "nvvm" / "lib64" / "libnvvm.so.4").string()),
            "lies in " + open_dir.string() + ", which is writable by others (mode 0777)");
}

TEST(FileTrust, AnInstallOwnedByAnotherUserIsNotTrusted) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  fs::path root = fresh_dir("foreign");
  fs::path lib = touch(root / "lib64" / "libnvJitLink.so");
  ASSERT_EQ(::chown((root / "lib64").c_str(), 65534, 65534), 0);
  std::string why = why_not_trusted_install(lib.string());
  EXPECT_EQ(why.rfind("lies in " + (root / "lib64").string() + ", which is owned by ", 0), 0u) << why;
  EXPECT_NE(why.find("(uid 65534), neither root nor you"), std::string::npos) << why;
}

// A library planted in a world-writable folder under a default root is skipped with a warning;
// the same folder named by CUDA_HOME is the user's choice and is used.
TEST(FileTrust, TheToolkitSearchSkipsUntrustedDefaultPlaces) {
  fs::path root = fresh_dir("toolkit");
  fs::path lib = touch(root / "nvvm" / "lib64" / "libnvvm.so");
  ::chmod((root / "nvvm" / "lib64").c_str(), 0777);
  ScopedEnv home("CUDA_HOME", nullptr), path("CUDA_PATH", nullptr), nvvm("OPENCUTE_LIBNVVM", nullptr);
  opencute::support::add_cuda_search_root(root.string());
  testing::internal::CaptureStderr();
  auto candidates = opencute::support::libnvvm_candidates();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(candidates.begin(), candidates.end(), lib.string()), 0);
  EXPECT_NE(err.find("opencute: not using " + lib.string() + ": it lies in " + (root / "nvvm" / "lib64").string() +
                     ", which is writable by others (mode 0777); another user could have put it there (set "
                     "CUDA_HOME or OPENCUTE_LIBNVVM to use it anyway)\n"),
            std::string::npos)
      << err;
  home.set(root.c_str());
  candidates = opencute::support::libnvvm_candidates();
  EXPECT_EQ(std::count(candidates.begin(), candidates.end(), lib.string()), 1);
  fs::remove_all(root);  // the registered root stays, empty, for the rest of the process
}

TEST(FileTrust, APtxasOthersCouldHaveWrittenIsNotRun) {
  fs::path root = fresh_dir("ptxas");
  fs::path ptxas = touch(root / "bin" / "ptxas");
  ::chmod(ptxas.c_str(), 0777);  // the file itself is writable by everyone
  ScopedEnv home("CUDA_HOME", nullptr), path("CUDA_PATH", nullptr), forced("OPENCUTE_PTXAS", nullptr);
  opencute::support::add_cuda_search_root(root.string());
  testing::internal::CaptureStderr();
  std::string found;
  try {
    found = opencute::support::find_ptxas();
  } catch (const opencute::support::CudaNotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find(ptxas.string() + ": not used: it is writable by others (mode 0777)"),
              std::string::npos)
        << e.what();
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(found, ptxas.string());
  EXPECT_NE(err.find("opencute: not using " + ptxas.string() + ": it is writable by others (mode 0777);"),
            std::string::npos)
      << err;
  fs::remove_all(root);
}
