"""`cutlass._mlir.dialects.cute_nvgpu`: the CuTe NVGPU dialect's builders that NVIDIA's examples call
directly. OpenCuTe's values stand for themselves (`tensor.value` is the tensor), so each builder
forwards to the DSL function that makes the same thing.

atom_make_non_exec_tiled_tma_load(gmem, smem_layout, cta_v_map, op, num_multicast): a TMA load atom
copying the box of `gmem` that `cta_v_map` maps (CuTe's tile coordinate -> gmem coordinate map,
composition(make_identity_layout(gmem.shape), tile)) into `smem_layout`; returns (atom, TMA tensor)
as make_tiled_tma_atom does. NVIDIA's MLA decode passes the first mode of a divide of its tile into
pages, and of its smem layout: one mode holding the box's modes, taken here as the box."""
from ...cute import layout as _layout
from ...cute.nvgpu import cpasync as _cpasync


def _box(x):
    """`x` itself, or the modes of its one mode when that is all it has (the first mode of a divide)."""
    shape = x.shape
    if isinstance(shape, tuple) and len(shape) == 1 and isinstance(shape[0], tuple):
        return _layout.get(x, mode=[0])
    return x


def atom_make_non_exec_tiled_tma_load(gmem, smem_layout, cta_v_map, op, num_multicast=1, *, loc=None, ip=None):
    info = _cpasync.make_tiled_tma_atom(op, gmem, _box(smem_layout), _box(cta_v_map), num_multicast)
    return info.atom, info.tma_tensor
