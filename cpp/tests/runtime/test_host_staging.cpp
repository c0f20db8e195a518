// GPU memory staged through host memory around an emulated launch, with a fake device (host
// memory standing for device memory): the decision of what is staged, overlapping views kept as
// one host buffer, address translation, and only the launch's writes copied back.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

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
  uintptr_t base = 0;
  std::vector<std::string> log;
};

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
