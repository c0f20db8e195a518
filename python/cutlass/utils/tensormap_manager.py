"""`cutlass.utils.TensorMapManager` / `TensorMapUpdateMode`: per-CTA TMA descriptors that a kernel
rewrites on the fly (grouped GEMM re-points its TMA atoms at each group's tensors), library code
over the `cute.nvgpu.cpasync` descriptor operations (`copy_tensormap`, `update_tma_descriptor`,
`fence_tma_desc_acquire`, `fence_tma_desc_release`, `cp_fence_tma_desc_release`).

A descriptor lives in global memory, one 128-byte slot per CTA and operand. GMEM mode rewrites
it there; SMEM mode rewrites a shared-memory copy and publishes it to the global slot with a
release fence. Either way the TMA unit reads the global slot after an acquire fence."""
import dataclasses
import enum

from .. import cute
from .._dsl.errors import DSLNotImplemented, DSLUserCodeError
from .._dsl.address_space import AddressSpace

_DESCRIPTOR_ALIGN = 128  # CUTLASS keeps tensor maps 128-byte aligned (TMA needs 64)


class TensorMapUpdateMode(enum.Enum):
    GMEM = enum.auto()  # update the descriptor in global memory
    SMEM = enum.auto()  # update a shared-memory copy, then publish it to global memory


def _cpasync(name):
    op = getattr(cute.nvgpu.cpasync, name, None)
    if op is None:
        raise DSLNotImplemented(f"TensorMapManager needs cute.nvgpu.cpasync.{name}, which this build lacks")
    return op


@dataclasses.dataclass(frozen=True)
class TensorMapManager:
    """Descriptor slots of `bytes_per_tensormap` bytes updated in `tensormap_update_mode`.

    A frozen dataclass, as libraries expect: quack subclasses it with `@dataclass(frozen=True)`
    and constructs the subclass with the two fields."""

    tensormap_update_mode: TensorMapUpdateMode
    bytes_per_tensormap: int

    def __post_init__(self):
        tensormap_update_mode, bytes_per_tensormap = self.tensormap_update_mode, self.bytes_per_tensormap
        if not isinstance(tensormap_update_mode, TensorMapUpdateMode):
            raise DSLUserCodeError(f"tensormap_update_mode must be a TensorMapUpdateMode, got "
                                   f"{tensormap_update_mode!r}", code="VALUE_INVALID")
        if isinstance(bytes_per_tensormap, bool) or not isinstance(bytes_per_tensormap, int) or \
                bytes_per_tensormap < 128 or bytes_per_tensormap % _DESCRIPTOR_ALIGN:
            raise DSLUserCodeError(f"bytes_per_tensormap must be a multiple of {_DESCRIPTOR_ALIGN} bytes (a TMA "
                                   f"descriptor is 128), got {bytes_per_tensormap!r}", code="VALUE_INVALID")

    def get_tensormap_ptr(self, ptr, address_space=AddressSpace.gmem):
        """`ptr` (the start of a descriptor slot) as a 128-byte aligned pointer in `address_space`."""
        if address_space not in (AddressSpace.gmem, AddressSpace.generic, AddressSpace.smem):
            raise DSLUserCodeError(f"a tensor map lives in gmem or smem (or a generic pointer), not {address_space}",
                                   code="VALUE_INVALID")
        return cute.make_ptr(ptr.dtype, ptr.toint(), address_space, assumed_align=_DESCRIPTOR_ALIGN)

    @cute.jit
    def init_tensormap_from_atom(self, copy_atom, dst_ptr, warp_id):
        """Warp `warp_id` copies the descriptor `copy_atom` was made with into `dst_ptr`."""
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == warp_id:
            with cute.arch.elect_one():
                _cpasync("copy_tensormap")(copy_atom, dst_ptr)
        cute.arch.sync_warp()

    @cute.jit
    def fence_tensormap_initialization(self):
        """Orders the copies of init_tensormap_from_atom before the updates that follow."""
        if self.tensormap_update_mode == TensorMapUpdateMode.GMEM:
            cute.arch.fence_acq_rel_cta()

    @cute.jit
    def fence_tensormap_update(self, tensormap_ptr):
        """Makes an updated descriptor visible to the TMA unit before the copies that use it."""
        _cpasync("fence_tma_desc_acquire")(tensormap_ptr)

    @cute.jit
    def update_tensormap(self, tensor_gmem, tma_copy_atom, tensormap_gmem_ptr, warp_id, tensormap_smem_ptr):
        """Warp `warp_id` re-points each descriptor at its new global tensor (tuples, one entry
        per descriptor); in SMEM mode through the shared-memory copies `tensormap_smem_ptr`."""
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == warp_id:
            if self.tensormap_update_mode == TensorMapUpdateMode.SMEM:
                for atom, tensor, sptr in zip(tma_copy_atom, tensor_gmem, tensormap_smem_ptr):
                    _cpasync("update_tma_descriptor")(atom, tensor, sptr)
                cute.arch.sync_warp()
                for gptr, sptr in zip(tensormap_gmem_ptr, tensormap_smem_ptr):
                    _cpasync("cp_fence_tma_desc_release")(gptr, sptr)
            else:
                for atom, tensor, gptr in zip(tma_copy_atom, tensor_gmem, tensormap_gmem_ptr):
                    _cpasync("update_tma_descriptor")(atom, tensor, gptr)
                cute.arch.sync_warp()
                _cpasync("fence_tma_desc_release")()
