"""`cutlass.utils`: helpers written with DSL operations that NVIDIA's kernels share (shared-memory
allocation, layouts, FP8 tensors, printing)."""
from . import tensor_helpers
from .layout import LayoutEnum, OperandMajorMode
from .print_latex import print_latex, print_latex_tv
from .grouped_gemm_tile_scheduler_helper import (GroupedGemmTileSchedulerHelper, GroupSearchResult,
                                                 GroupSearchState, create_initial_search_state)
from .hardware_info import HardwareInfo
from .tensormap_manager import TensorMapManager, TensorMapUpdateMode
from .static_persistent_tile_scheduler import PersistentTileSchedulerParams, StaticPersistentTileScheduler, WorkTileInfo
from .dynamic_persistent_tile_scheduler import ClcDynamicPersistentTileScheduler, ClcDynamicPersistentTileSchedulerParams
from .static_persistent_group_tile_scheduler import GroupedWorkTileInfo, StaticPersistentGroupTileScheduler
from .static_persistent_runtime_tile_scheduler import StaticPersistentRuntimeTileScheduler
from .smem_allocator import SmemAllocator, SmemPartition, get_smem_capacity_in_bytes
from .tensor_helpers import create_cute_tensor_for_fp8, is_fp8_dtype
from .tmem_allocator import TmemAllocator, get_num_tmem_alloc_cols
from . import blackwell_helpers, gemm, hopper_helpers, sm90, sm100
from .blackwell_epilogue import compute_epilogue_tile_shape

__all__ = ["LayoutEnum", "OperandMajorMode", "tensor_helpers", "create_cute_tensor_for_fp8", "is_fp8_dtype",
           "print_latex", "print_latex_tv", "SmemAllocator", "SmemPartition", "get_smem_capacity_in_bytes",
           "HardwareInfo", "TensorMapManager", "TensorMapUpdateMode", "GroupedGemmTileSchedulerHelper", "GroupSearchResult", "GroupSearchState",
           "create_initial_search_state", "ClcDynamicPersistentTileScheduler", "ClcDynamicPersistentTileSchedulerParams",
           "GroupedWorkTileInfo", "StaticPersistentGroupTileScheduler", "StaticPersistentRuntimeTileScheduler",
           "PersistentTileSchedulerParams", "StaticPersistentTileScheduler", "WorkTileInfo", "hopper_helpers", "sm90",
           "TmemAllocator", "get_num_tmem_alloc_cols", "blackwell_helpers", "sm100", "compute_epilogue_tile_shape",
           "gemm"]
