#include "runtime/cooperative_grid.h"

#include <algorithm>
#include <string>

#include "runtime/cuda_driver.h"

namespace opencute::runtime {

int64_t max_coresident_blocks(const OccupancyModel& m, int64_t threads_per_block, int64_t smem_bytes) {
  if (threads_per_block <= 0) return 0;
  int64_t warps = (threads_per_block + 31) / 32;  // threads are allocated a warp at a time
  int64_t per_sm = std::min(m.max_blocks_per_sm, m.max_threads_per_sm / (warps * 32));
  int64_t smem = smem_bytes + m.reserved_smem_per_block;
  per_sm = std::min(per_sm, m.smem_per_sm / smem);
  return std::max<int64_t>(per_sm, 0) * m.sms;
}

void check_cooperative_grid(const OccupancyModel& m, const unsigned grid[3], const unsigned block[3], unsigned smem_bytes) {
  int64_t blocks = int64_t(grid[0]) * grid[1] * grid[2];
  int64_t threads = int64_t(block[0]) * block[1] * block[2];
  int64_t limit = max_coresident_blocks(m, threads, smem_bytes);
  if (blocks > limit)
    throw CudaError("cooperative launch of " + std::to_string(blocks) + " blocks of " + std::to_string(threads) +
                        " threads: at most " + std::to_string(limit) +
                        " such blocks can be resident at once (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)",
                    kCooperativeLaunchTooLarge);
}

}  // namespace opencute::runtime
