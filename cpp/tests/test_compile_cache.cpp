// DiskCache: round trip, key checks, corruption detection, disabled cache.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "runtime/compile_cache.h"

using opencute::runtime::CachedCode;
using opencute::runtime::DiskCache;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("opencute_cache_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
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
