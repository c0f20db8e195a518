"""`cutlass.utils.blackwell_helpers`: the SM100 helpers of NVIDIA's API. Those that need only the
shared-memory swizzle atoms (which UMMA shares with Hopper's GMMA: the same 128/64/32-byte K- and
MN-major atoms) are here; the tcgen05 / TMEM ones are not available yet, and reading one of them
is an AttributeError that says so (libraries whose common modules import this one still load)."""
from .. import cute
from ..cute.nvgpu import warpgroup
from ..cute.nvgpu.common import OperandMajorMode
from ..cute.nvgpu.warpgroup import SmemLayoutAtomKind

__all__ = ["get_smem_layout_atom_ab", "make_smem_layout"]


def get_smem_layout_atom_ab(major_mode, element_type, smem_shape_mn_k, *, loc=None, ip=None):
    """The widest swizzle atom (128, 64, 32 bytes, else the interleaved one) whose contiguous run
    divides the tile's extent along `major_mode` (OperandMajorMode.K: the K extent, else the MN
    extent) of `smem_shape_mn_k` = (MN, K)."""
    is_k = major_mode == OperandMajorMode.K
    major_size = smem_shape_mn_k[1] if is_k else smem_shape_mn_k[0]
    bits = major_size * element_type.width
    for run, (mn_kind, k_kind) in ((1024, (SmemLayoutAtomKind.MN_SW128, SmemLayoutAtomKind.K_SW128)),
                                   (512, (SmemLayoutAtomKind.MN_SW64, SmemLayoutAtomKind.K_SW64)),
                                   (256, (SmemLayoutAtomKind.MN_SW32, SmemLayoutAtomKind.K_SW32))):
        if bits % run == 0:
            return k_kind if is_k else mn_kind
    return SmemLayoutAtomKind.K_INTER if is_k else SmemLayoutAtomKind.MN_INTER


def make_smem_layout(leading_mode, smem_tile_shape, element_type, num_stages, *, loc=None, ip=None):
    """The staged (MN, K, stages) shared-memory layout of an operand tile `smem_tile_shape` = (MN, K)
    whose major mode is `leading_mode`: the widest swizzle atom that fits, tiled over the tile along
    the major mode first, then over the stages."""
    shape = cute.product_each(smem_tile_shape)
    atom = warpgroup.make_smem_layout_atom(get_smem_layout_atom_ab(leading_mode, element_type, shape), element_type)
    order = (0, 1, 2) if leading_mode == OperandMajorMode.K else (1, 0, 2)
    return cute.tile_to_shape(atom, cute.append(shape, num_stages), order=order)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"cutlass.utils.blackwell_helpers.{name}: the Blackwell (sm_100, tcgen05/TMEM) helpers "
                         "are not available in OpenCuTe yet")
