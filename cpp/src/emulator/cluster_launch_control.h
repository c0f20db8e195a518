// CPU semantics of Blackwell's cluster launch control (ir.h "cluster launch control"). The block
// scheduler hands clusters to host threads from one counter of clusters not launched yet
// (LaunchCtx::next_cluster); clusterlaunchcontrol.try_cancel takes the next one from the same
// counter, so that cluster is never launched and its first CTA's ctaid is the answer, or answers
// "no more work" once every cluster has been launched or canceled.
//
// The 16-byte response is opaque on the GPU; the emulator writes {x, y, z, kClcResponseTag | canceled}
// (u32 each), so that reading a response no try_cancel wrote is reported instead of decoded.
// Private to the emulator: device_lowering.cpp calls lower_cluster_launch_control, the handler
// registered by register_cluster_launch_control_handlers runs K::ClusterLaunchControl.
#pragma once
#include <cstdint>

#include "emulator/device_program.h"

namespace opencute::emulator {

constexpr uint32_t kClcResponseTag = 0x434c4300;  // "CLC\0"

// Lowers ClcTryCancel / ClcQueryCancel into the program; false when `op` is neither.
bool lower_cluster_launch_control(DeviceEmulator::Program& p, const ir::Op& op);

}  // namespace opencute::emulator
