// The TMA descriptor's field checks (emulator::fill_tma_descriptor, shared by the emulator and the
// driver's cuTensorMapEncodeTiled path): what the tensor map insists on, and the extent-1
// dimensions whose strides never move an address.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "emulator/sm90_async.h"
#include "ir/types.h"

namespace {

using namespace opencute;

TEST(TmaDescriptorFields, ExtentOneDimensionTakesASixteenByteMultipleStride) {
  // A K-major f16 (M,K,L) = (64,128,1) GEMM operand as the tensor map sees it (dim 0 = K): the
  // batch dimension's stride arrives normalised to one element (2 bytes).
  const uint64_t dims[3] = {128, 64, 1}, strides[3] = {2, 256, 2};
  const uint32_t box[3] = {64, 64, 1};
  emulator::TmaDescriptor d;
  ASSERT_NO_THROW(emulator::fill_tma_descriptor(d, ir::f16(), 3, 4096, dims, strides, box, 128));
  EXPECT_EQ(d.strides[2], uint64_t(256 * 64));  // the span of the dimensions inside it
  EXPECT_EQ(d.strides[1], uint64_t(256));       // the others as given
}

TEST(TmaDescriptorFields, MisalignedStrideOfARealDimensionIsRefused) {
  const uint64_t dims[3] = {128, 64, 2}, strides[3] = {2, 256, 2};
  const uint32_t box[3] = {64, 64, 1};
  emulator::TmaDescriptor d;
  EXPECT_THROW(emulator::fill_tma_descriptor(d, ir::f16(), 3, 4096, dims, strides, box, 128), std::invalid_argument);
}

TEST(TmaDescriptorFields, PackedFourBitValuesCountValuesAlongDimensionZero) {
  // A row-major (64, 256) Float4E2M1FN matrix, a (128, 64) box: 16U4_ALIGN8B, 128 values = 64 bytes.
  const uint64_t dims[2] = {256, 64}, strides[2] = {1, 128};
  const uint32_t box[2] = {128, 64};
  emulator::TmaDescriptor d;
  ASSERT_NO_THROW(emulator::fill_tma_descriptor(d, ir::f4e2m1(), 2, 4096, dims, strides, box, 0));
  EXPECT_EQ(d.data_type, emulator::kTmaPacked4Bit);
  // As bytes: half the extent, box and coordinate along dimension 0.
  int64_t origin[2] = {128, 3};
  std::string error;
  emulator::TmaDescriptor bytes = emulator::tma_byte_view(d, origin, &error);
  EXPECT_TRUE(error.empty());
  EXPECT_EQ(bytes.dims[0], uint64_t(128));
  EXPECT_EQ(bytes.box[0], uint32_t(64));
  EXPECT_EQ(origin[0], 64);
  EXPECT_EQ(origin[1], 3);
  int64_t odd[2] = {3, 0};
  emulator::tma_byte_view(d, odd, &error);
  EXPECT_NE(error.find("splits a byte"), std::string::npos);
  const uint32_t half_box[2] = {16, 64};  // 8 bytes: not a multiple of 16
  EXPECT_THROW(emulator::fill_tma_descriptor(d, ir::f4e2m1(), 2, 4096, dims, strides, half_box, 0),
               std::invalid_argument);
}

TEST(TmaDescriptorFields, UnpackedFourBitValuesFollowCudaRulesFor16U4Align16B) {
  // The same matrix as 16U4_ALIGN16B (cuda.h): box 128 values, 32-byte aligned address and strides.
  const uint64_t dims[2] = {256, 64}, strides[2] = {1, 128};
  const uint32_t box[2] = {128, 32};
  emulator::TmaDescriptor d;
  ASSERT_NO_THROW(emulator::fill_tma_descriptor(d, ir::f4e2m1(), 2, 4096, dims, strides, box, 128,
                                                emulator::kTmaUnpacked4Bit));
  EXPECT_EQ(d.data_type, 14);  // CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B
  // The byte view halves dimension 0 as for packed values; shared memory spreads each 8 bytes over 16.
  int64_t origin[2] = {128, 0};
  std::string error;
  EXPECT_EQ(emulator::tma_byte_view(d, origin, &error).box[0], uint32_t(64));
  EXPECT_EQ(emulator::tma_smem_offset(14, 0), uint64_t(0));
  EXPECT_EQ(emulator::tma_smem_offset(14, 7), uint64_t(7));
  EXPECT_EQ(emulator::tma_smem_offset(14, 8), uint64_t(16));
  EXPECT_EQ(emulator::tma_smem_offset(14, 63), uint64_t(119));  // chunk 7's byte 7; 120-127 is its gap
  EXPECT_EQ(emulator::tma_smem_offset(13, 63), uint64_t(63));
  auto refused = [&](uint64_t address, const uint64_t* ds, const uint64_t* ss, const uint32_t* bx, int swizzle,
                     const char* why) {
    try {
      emulator::fill_tma_descriptor(d, ir::f4e2m1(), 2, address, ds, ss, bx, swizzle, emulator::kTmaUnpacked4Bit);
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(4096 + 16, dims, strides, box, 0, "32-byte aligned");
  const uint32_t box64[2] = {64, 32};
  refused(4096, dims, strides, box64, 0, "must be 128 values");
  const uint64_t dims192[2] = {192, 64}, strides96[2] = {1, 96};
  refused(4096, dims192, strides96, box, 0, "multiple of 128");
  const uint64_t strides144[2] = {1, 144};
  refused(4096, dims, strides144, box, 0, "multiple of 32");
  refused(4096, dims, strides, box, 64, "none or 128 bytes");
  // Only 4-bit elements have the format.
  const uint64_t bdims[2] = {256, 64}, bstrides[2] = {1, 256};
  EXPECT_THROW(emulator::fill_tma_descriptor(d, ir::int_type(8), 2, 4096, bdims, bstrides, box, 0, emulator::kTmaUnpacked4Bit),
               std::invalid_argument);
}

}  // namespace
