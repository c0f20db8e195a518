"""`cutlass.utils.blackwell_helpers` (also `cutlass.utils.sm100`): the Blackwell GEMM helpers. The
TMA-op, epilogue-tile and epilogue-layout helpers are in blackwell_epilogue; the tcgen05 MMA and
tensor-memory helpers that are not available yet are an AttributeError that says so."""
from .blackwell_epilogue import (cluster_shape_to_tma_atom_A, cluster_shape_to_tma_atom_B,  # noqa: F401
                                 cluster_shape_to_tma_atom_SFB, compute_epilogue_tile_shape, get_smem_store_op,
                                 make_smem_layout, make_smem_layout_epi)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"cutlass.utils.blackwell_helpers.{name}: the Blackwell (sm_100, tcgen05/TMEM) helpers "
                         "are not available in OpenCuTe yet")
