#include "runtime/tma_descriptor.h"

#include <stdexcept>

#include "runtime/cuda_driver.h"

namespace opencute::runtime {

void encode_tma_descriptor(emulator::TmaDescriptor& d, ir::Type element) {
  uint64_t strides[4];
  uint32_t element_strides[5] = {1, 1, 1, 1, 1};
  for (int k = 1; k < d.rank; ++k) strides[k - 1] = d.strides[k];
  const int swizzle = d.swizzle_bytes == 0 ? 0 : d.swizzle_bytes == 32 ? 1 : d.swizzle_bytes == 64 ? 2 : 3;
  constexpr int kL2Promotion128B = 2;
  (void)element;  // d.data_type: the element's, or the format make_tiled_tma_atom asked for
  CudaDriver::get().encode_tensor_map_tiled(d.tensor_map, d.data_type, unsigned(d.rank),
                                            reinterpret_cast<void*>(d.global_address), d.dims, strides, d.box,
                                            element_strides, swizzle, kL2Promotion128B);
}

}  // namespace opencute::runtime
