// Runs one cluster of a PTX launch to its end: every thread runs until it blocks (a barrier, an
// mbarrier wait, a warp collective) or exits; then waits that can complete do, collectives whose
// group has arrived run, and threads go on. A round where nothing moved is a deadlock, reported
// with what each thread waits at.
#pragma once
#include "emulator/ptx/ptx_thread_state.h"

namespace opencute::emulator::ptx {

void run_cluster(const Launch& L, Cluster& cl);

}  // namespace opencute::emulator::ptx
