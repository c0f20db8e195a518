// Blackwell cluster launch control (cute.arch.issue_clc_query / clc_response): a running cluster
// asks the hardware to cancel the launch of a cluster that has not started yet and takes over its
// work (the dynamic persistent tile scheduler of cutlass.utils).
#pragma once
#include <vector>

#include "dsl/num.h"

namespace opencute::dsl {

// clusterlaunchcontrol.try_cancel: the 16-byte response lands at `response` (shared memory, 16-byte
// aligned) and completes 16 transaction bytes on the mbarrier `mbar`; with `multicast`, in every CTA
// of the cluster at the same shared-memory offsets.
void clc_try_cancel(const Num& response, const Num& mbar, bool multicast);
// clusterlaunchcontrol.query_cancel on the response in shared memory: {x, y, z, canceled}, the
// ctaid of the canceled cluster's first CTA (Int32 each) and whether a cluster was canceled (Boolean).
std::vector<Num> clc_query_cancel(const Num& response);

}  // namespace opencute::dsl
