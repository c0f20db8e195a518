// GPU memory staged through host memory around an emulated launch, with a fake device (host
// memory standing for device memory): the decision of what is staged, overlapping views kept as
// one host buffer, address translation, only the launch's writes copied back, device addresses
// found in memory staged on first access (whole allocations, around the arguments' copies),
// addresses that are no memory refused, and a launch on a capturing stream recorded as
// stream-ordered copies around a host function that each replay repeats.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include "emulator/host_interpreter.h"

#include "runtime/argument_contract.h"
#include "runtime/host_staging.h"

using namespace opencute;
using runtime::KernelMemory;
using runtime::TensorMemory;

namespace {

// "Device" memory is a host array; every copy and synchronization is recorded.
class FakeDevice final : public runtime::DeviceMemory {
 public:
  void synchronize() override { log.push_back("sync"); }
  void copy_to_host(void* host, uintptr_t device, size_t bytes) override {
    std::memcpy(host, reinterpret_cast<const void*>(device), bytes);
    log.push_back("dtoh " + std::to_string(device - base) + "+" + std::to_string(bytes));
  }
  void copy_to_device(uintptr_t device, const void* host, size_t bytes) override {
    std::memcpy(reinterpret_cast<void*>(device), host, bytes);
    log.push_back("htod " + std::to_string(device - base) + "+" + std::to_string(bytes));
  }
  // Allocations the "driver" knows, as [begin, begin + size).
  Range allocation_of(uintptr_t address) override {
    log.push_back("query " + std::to_string(address - base));
    for (const Range& a : allocations)
      if (address >= a.begin && address < a.begin + a.size) return a;
    return {};
  }
  bool host_mapped(uintptr_t address) override { return address < unmapped_from; }
  // Stream-ordered work is recorded into `graph`, which a test replays (the graph's launches).
  void copy_to_host_async(void* host, uintptr_t device, size_t bytes, void* stream) override {
    log.push_back("dtoh async " + std::to_string(device - base) + "+" + std::to_string(bytes) + " on " + name(stream));
    graph.push_back([=] { std::memcpy(host, reinterpret_cast<const void*>(device), bytes); });
  }
  void copy_to_device_async(uintptr_t device, const void* host, size_t bytes, void* stream) override {
    log.push_back("htod async " + std::to_string(device - base) + "+" + std::to_string(bytes) + " on " + name(stream));
    graph.push_back([=] { std::memcpy(reinterpret_cast<void*>(device), host, bytes); });
  }
  void launch_host_function(void* stream, void (*fn)(void*), void* data) override {
    log.push_back("host function on " + name(stream));
    graph.push_back([=] { fn(data); });
  }
  void replay() {
    for (auto& node : graph) node();
  }
  static std::string name(void* stream) { return "stream " + std::to_string(uintptr_t(stream)); }
  uintptr_t base = 0;
  std::vector<Range> allocations;
  uintptr_t unmapped_from = ~uintptr_t(0);
  std::vector<std::string> log;
  std::vector<std::function<void()>> graph;
};

int64_t load_i64(uintptr_t a) {
  int64_t v;
  std::memcpy(&v, reinterpret_cast<const void*>(a), 8);
  return v;
}

}  // namespace

TEST(KernelMemory, EmulatorStagesGpuMemoryOnlyWhereADeviceIsPresent) {
  EXPECT_EQ(runtime::kernel_memory(false, true, true), KernelMemory::Any);
  EXPECT_EQ(runtime::kernel_memory(true, false, true), KernelMemory::Device);
  EXPECT_EQ(runtime::kernel_memory(true, true, false), KernelMemory::Host);
  EXPECT_EQ(runtime::kernel_memory(true, true, true), KernelMemory::HostStaged);
  // Without a device (CI) GPU memory stays refused, host memory served in place.
  EXPECT_FALSE(runtime::memory_serves(TensorMemory::Device, KernelMemory::Host));
  EXPECT_TRUE(runtime::memory_serves(TensorMemory::Host, KernelMemory::Host));
  // With one, GPU memory is served by staging it; host, pinned and managed memory are read in place.
  EXPECT_TRUE(runtime::memory_serves(TensorMemory::Device, KernelMemory::HostStaged));
  EXPECT_TRUE(runtime::stages_through_host(TensorMemory::Device, KernelMemory::HostStaged));
  for (TensorMemory m : {TensorMemory::Host, TensorMemory::PinnedHost, TensorMemory::Managed}) {
    EXPECT_TRUE(runtime::memory_serves(m, KernelMemory::HostStaged));
    EXPECT_FALSE(runtime::stages_through_host(m, KernelMemory::HostStaged));
  }
  EXPECT_FALSE(runtime::memory_serves(TensorMemory::Other, KernelMemory::HostStaged));
  EXPECT_FALSE(runtime::stages_through_host(TensorMemory::Device, KernelMemory::Host));
  EXPECT_FALSE(runtime::stages_through_host(TensorMemory::Device, KernelMemory::Device));
}

TEST(HostStaging, OverlappingViewsShareOneHostBufferAndOnlyWritesGoBack) {
  std::vector<uint8_t> device(256);
  for (size_t i = 0; i < device.size(); ++i) device[i] = uint8_t(i);
  FakeDevice fake;
  fake.base = uintptr_t(device.data());
  runtime::HostStaging staging(fake);
  // a = bytes [0, 64), b = [32, 96) (a view overlapping a), c = [128, 160) apart.
  staging.add(fake.base + 0, fake.base + 64);
  staging.add(fake.base + 128, fake.base + 160);
  staging.add(fake.base + 32, fake.base + 96);
  staging.add(fake.base + 200, fake.base + 200);  // empty: ignored
  staging.copy_in();
  ASSERT_EQ(staging.spans().size(), 2u);
  EXPECT_EQ(staging.spans()[0], std::make_pair(fake.base, fake.base + 96));
  EXPECT_EQ(staging.spans()[1], std::make_pair(fake.base + 128, fake.base + 160));
  EXPECT_EQ(fake.log, (std::vector<std::string>{"sync", "dtoh 0+96", "dtoh 128+32"}));

  // b's element 8 is a's element 40: one host byte.
  uint8_t* a = reinterpret_cast<uint8_t*>(staging.host_address(fake.base));
  uint8_t* b = reinterpret_cast<uint8_t*>(staging.host_address(fake.base + 32));
  EXPECT_EQ(b, a + 32);
  EXPECT_NE(uintptr_t(a), fake.base);
  EXPECT_EQ(a[40], 40);
  // One past the end of a span translates (an end pointer); an address outside every span does not.
  EXPECT_EQ(staging.host_address(fake.base + 96), uintptr_t(a) + 96);
  EXPECT_EQ(staging.host_address(fake.base + 100), fake.base + 100);
  uint8_t* c = reinterpret_cast<uint8_t*>(staging.host_address(fake.base + 128));

  b[8] = 0xAA;   // device byte 40
  a[70] = 0xBB;  // device byte 70
  fake.log.clear();
  EXPECT_EQ(staging.copy_out(), 31u);  // bytes 40..70, the range between the first and last write
  EXPECT_EQ(fake.log, (std::vector<std::string>{"htod 40+31", "sync"}));
  EXPECT_EQ(device[40], 0xAA);
  EXPECT_EQ(device[70], 0xBB);
  EXPECT_EQ(device[39], 39);
  EXPECT_EQ(device[71], 71);
  EXPECT_EQ(c[0], 128);  // c was not written: nothing copied back for it
}

TEST(HostStaging, TouchingAllocationsAreCopiedSeparately) {
  // Two allocations side by side in the address space: one copy may not cross from one into the
  // other, so they stay two spans, and an address at the boundary belongs to the second.
  std::vector<uint8_t> device(128);
  for (size_t i = 0; i < device.size(); ++i) device[i] = uint8_t(i);
  FakeDevice fake;
  fake.base = uintptr_t(device.data());
  runtime::HostStaging staging(fake);
  staging.add(fake.base + 64, fake.base + 128);
  staging.add(fake.base, fake.base + 64);
  staging.copy_in();
  ASSERT_EQ(staging.spans().size(), 2u);
  EXPECT_EQ(fake.log, (std::vector<std::string>{"sync", "dtoh 0+64", "dtoh 64+64"}));
  EXPECT_EQ(reinterpret_cast<uint8_t*>(staging.host_address(fake.base + 64))[0], 64);
}

TEST(HostStaging, HostCopiesKeepTheDeviceAlignment) {
  // A tensor map must be 64-byte aligned and swizzled tiles up to 1024: the host copy of a span
  // sits at the same address modulo 1024 as the device memory it stands for.
  std::vector<uint8_t> device(4096);
  FakeDevice fake;
  fake.base = uintptr_t(device.data());
  runtime::HostStaging staging(fake);
  const uintptr_t first = (fake.base + 1023) / 1024 * 1024 + 64, second = first + 2048 + 200;
  staging.add(first, first + 128);
  staging.add(second, second + 8);
  staging.copy_in();
  EXPECT_EQ(staging.host_address(first) % 1024, first % 1024);
  EXPECT_EQ(staging.host_address(second) % 1024, second % 1024);
  EXPECT_NE(staging.host_address(first), first);
}

TEST(HostStaging, ALaunchThatWritesNothingCopiesNothingBack) {
  std::vector<uint8_t> device(64, 7);
  FakeDevice fake;
  fake.base = uintptr_t(device.data());
  runtime::HostStaging staging(fake);
  staging.add(fake.base, fake.base + 64);
  staging.copy_in();
  fake.log.clear();
  EXPECT_EQ(staging.copy_out(), 0u);
  EXPECT_TRUE(fake.log.empty());
}

TEST(HostStaging, NothingAddedTouchesNoDevice) {
  FakeDevice fake;
  runtime::HostStaging staging(fake);
  EXPECT_TRUE(staging.empty());
  staging.copy_in();
  EXPECT_EQ(staging.copy_out(), 0u);
  EXPECT_TRUE(fake.log.empty());
  EXPECT_EQ(staging.host_address(1234), 1234u);
}

TEST(HostStaging, ADeviceAddressReadFromStagedMemoryResolvesToAHostCopyOfItsWholeAllocation) {
  // Device memory: a table of one pointer (bytes [0, 8)) and, apart, a 64-byte allocation at 64
  // that only the table points to (grouped GEMM's per-group A/B/C).
  std::vector<uint8_t> device(128, 0);
  FakeDevice fake;
  fake.base = uintptr_t(device.data());
  fake.allocations = {{fake.base + 64, 64}};
  const int64_t target = int64_t(fake.base + 64 + 16);
  std::memcpy(device.data(), &target, 8);
  for (int i = 64; i < 128; ++i) device[size_t(i)] = uint8_t(i);
  runtime::HostStaging staging(fake);
  staging.add(fake.base, fake.base + 8);
  staging.copy_in();
  const emulator::DeviceAddressMap& map = staging;
  // The table itself is an argument's host copy; the address it holds still names the device.
  const uintptr_t table = staging.host_address(fake.base);
  EXPECT_EQ(map.host_address(fake.base, 8), table);
  const uintptr_t pointer = uintptr_t(load_i64(table));
  EXPECT_EQ(pointer, uintptr_t(target));
  fake.log.clear();
  const uintptr_t host = map.host_address(pointer, 4);
  EXPECT_NE(host, pointer);
  EXPECT_EQ(*reinterpret_cast<uint8_t*>(host), 80);
  // The whole allocation came over in one copy, once: its other bytes resolve without the driver.
  EXPECT_EQ(fake.log, (std::vector<std::string>{"query 80", "dtoh 64+64"}));
  fake.log.clear();
  EXPECT_EQ(map.host_address(fake.base + 64, 1), host - 16);
  EXPECT_TRUE(fake.log.empty());
  // A write through the resolved address reaches the device at copy_out, and only it.
  *reinterpret_cast<uint8_t*>(host + 1) = 0xEE;
  EXPECT_EQ(staging.copy_out(), 1u);
  EXPECT_EQ(device[81], 0xEE);
  EXPECT_EQ(device[82], 82);
}

TEST(HostStaging, AnAllocationStagedLateKeepsTheHostCopyOfTheArgumentsViewingIt) {
  // An argument views bytes [16, 32) of an allocation [0, 64); a pointer loaded later reaches
  // byte 40 of it. Bytes 16..31 must stay one host copy (the argument's), the rest is staged around it.
  std::vector<uint8_t> device(64);
  for (size_t i = 0; i < device.size(); ++i) device[i] = uint8_t(i);
  FakeDevice fake;
  fake.base = uintptr_t(device.data());
  fake.allocations = {{fake.base, 64}};
  runtime::HostStaging staging(fake);
  staging.add(fake.base + 16, fake.base + 32);
  staging.copy_in();
  const uintptr_t argument = staging.host_address(fake.base + 16);
  const uintptr_t late = staging.host_address(fake.base + 40, 1);
  EXPECT_EQ(*reinterpret_cast<uint8_t*>(late), 40);
  EXPECT_EQ(staging.host_address(fake.base + 20, 4), argument + 4);
  EXPECT_EQ(staging.spans().size(), 3u);  // [0,16), [16,32) and [32,64)
  // An access across the boundary of two host copies cannot be served by either.
  EXPECT_THROW(staging.host_address(fake.base + 30, 4), emulator::ExecutionError);
}

TEST(HostStaging, AnAddressThatIsNeitherStagedNorDeviceNorMappedIsAnError) {
  std::vector<uint8_t> device(64);
  FakeDevice fake;
  fake.base = uintptr_t(device.data());
  fake.unmapped_from = (fake.base / 4096 + 1) * 4096;  // the next page is no mapping's
  runtime::HostStaging staging(fake);
  staging.add(fake.base, fake.base + 16);
  staging.copy_in();
  // Mapped host memory the launch was not given (a raw host pointer) is accessed in place.
  EXPECT_EQ(staging.host_address(fake.base + 16, 4), fake.base + 16);
  try {
    staging.host_address(fake.unmapped_from + 48, 4);
    FAIL() << "an unmapped address resolved";
  } catch (const emulator::ExecutionError& e) {
    EXPECT_EQ(std::string(e.what()), "the address is neither host memory nor device memory staged for the emulated launch");
  }
  // An access running out of a staged span.
  try {
    staging.host_address(fake.base + 12, 8);
    FAIL() << "an access past a span resolved";
  } catch (const emulator::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("runs over the end of the 16 bytes of device memory"), std::string::npos) << e.what();
  }
}

TEST(HostStaging, ACapturedLaunchIsRecordedAsCopiesAroundAHostFunctionAndRepeatsOnEachReplay) {
  // A launch on a stream that is being captured: nothing may be waited for or copied now. The
  // graph holds copies in, the launch (doubling the tensor's 4 int64 elements), copies out.
  std::vector<int64_t> device = {1, 2, 3, 4, 99};
  FakeDevice fake;
  fake.base = uintptr_t(device.data());
  fake.allocations = {{fake.base + 32, 8}};  // element 4: device memory that no argument reaches
  runtime::HostStaging staging(fake);
  staging.add(fake.base, fake.base + 32);
  void* stream = reinterpret_cast<void*>(uintptr_t(7));
  uintptr_t tensor = 0;  // the argument, translated after capture as the caller does
  int runs = 0;
  staging.capture(stream, [&] {
    ++runs;
    for (int k = 0; k < 4; ++k) {
      const uintptr_t a = staging.host_address(fake.base + 8 * uintptr_t(k), 8);
      EXPECT_EQ(a, tensor + 8 * uintptr_t(k));
      *reinterpret_cast<int64_t*>(a) *= 2;
    }
    staging.host_address(fake.base + 32, 8);  // a host function may not stage more: an error
  });
  tensor = staging.host_address(fake.base);
  EXPECT_NE(tensor, fake.base);
  EXPECT_EQ(fake.log, (std::vector<std::string>{"dtoh async 0+32 on stream 7", "host function on stream 7",
                                                "htod async 0+32 on stream 7"}));
  EXPECT_EQ(runs, 0);  // captured, not run
  EXPECT_EQ(device[0], 1);
  fake.unmapped_from = fake.base;  // the device addresses are not host memory
  EXPECT_EQ(runtime::HostStaging::take_replay_error(), "");
  fake.replay();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(device, (std::vector<int64_t>{2, 4, 6, 8, 99}));
  EXPECT_NE(runtime::HostStaging::take_replay_error().find("a launch captured into a CUDA graph stages only the memory "
                                                           "its arguments reach"),
            std::string::npos);
  // A second replay reads what the device holds now.
  device[0] = 10;
  fake.replay();
  EXPECT_EQ(device, (std::vector<int64_t>{20, 8, 12, 16, 99}));
  // The driver was never asked about an address while replaying.
  for (const std::string& entry : fake.log) EXPECT_EQ(entry.find("query"), std::string::npos) << entry;
  EXPECT_EQ(runtime::HostStaging::take_replay_error().empty(), false);
}

TEST(HostStaging, WithoutADriverNoAddressIsDeviceMemory) {
  // CI has no CUDA driver: a host address is never taken for device memory.
  int x = 0;
  EXPECT_FALSE(runtime::device_allocation_of(uintptr_t(&x)).device);
}

TEST(PointerContract, APointerFitsWhenWhatTheCodeAssumesOfItsAddressHolds) {
  // Compiled for gmem f16 pointers aligned to 16 (rmsnorm); called with make_ptr(dtype, address).
  EXPECT_TRUE(runtime::pointer_type_fits("Float16,1,16", "Float16,0,2", 0x1000, 16));
  EXPECT_TRUE(runtime::pointer_type_fits("Float16,1,16", "Float16,1,16", 0x1000, 16));
  EXPECT_TRUE(runtime::pointer_type_fits("Float16,0,16", "Float16,1,2", 0x1000, 16));
  EXPECT_FALSE(runtime::pointer_type_fits("Float16,1,16", "Float16,0,2", 0x1002, 16));  // misaligned
  EXPECT_FALSE(runtime::pointer_type_fits("Float16,1,16", "Float32,1,16", 0x1000, 16));  // element type
  EXPECT_FALSE(runtime::pointer_type_fits("Float16,1,16", "Float16,3,16", 0x1000, 16));  // smem for gmem
  EXPECT_FALSE(runtime::pointer_type_fits("Float16,1,16", "", 0x1000, 16));
  EXPECT_FALSE(runtime::pointer_type_fits("Float16,1,16", "garbage", 0x1000, 16));
}

TEST(HostStaging, TheHostMemoryTestTellsReadableFromUnmappedAndInaccessiblePages) {
  // The test that keeps the emulator from dereferencing an address it cannot read: a device
  // address of a unified address space is an inaccessible reservation on the host.
  FakeDevice fake;
  int x = 1;
  EXPECT_TRUE(fake.DeviceMemory::host_mapped(uintptr_t(&x)));
  const long page = sysconf(_SC_PAGESIZE);
  void* reserved = mmap(nullptr, size_t(page) * 2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(reserved, MAP_FAILED);
  EXPECT_FALSE(fake.DeviceMemory::host_mapped(uintptr_t(reserved) + 8));
  munmap(reinterpret_cast<char*>(reserved) + page, size_t(page));
  EXPECT_FALSE(fake.DeviceMemory::host_mapped(uintptr_t(reserved) + uintptr_t(page) + 8));  // now unmapped
  munmap(reserved, size_t(page));
}
