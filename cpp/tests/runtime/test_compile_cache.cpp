// DiskCache: round trip, key checks, corruption detection, disabled cache, and the trust rules
// (only the user's own folder and entries are used).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "runtime/compile_cache.h"

using opencute::runtime::CachedCode;
using opencute::runtime::DiskCache;
using opencute::runtime::kUntrustedWarning;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("opencute_cache_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

mode_t mode_of(const fs::path& p) {
  struct stat st{};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// An entry for "key" written by a cache of its own in `dir`.
void store_sample_in(const fs::path& dir) {
  DiskCache writer(dir.string());
  CachedCode c;
  c.ptx = "planted";
  writer.store("key", c);
}

CachedCode sample() {
  CachedCode c;
  c.ptx = ".version 9.0\n.target sm_90a\n";
  c.cubin = {'\x7f', 'E', 'L', 'F', '\0', '\x01', '\xff'};
  return c;
}

}  // namespace

TEST(DiskCache, StoresAndLoadsByKey) {
  DiskCache cache(fresh_dir("roundtrip").string());
  EXPECT_FALSE(cache.load("key A").has_value());
  cache.store("key A", sample());
  auto hit = cache.load("key A");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->ptx, sample().ptx);
  EXPECT_EQ(hit->cubin, sample().cubin);
  EXPECT_FALSE(cache.load("key B").has_value());
  EXPECT_NE(cache.path_for("key A"), cache.path_for("key B"));
}

TEST(DiskCache, AnEntryUnderAnotherKeysNameIsNotUsed) {
  DiskCache cache(fresh_dir("collision").string());
  cache.store("key A", sample());
  fs::copy_file(cache.path_for("key A"), cache.path_for("key B"));  // as if the hashes collided
  EXPECT_FALSE(cache.load("key B").has_value());
  EXPECT_TRUE(fs::exists(cache.path_for("key B")));  // not corrupt, so not removed
}

TEST(DiskCache, CorruptEntriesAreRemovedNotUsed) {
  DiskCache cache(fresh_dir("corrupt").string());
  cache.store("key", sample());
  std::string path = cache.path_for("key");
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  for (size_t cut : {size_t(0), size_t(5), data.size() / 2, data.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(data.data(), std::streamsize(cut));
    EXPECT_FALSE(cache.load("key").has_value()) << "truncated to " << cut;
    EXPECT_FALSE(fs::exists(path));
  }
  std::string flipped = data;
  flipped[flipped.size() / 2] ^= 0x40;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(flipped.data(), std::streamsize(flipped.size()));
  EXPECT_FALSE(cache.load("key").has_value());
}

TEST(DiskCache, EmptyDirectoryDisablesIt) {
  DiskCache cache("");
  EXPECT_FALSE(cache.enabled());
  cache.store("key", sample());
  EXPECT_FALSE(cache.load("key").has_value());
}

// The cache key names the build of the library the lowering runs in (opencute_core is linked
// statically into this test program): its file's size leads the identity.
TEST(DiskCache, BuildIdentityNamesTheRunningLibraryFile) {
  const std::string& id = opencute::runtime::library_build_identity();
  auto size = std::filesystem::file_size(std::filesystem::read_symlink("/proc/self/exe"));
  EXPECT_EQ(id.substr(0, id.find('.')), std::to_string(size)) << id;
  EXPECT_EQ(&id, &opencute::runtime::library_build_identity());  // computed once per process
}

// ------------------------------------------------------------------------ trust

TEST(DiskCacheTrust, CreatesItsFoldersAndEntriesForTheUserAlone) {
  fs::path parent = fresh_dir("private");
  fs::path dir = parent / "inner" / "cache";
  DiskCache cache(dir.string());
  cache.store("key", sample());
  for (const fs::path& d : {parent, parent / "inner", dir}) {
    EXPECT_TRUE(fs::is_directory(d)) << d;
    EXPECT_EQ(mode_of(d) & 077, 0u) << d;  // 0700 less the umask
  }
  EXPECT_EQ(mode_of(cache.path_for("key")), 0600u);
  EXPECT_TRUE(cache.usable());
  EXPECT_TRUE(cache.load("key").has_value());
}

TEST(DiskCacheTrust, AFolderOthersCanWriteIsRefusedWithOneWarning) {
  fs::path dir = fresh_dir("worldwritable");
  store_sample_in(dir);  // a good entry, then the folder opened to everyone
  ::chmod(dir.c_str(), 0777);
  DiskCache cache(dir.string());
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load("key").has_value());
  cache.store("other key", sample());
  EXPECT_FALSE(cache.load("key").has_value());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, kUntrustedWarning), 1u) << err;
  EXPECT_NE(err.find(kUntrustedWarning + dir.string() +
                     " is writable by its group or by others (mode 0777); this process compiles without it (the "
                     "cache must be a folder you own that group and others cannot write; see CUTE_DSL_CACHE_DIR)\n"),
            std::string::npos)
      << err;
  EXPECT_FALSE(cache.usable());
  EXPECT_FALSE(fs::exists(cache.path_for("other key")));  // nothing written
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(DiskCacheTrust, AGroupWritableFolderIsRefused) {
  fs::path dir = fresh_dir("groupwritable");
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0770);
  DiskCache cache(dir.string());
  testing::internal::CaptureStderr();
  cache.store("key", sample());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("(mode 0770)"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(DiskCacheTrust, AReadableSharedFolderIsAccepted) {
  fs::path dir = fresh_dir("groupreadable");
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0750);  // others may read what the user shares; only the user writes
  DiskCache cache(dir.string());
  cache.store("key", sample());
  EXPECT_TRUE(cache.load("key").has_value());
}

TEST(DiskCacheTrust, AnEntryOthersCanWriteIsIgnoredAndKept) {
  fs::path dir = fresh_dir("plantedentry");
  store_sample_in(dir);
  DiskCache cache(dir.string());
  std::string entry = cache.path_for("key");
  ::chmod(entry.c_str(), 0666);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load("key").has_value());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(kUntrustedWarning + entry + " is writable by its group or by others (mode 0666);"),
            std::string::npos)
      << err;
  EXPECT_TRUE(fs::exists(entry));  // not the cache's to delete
  // The whole disk cache is off for this object: nothing more is read or written.
  cache.store("other key", sample());
  EXPECT_FALSE(fs::exists(cache.path_for("other key")));
}

TEST(DiskCacheTrust, AnEntryThatIsASymbolicLinkIsNotFollowed) {
  fs::path elsewhere = fresh_dir("linktarget");
  store_sample_in(elsewhere);
  fs::path dir = fresh_dir("linkentry");
  DiskCache cache(dir.string());
  ASSERT_TRUE(cache.usable());
  fs::create_symlink(DiskCache(elsewhere.string()).path_for("key"), cache.path_for("key"));
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load("key").has_value());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(cache.path_for("key") + " is a symbolic link;"), std::string::npos) << err;
}

// Only root can give a file away, and CI runs the tests as root.
TEST(DiskCacheTrust, AFolderOrEntryOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  const uid_t nobody = 65534;
  fs::path dir = fresh_dir("foreignfolder");
  store_sample_in(dir);
  ASSERT_EQ(::chown(dir.c_str(), nobody, nobody), 0);
  DiskCache cache(dir.string());
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load("key").has_value());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(kUntrustedWarning + dir.string() + " is owned by "), std::string::npos) << err;
  EXPECT_NE(err.find("(uid 65534), not by you, "), std::string::npos) << err;

  fs::path dir2 = fresh_dir("foreignentry");
  store_sample_in(dir2);
  DiskCache cache2(dir2.string());
  ASSERT_EQ(::chown(cache2.path_for("key").c_str(), nobody, nobody), 0);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache2.load("key").has_value());
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(kUntrustedWarning + cache2.path_for("key") + " is owned by "), std::string::npos) << err;
}
