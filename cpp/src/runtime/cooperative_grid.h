// How many blocks of one kernel a device can hold at once: a cooperative launch (all blocks
// co-resident, so that they may wait on each other) of a larger grid fails with
// CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE. On the GPU the driver decides; the CPU emulator
// applies the same rule to a model of the device, so a program that works there does not
// fail on the GPU for its grid size alone.
#pragma once
#include <cstdint>

namespace opencute::runtime {

// The per-SM limits that bound occupancy (defaults: an H100 SXM).
struct OccupancyModel {
  int64_t sms = 132;
  int64_t max_threads_per_sm = 2048;
  int64_t max_blocks_per_sm = 32;
  int64_t smem_per_sm = 228 * 1024;
  int64_t reserved_smem_per_block = 1024;  // the driver's per-block shared-memory reservation
};

constexpr int kCooperativeLaunchTooLarge = 720;  // CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE

// Blocks of `threads_per_block` threads using `smem_bytes` of shared memory that fit on the device at once.
int64_t max_coresident_blocks(const OccupancyModel& m, int64_t threads_per_block, int64_t smem_bytes);
// Throws CudaError(kCooperativeLaunchTooLarge) when the grid does not fit.
void check_cooperative_grid(const OccupancyModel& m, const unsigned grid[3], const unsigned block[3], unsigned smem_bytes);

}  // namespace opencute::runtime
