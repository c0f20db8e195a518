"""`cutlass.utils.blackwell_helpers` (imported as `sm100_utils` by NVIDIA's Blackwell examples; also
`cutlass.utils.sm100`): the tcgen05 tiled MMA of a data type, the staged shared-memory layouts of
its operands, and the tensor-memory load of the epilogue. Written with DSL operations; the
layouts and atoms they build are checked in C++. The TMA-op, epilogue-tile and epilogue-layout
helpers are in blackwell_epilogue."""
from .._dsl.numeric import (BFloat16, Float4E2M1FN, Float8E4M3FN, Float8E5M2, Float16, Float32, Int8, NumericMeta,
                            TFloat32, Uint8)
from .. import _core, cute
from ..cute.nvgpu import tcgen05
from ..cute.nvgpu.common import OperandMajorMode
from ..cute.nvgpu.tcgen05 import CtaGroup, OperandSource, SmemLayoutAtomKind
from ..cute.nvgpu.tcgen05 import get_tmem_copy_properties  # noqa: F401 - NVIDIA's module offers it here too
from .blackwell_epilogue import (cluster_shape_to_tma_atom_A, cluster_shape_to_tma_atom_B,  # noqa: F401
                                 cluster_shape_to_tma_atom_SFB, compute_epilogue_tile_shape, get_smem_store_op,
                                 make_smem_layout, make_smem_layout_epi)
from .blackwell_epilogue import _tmem_warps
from .sm120_blockscaled import (get_layoutSFA_TV, get_layoutSFB_TV, get_permutation_mnk,  # noqa: F401
                                partition_fragment_SFA, partition_fragment_SFB, sm120_get_smem_store_op)


def make_trivial_tiled_mma(ab_dtype, *args, a_source=None, loc=None, ip=None):
    """The tiled MMA of one tcgen05 atom of shape (mma_tiler_mn, K) for `ab_dtype`: f16/bf16 ->
    MmaF16BF16Op, Float32 (tf32) -> MmaTF32Op, Int8/Uint8 -> MmaI8Op, 8-bit floats -> MmaFP8Op.
    Takes (ab_dtype, a_leading_mode, b_leading_mode, acc_dtype, cta_group, mma_tiler_mn[, a_source])
    or, as NVIDIA's newer examples call it, (a_dtype, b_dtype, a_leading_mode, ...)."""
    if args and isinstance(args[0], NumericMeta):
        b_dtype, args = args[0], args[1:]
        if b_dtype is not ab_dtype:
            raise TypeError(f"make_trivial_tiled_mma: A and B of different types ({ab_dtype}, {b_dtype}) "
                            "are not supported yet")
    if len(args) not in (5, 6):
        raise TypeError("make_trivial_tiled_mma: expected (ab_dtype[, b_dtype], a_leading_mode, b_leading_mode, "
                        "acc_dtype, cta_group, mma_tiler_mn[, a_source])")
    a_leading_mode, b_leading_mode, acc_dtype, cta_group, mma_tiler_mn = args[:5]
    if len(args) == 6:
        a_source = args[5]
    if a_source is None:
        a_source = OperandSource.SMEM
    shape = tuple(mma_tiler_mn[:2])
    if ab_dtype in (Float16, BFloat16):
        op = tcgen05.MmaF16BF16Op(ab_dtype, acc_dtype, shape, cta_group, a_source, a_leading_mode, b_leading_mode)
    elif ab_dtype in (Float32, TFloat32):
        op = tcgen05.MmaTF32Op(shape, cta_group, a_source, a_leading_mode, b_leading_mode)
    elif ab_dtype in (Int8, Uint8):
        op = tcgen05.MmaI8Op(ab_dtype, shape, cta_group, a_source, a_leading_mode, b_leading_mode)
    elif ab_dtype in (Float8E4M3FN, Float8E5M2):
        op = tcgen05.MmaFP8Op(ab_dtype, acc_dtype, shape, cta_group, a_source, a_leading_mode, b_leading_mode)
    else:
        raise TypeError(f"make_trivial_tiled_mma: unsupported ab_dtype {ab_dtype}")
    return cute.make_tiled_mma(op)


def make_blockscaled_trivial_tiled_mma(a_dtype, *args, loc=None, ip=None, **kwargs):
    """The tiled MMA of one block-scaled tcgen05 atom of shape (mma_tiler_mn, K): 8-bit floats ->
    MmaMXF8Op (Float8E8M0FNU factors per 32); Float4E2M1FN -> MmaMXF4Op (sf_vec_size 32) or
    MmaMXF4NVF4Op (sf_vec_size 16, Float8E8M0FNU or Float8E4M3FN factors).
    Called (a_dtype, b_dtype, a_leading_mode, b_leading_mode, sf_dtype, sf_vec_size, cta_group,
    mma_tiler_mn[, a_source]), or in the older form with one type for A and B, (ab_dtype,
    a_leading_mode, b_leading_mode, sf_dtype, sf_vec_size, cta_group, mma_tiler_mn[, a_source])."""
    if args and isinstance(args[0], NumericMeta) or "b_dtype" in kwargs:
        names = ("b_dtype", "a_leading_mode", "b_leading_mode", "sf_dtype", "sf_vec_size", "cta_group", "mma_tiler_mn",
                 "a_source")
    else:
        names = ("a_leading_mode", "b_leading_mode", "sf_dtype", "sf_vec_size", "cta_group", "mma_tiler_mn", "a_source")
    if len(args) > len(names):
        raise TypeError(f"make_blockscaled_trivial_tiled_mma takes at most {len(names) + 1} positional arguments")
    params = dict(zip(names, args))
    for key, value in kwargs.items():
        if key in params or key not in names:
            raise TypeError(f"make_blockscaled_trivial_tiled_mma: unexpected or repeated argument {key!r}")
        params[key] = value
    params.setdefault("b_dtype", a_dtype)
    params.setdefault("a_source", OperandSource.SMEM)
    missing = [n for n in names if n not in params]
    if missing:
        raise TypeError(f"make_blockscaled_trivial_tiled_mma: missing argument(s) {', '.join(missing)}")
    b_dtype, a_leading_mode, b_leading_mode = params["b_dtype"], params["a_leading_mode"], params["b_leading_mode"]
    sf_dtype, sf_vec_size, cta_group = params["sf_dtype"], params["sf_vec_size"], params["cta_group"]
    a_source = params["a_source"]
    shape = tuple(params["mma_tiler_mn"][:2])
    if a_dtype in (Float8E4M3FN, Float8E5M2):
        if b_dtype not in (Float8E4M3FN, Float8E5M2):
            raise TypeError(f"make_blockscaled_trivial_tiled_mma: B must be an 8-bit float with A {a_dtype}, "
                            f"got {b_dtype}")
        op = tcgen05.MmaMXF8Op(a_dtype, shape, cta_group, a_source, a_leading_mode, b_leading_mode, b_dtype=b_dtype)
    elif a_dtype is Float4E2M1FN and b_dtype is Float4E2M1FN:
        if sf_vec_size == 32:
            op = tcgen05.MmaMXF4Op(shape, cta_group, a_source)
        elif sf_vec_size == 16:
            op = tcgen05.MmaMXF4NVF4Op(sf_dtype, shape, cta_group, a_source)
        else:
            raise ValueError(f"make_blockscaled_trivial_tiled_mma: sf_vec_size must be 16 or 32, got {sf_vec_size}")
    else:
        raise TypeError(f"make_blockscaled_trivial_tiled_mma: unsupported A / B types {a_dtype}, {b_dtype}")
    if op.sf_dtype is not sf_dtype or op.sf_vec_size != sf_vec_size:
        raise ValueError(f"make_blockscaled_trivial_tiled_mma: {type(op).__name__} takes {op.sf_dtype} factors per "
                         f"{op.sf_vec_size} elements, got {sf_dtype} per {sf_vec_size}")
    return cute.make_tiled_mma(op)


def get_smem_layout_atom_ab(major_mode, element_type, smem_shape_mn_k, *, loc=None, ip=None):
    """The widest swizzle atom (128, 64 or 32 bytes, else none) whose row the operand's contiguous
    extent fills: K for K-major operands, M/N for MN-major ones."""
    k_major = major_mode == OperandMajorMode.K
    extent = cute.size(smem_shape_mn_k[1] if k_major else smem_shape_mn_k[0])
    row_bytes = extent * element_type.width // 8
    for width, kind in ((128, "SW128"), (64, "SW64"), (32, "SW32")):
        if row_bytes % width == 0:
            return SmemLayoutAtomKind[("K_" if k_major else "MN_") + kind]
    return SmemLayoutAtomKind.K_INTER if k_major else SmemLayoutAtomKind.MN_INTER


def make_smem_layout_atom(kind, element_type, *, loc=None, ip=None):
    """The canonical swizzle atom of `kind` for `element_type` (as warpgroup.make_smem_layout_atom)."""
    return tcgen05.make_smem_layout_atom(kind, element_type)


def _staged_operand_layout(tiled_mma, mma_tiler_mnk, dtype, num_stages, operand, is_k_major=None):
    if is_k_major is None:
        atom = tiled_mma._atom_copy()
        code = atom._a_major if operand == 0 else atom._b_major
        is_k_major = code == int(_core.cute.OperandMajor.K)
    major = OperandMajorMode.K if is_k_major else OperandMajorMode.MN
    if operand == 0:
        shape = tiled_mma.partition_shape_A(cute.dice(mma_tiler_mnk, (1, None, 1)))
    else:
        shape = tiled_mma.partition_shape_B(cute.dice(mma_tiler_mnk, (None, 1, 1)))
    mn_k = (cute.size(shape[0][0]) * cute.size(shape[1]), cute.size(shape[0][1]) * cute.size(shape[2]))
    layout_atom = make_smem_layout_atom(get_smem_layout_atom_ab(major, dtype, mn_k), dtype)
    order = (0, 1, 2) if major == OperandMajorMode.K else (1, 0, 2)
    return tcgen05.tile_to_mma_shape(layout_atom, cute.append(shape, num_stages), order=order)


def make_smem_layout_a(tiled_mma, mma_tiler_mnk, a_dtype, num_stages, *, is_k_major=None, loc=None, ip=None):
    """A's staged shared-memory layout ((MMA_M, MMA_K), M_reps, K_reps, stages): the widest swizzle
    atom of A's major mode tiled over the CTA's part of the MMA tile. `is_k_major` overrides the
    MMA's major mode (an operand staged in shared memory MN-major and converted into tensor memory,
    which a TMEM-sourced A must be K-major in)."""
    return _staged_operand_layout(tiled_mma, mma_tiler_mnk, a_dtype, num_stages, 0, is_k_major)


def make_smem_layout_b(tiled_mma, mma_tiler_mnk, b_dtype, num_stages, *, is_k_major=None, loc=None, ip=None):
    """B's staged shared-memory layout ((MMA_N, MMA_K), N_reps, K_reps, stages); `is_k_major` as for A."""
    return _staged_operand_layout(tiled_mma, mma_tiler_mnk, b_dtype, num_stages, 1, is_k_major)


def get_tmem_load_op(cta_tile_shape_mnk, layout_d, elem_ty_d, elem_ty_acc, epi_tile, use_2cta_instrs, *, loc=None,
                     ip=None):
    """The tensor-memory -> register copy atom of the epilogue: tcgen05.ld 32x32b (each thread one
    lane of the accumulator, the rows of the CTA tile spread over the four warps), repeated over
    the columns one warp reads (up to x128; 32-bit accumulators): the epilogue tile's, or half of
    them where a 2-CTA MMA of 64 rows per CTA splits the columns between two pairs of warps (CUTLASS's
    sm100_get_tmem_load_op over the epilogue tile divided by the warps)."""
    if elem_ty_acc.width != 32:
        raise TypeError(f"get_tmem_load_op: expected 32-bit accumulators, got {elem_ty_acc}")
    cols = cute.size(epi_tile[1]) if isinstance(epi_tile, (tuple, list)) else cute.size(epi_tile, mode=[1])
    cols //= _tmem_warps(cute.size(cta_tile_shape_mnk, mode=[0]), use_2cta_instrs)[1]
    rep = 1
    while rep * 2 <= min(cols, 128) and cols % (rep * 2) == 0:
        rep *= 2
    return cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition(rep)), elem_ty_acc)


__all__ = ["make_trivial_tiled_mma", "make_blockscaled_trivial_tiled_mma", "get_smem_layout_atom_ab", "make_smem_layout_atom", "make_smem_layout_a",
           "make_smem_layout_b", "get_tmem_load_op", "CtaGroup", "cluster_shape_to_tma_atom_A",
           "cluster_shape_to_tma_atom_B", "cluster_shape_to_tma_atom_SFB", "compute_epilogue_tile_shape",
           "make_smem_layout", "make_smem_layout_epi", "get_smem_store_op"]
