"""Device intrinsics (`cute.arch`): thread and block indices, barriers, clusters, warp shuffles and
votes, atomics, shared memory, mbarriers and fences, Float32 fast paths, tensor memory. Each call
forwards to a typed IR op built in C++ (cpp/src/dsl)."""
import sys as _sys

from ...base_dsl.arch import Arch  # noqa: F401 - NVIDIA's MLA decode imports it from here
from ._common import _memory_name, _peer_rank, _pointer_value, _user_line, _where  # noqa: F401
from ._arithmetic import (add_packed_f32x2, calc_packed_f32x2_op, exp2, fma_packed_f32x2, fmax, fmin,  # noqa: F401
                         mul_packed_f32x2, popc, rcp_approx, sub_packed_f32x2)
from ._atomics import (_atomic, atomic_add, atomic_and, atomic_cas, atomic_exch, atomic_fmax, atomic_max,  # noqa: F401
                      atomic_min, atomic_or, atomic_xor)
from ._cluster import (block_idx_in_cluster, block_in_cluster_dim, block_in_cluster_idx, cluster_arrive,  # noqa: F401
                      cluster_arrive_relaxed, cluster_dim, cluster_idx, cluster_size, cluster_sync, cluster_wait,
                      map_dsmem_ptr)
from ._fence import (ProxyKind, SharedSpace, fence_acq_rel_cluster, fence_acq_rel_cta, fence_acq_rel_gpu,  # noqa: F401
                    fence_acq_rel_sys, fence_proxy, fence_view_async_shared)
from ._launch_control import (clc_response, griddepcontrol_launch_dependents, griddepcontrol_wait,  # noqa: F401
                             issue_clc_query)
from ._mbarrier import (mbarrier_arrive, mbarrier_arrive_and_expect_tx, mbarrier_conditional_try_wait,  # noqa: F401
                       mbarrier_expect_tx, mbarrier_init, mbarrier_init_fence, mbarrier_test_wait, mbarrier_try_wait,
                       mbarrier_wait)
from ._memory import (alloc_smem, cp_async_bulk_commit_group, cp_async_bulk_wait_group,  # noqa: F401
                     cp_async_commit_group, cp_async_mbarrier_arrive, cp_async_mbarrier_arrive_noinc,
                     cp_async_wait_group, dynamic_smem_size, get_dyn_smem, get_dyn_smem_size, prefetch)
from ._threads import (FULL_MASK, THREADS_PER_WARPGROUP, WARP_SIZE, WARPS_PER_WARPGROUP, _if_region,  # noqa: F401
                      _IfRegion, _u32, barrier, barrier_arrive, block_dim, block_idx, elect_one, grid_dim, lane_idx,
                      make_warp_uniform, prmt, setmaxregister_decrease, setmaxregister_increase, sync_threads,
                      sync_warp, thread_idx, warp_idx, warpgroup_reg_alloc, warpgroup_reg_dealloc)
from ._tmem import (alloc_tmem, dealloc_tmem, fence_view_async_tmem_load, fence_view_async_tmem_store,  # noqa: F401
                   get_max_tmem_alloc_cols, get_min_tmem_alloc_cols, relinquish_tmem_alloc_permit, retrieve_tmem_ptr)
from ._warp import (shuffle_sync, shuffle_sync_bfly, shuffle_sync_down, shuffle_sync_op, shuffle_sync_up,  # noqa: F401
                   vote_all_sync, vote_any_sync, vote_ballot_sync, vote_uni_sync, warp_reduction, warp_reduction_max,
                   warp_reduction_sum, warp_redux_sync)

# NVIDIA's examples import warp constants from `cutlass.cute.arch.nvvm_wrappers` and map_dsmem_ptr
# and the shared-memory allocations from `cutlass.cute.arch.smem`: the same names.
nvvm_wrappers = _sys.modules[__name__]
_sys.modules[__name__ + ".nvvm_wrappers"] = nvvm_wrappers
smem = nvvm_wrappers
_sys.modules[__name__ + ".smem"] = smem
