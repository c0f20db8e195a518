"""`cute.prefetch(tma_atom, tile)`: the TMA prefetch of one tile of a TMA tensor into L2
(PTX cp.async.bulk.prefetch.tensor.L2, as NVIDIA's prefetching GEMMs issue it ahead of the loads).
A prefetch is only a cache hint: it changes no value a kernel can read. OpenCuTe checks its
arguments and does not issue the hint yet (no instruction on the GPU, nothing on the emulator)."""
from .._dsl.errors import user_error
from .nvgpu.cpasync import TmaCopyAtom


def prefetch(atom, src, *, loc=None, ip=None):
    if not isinstance(atom, TmaCopyAtom) or not atom._atom.op_name.startswith("CopyBulkTensorTileG2S"):
        raise user_error(f"cute.prefetch: expected the TMA load atom of make_tiled_tma_atom, got {atom!r}",
                         code="TYPE_MISMATCH")
    if not hasattr(src, "layout"):
        raise user_error(f"cute.prefetch: expected a tile of the atom's TMA tensor, got {src!r}", code="TYPE_MISMATCH")
