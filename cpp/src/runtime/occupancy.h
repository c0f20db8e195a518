// How many thread-block clusters of a given size the device can run at once, for sizing
// persistent grids (cutlass.utils.HardwareInfo.get_max_active_clusters).
#pragma once

namespace opencute::runtime {

// Clusters of `cluster_size` CTAs (a 1-D cluster) that fit on `device` at once when every CTA
// takes the whole shared memory of its SM (one CTA per SM, as persistent GEMMs are sized), from
// cuOccupancyMaxActiveClusters on a probe kernel. For cluster_size 1 on devices without clusters
// (before sm_90) it is the SM count. Throws CudaError when the driver cannot answer.
int max_active_clusters(int device, int cluster_size);

}  // namespace opencute::runtime
