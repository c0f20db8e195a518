// CPU semantics of the Hopper warp / CTA ops (ir.h "Hopper warp/CTA and cluster family") that
// need only the warp: elect.sync, bar.warp.sync, setmaxnreg, prmt and make_warp_uniform's check.
// Private to the emulator: device_lowering.cpp calls lower_sm90_warp for the whole family (the
// cluster ops become K::Cluster instructions, whose handler in sm90_warp.cpp reaches the other
// blocks of the cluster through the scheduler's state).
#pragma once
#include <cstdint>
#include <string>

#include "emulator/device_program.h"

namespace opencute::emulator {

// Runs a K::Sm90Warp instruction on the active lanes `mask` of a warp whose registers are `regs`
// (SoA: register r of lane l at regs[r * 32 + l]) and whose existing threads are `live`. Returns
// "" or what went wrong, with the offending lane in *lane.
std::string execute_sm90_warp(const Inst& i, Scalar* regs, uint32_t mask, uint32_t live, int* lane);

// PTX prmt.b32 in its default mode: byte k of the result is byte (selector nibble k & 7) of
// {b, a} (a the low word), replicated from its sign bit when the nibble's bit 3 is set.
uint32_t prmt_b32(uint32_t a, uint32_t b, uint32_t selector);

// Lowers one op of the family into the program; false when `op` is not one.
bool lower_sm90_warp(DeviceEmulator::Program& p, const ir::Op& op);

}  // namespace opencute::emulator
