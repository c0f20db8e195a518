// The TMA descriptor's field checks (emulator::fill_tma_descriptor, shared by the emulator and the
// driver's cuTensorMapEncodeTiled path): what the tensor map insists on, and the extent-1
// dimensions whose strides never move an address.
#include <gtest/gtest.h>

#include <stdexcept>

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

}  // namespace
