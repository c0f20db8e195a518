"""`cutlass.utils.hopper_helpers` (imported as `sm90_utils` by NVIDIA's Hopper examples; also
`cutlass.utils.sm90`): library code over the DSL that picks warpgroup MMAs, shared-memory layout
atoms and epilogue tiles for SM90 GEMMs. Everything here composes DSL operations; the semantics
(atoms, swizzles, descriptors) are in C++."""
from .._dsl.numeric import BFloat16, Float16, Float8E4M3FN, Float8E5M2, Int8, Numeric, Uint8
from .. import cute
from ..cute.nvgpu import warp, warpgroup
from ..cute.nvgpu.common import OperandMajorMode
from ..cute.nvgpu.warpgroup import OperandSource, SmemLayoutAtomKind
from ..cute.tensor import CopyUniversalOp
from .layout import LayoutEnum

_FP8 = (Float8E4M3FN, Float8E5M2)
_INT8 = (Int8, Uint8)


def make_trivial_tiled_mma(a_dtype, b_dtype, a_leading_mode, b_leading_mode, acc_dtype, atom_layout_mnk, tiler_mn,
                           a_source=OperandSource.SMEM, *, loc=None, ip=None):
    """A warpgroup TiledMma: MmaF16BF16Op for Float16/BFloat16 (K = 16), MmaF8Op for 8-bit floats or
    MmaI8Op for 8-bit integers (K = 32), with instruction shape (*tiler_mn, K), tiled by `atom_layout_mnk`."""
    if a_dtype in (Float16, BFloat16):
        if a_dtype != b_dtype:
            raise TypeError(f"make_trivial_tiled_mma: a_dtype {a_dtype.__name__} and b_dtype {b_dtype.__name__} differ")
        op = warpgroup.MmaF16BF16Op(a_dtype, acc_dtype, (*tiler_mn, 16), a_source, a_leading_mode, b_leading_mode)
    elif a_dtype in _FP8 and b_dtype in _FP8:
        op = warpgroup.MmaF8Op(a_dtype, b_dtype, acc_dtype, (*tiler_mn, 32), a_source, a_leading_mode, b_leading_mode)
    elif a_dtype in _INT8 and b_dtype in _INT8:
        op = warpgroup.MmaI8Op(a_dtype, b_dtype, acc_dtype, (*tiler_mn, 32), a_source, a_leading_mode, b_leading_mode)
    else:
        raise TypeError(f"make_trivial_tiled_mma: unsupported a_dtype/b_dtype {getattr(a_dtype, '__name__', a_dtype)}"
                        f"/{getattr(b_dtype, '__name__', b_dtype)}")
    return cute.make_tiled_mma(cute.make_mma_atom(op), atom_layout_mnk)


def get_smem_layout_atom(layout, element_type, major_mode_size, *, loc=None, ip=None):
    """The widest swizzle atom (128, 64, 32 bytes, else none) whose contiguous run divides
    `major_mode_size` elements, MN- or K-major as `layout.sm90_mma_major_mode()` says."""
    assert major_mode_size % 8 == 0, f"major_mode_size must be a multiple of 8, got {major_mode_size}"
    bits = major_mode_size * element_type.width
    mn = layout.sm90_mma_major_mode() == OperandMajorMode.MN
    for run, (mn_kind, k_kind) in ((1024, (SmemLayoutAtomKind.MN_SW128, SmemLayoutAtomKind.K_SW128)),
                                   (512, (SmemLayoutAtomKind.MN_SW64, SmemLayoutAtomKind.K_SW64)),
                                   (256, (SmemLayoutAtomKind.MN_SW32, SmemLayoutAtomKind.K_SW32))):
        if bits % run == 0:
            return mn_kind if mn else k_kind
    return SmemLayoutAtomKind.MN_INTER if mn else SmemLayoutAtomKind.K_INTER


def _staged_operand_layout(layout, shape_mnk, dtype, num_stages, mn_mode):
    is_k_major = layout.sm90_mma_major_mode() == OperandMajorMode.K
    shape = (shape_mnk[mn_mode], shape_mnk[2])
    major_mode_size = shape[1] if is_k_major else shape[0]
    atom = warpgroup.make_smem_layout_atom(get_smem_layout_atom(layout, dtype, major_mode_size), dtype)
    return cute.tile_to_shape(atom, cute.append(shape, num_stages), order=(0, 1, 2) if is_k_major else (1, 0, 2))


def make_smem_layout_a(a_layout, mma_tiler_mnk, a_dtype, num_stages, *, loc=None, ip=None):
    """The staged (M, K, stages) shared-memory layout of A: the swizzle atom for A's major mode
    tiled over the MMA tile."""
    return _staged_operand_layout(a_layout, mma_tiler_mnk, a_dtype, num_stages, 0)


def make_smem_layout_b(b_layout, mma_tiler_mnk, b_dtype, num_stages, *, loc=None, ip=None):
    """The staged (N, K, stages) shared-memory layout of B."""
    return _staged_operand_layout(b_layout, mma_tiler_mnk, b_dtype, num_stages, 1)


def make_smem_layout_epi(epi_dtype, epi_layout, epi_tile, epi_stage, smem_trg_shape=None, smem_order=None, *,
                         loc=None, ip=None):
    """The staged (epi_M, epi_N, stages) shared-memory layout of the epilogue tile."""
    shape = cute.product_each(cute.shape(epi_tile))
    major_mode_size = shape[1] if epi_layout.is_n_major_c() else shape[0]
    atom = warpgroup.make_smem_layout_atom(get_smem_layout_atom(epi_layout, epi_dtype, major_mode_size), epi_dtype)
    trg = cute.append(shape, epi_stage) if smem_trg_shape is None else smem_trg_shape
    order = smem_order if smem_order is not None else ((1, 0, 2) if epi_layout.is_m_major_c() else (0, 1, 2))
    return cute.tile_to_shape(atom, trg, order=order)


def get_smem_store_op(layout_d, elem_ty_d, elem_ty_acc, *, loc=None, ip=None):
    """The register -> shared-memory copy atom of the epilogue: stmatrix (x4) for 16-bit D,
    else a universal copy."""
    if elem_ty_d.width == 16:
        return cute.make_copy_atom(warp.StMatrix8x8x16bOp(layout_d.is_m_major_c(), 4), elem_ty_d)
    return cute.make_copy_atom(CopyUniversalOp(), elem_ty_d)


sm90_get_smem_store_op = get_smem_store_op


def compute_tile_shape_or_override(tile_shape_mnk, element_type, is_cooperative=False, epi_tile_override=None, *,
                                   loc=None, ip=None):
    """The epilogue tile: the override when given; (min(128, M), min(32, N)) for cooperative
    kernels; else (min(64, M), min(64 for 8-bit else 32, N))."""
    if epi_tile_override is not None:
        return epi_tile_override
    m, n = cute.size(tile_shape_mnk, mode=[0]), cute.size(tile_shape_mnk, mode=[1])
    if is_cooperative:
        return (min(128, m), min(32, n))
    return (min(64, m), min(64 if element_type.width == 8 else 32, n))


__all__ = ["make_trivial_tiled_mma", "get_smem_layout_atom", "make_smem_layout_a", "make_smem_layout_b",
           "make_smem_layout_epi", "get_smem_store_op", "sm90_get_smem_store_op", "compute_tile_shape_or_override"]
